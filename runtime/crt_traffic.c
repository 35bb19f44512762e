/* runtime/crt_traffic.c: what one inference of an artifact launches and
 * moves between its kernels (crt.h, crt_artifact_traffic). */
#include <string.h>

#include "runtime/crt.h"

enum { DISTINCT_WINDOW = 64 }; /* arguments compared for repeats: bounded work on a hostile step */

/* bytes of buffer b as a launch or fill touches it: its own size (a view
 * counts its window), weights excluded by the caller */
static void add_bytes(const crt_artifact *a, int b, crt_traffic *t) {
  const crt_buffer *x = &a->buffers[b];
  t->act_bytes += x->bytes;
  if (x->dtype == COV_F32) t->f32_bytes += x->bytes;
  else if (cov_dtype_size(x->dtype) == 2) t->half_bytes += x->bytes;
}

static int is_weight(const crt_artifact *a, int b) {
  return a->buffers[crt_buffer_root(a, b)].kind == CRT_BUF_WEIGHT;
}

void crt_artifact_traffic(const crt_artifact *a, crt_traffic *t) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < a->n_steps; i++) {
    const crt_step *s = &a->steps[i];
    if (s->op == CRT_STEP_NPU) {
      t->npu++;
      continue;
    }
    if (s->op == CRT_STEP_FILL) {
      t->fills++;
      if (!is_weight(a, s->buffer)) t->act_bytes += s->bytes, t->fill_bytes += s->bytes;
      continue;
    }
    if (s->op != CRT_STEP_LAUNCH) continue; /* host steps and control: no kernel */
    t->launches++;
    for (int k = 0; k < s->n_args; k++) {
      const crt_arg *x = &s->args[k];
      if ((x->kind != CRT_ARG_BUFFER && x->kind != CRT_ARG_TMAP) || is_weight(a, x->buffer)) continue;
      int seen = 0;
      for (int j = k > DISTINCT_WINDOW ? k - DISTINCT_WINDOW : 0; j < k && !seen; j++)
        seen = (s->args[j].kind == CRT_ARG_BUFFER || s->args[j].kind == CRT_ARG_TMAP) && s->args[j].buffer == x->buffer;
      if (!seen) add_bytes(a, x->buffer, t);
    }
  }
}

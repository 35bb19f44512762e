/* backends/gpu/gpu_mpad.c: which convolutions of a compiled model may take
 * the channels-last kernel with zero-filled channel tails
 * (gpu_problem.exact_channels false: C or the output channels not a
 * multiple of the tiles, backends/gpu/README.md "Channels-last
 * convolutions").
 *
 * Such a kernel reads and writes NHWC f16 like any channels-last one, so
 * where it sits between kernels that take NCHW f32 it adds a conversion on
 * each side and rounds one more activation to f16. It pays in an MLP: an
 * ungrouped convolution widening the channels that hands its activation
 * straight to one narrowing them again, as ConvNeXt's fc1 (40 -> 160
 * channels, GELU) and fc2 (160 -> 40): the pair passes its widest tensor
 * as one NHWC f16 buffer instead of an f32 NCHW result, its f16 operand
 * copy and a gathered read. Elsewhere (an expansion feeding a depthwise
 * conv, a projection feeding the next block's expansion, where the tensor
 * between is the narrow one) the model compiler keeps the tiles' exact
 * channels. */
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* Whether step s is an ungrouped matrix convolution (not a transform). */
static int is_conv(const gpu_mstep *s) {
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_MATRIX && !s->pre && s->plan.prob.kind == GPU_OP_CONV2D &&
         s->plan.prob.groups == 1;
}

/* The only step other than `skip` that uses buffer b, or -1. */
static int only_user(const gpu_model_plan *p, int b, int skip) {
  int who = -1, n = 0;
  for (int j = 0; j < p->n_steps && n < 2; j++) {
    const gpu_mstep *s = &p->steps[j];
    int use = s->op == GPU_STEP_FILL && s->fill_buf == b;
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) use |= s->args[k] == b;
    if (use && j != skip) n++, who = j;
  }
  return n == 1 ? who : -1;
}

/* Whether step s is the whole-buffer f16 operand copy of f32 buffer y
 * (as gpu_ms_f16_copy_from finds them). */
static int f16_copy(const gpu_model_plan *p, const gpu_mstep *s, int y) {
  const gpu_ew *e = &s->ew;
  return s->op == GPU_STEP_LAUNCH && s->kkind == GPU_KERNEL_EW && s->args[0] == y && e->kind == GPU_EW_COPY &&
         e->out_dtype == COV_F16 && e->in_dtype != COV_F16 && !e->run && !e->s0 && !e->d0 && !e->bias && !e->also &&
         !e->mul_c && e->post == GPU_FN_NONE && e->n == p->bufs[y].numel;
}

/* The convolution that is step j (or follows j, its NHWC transform), -1
 * if none. */
static int conv_of(const gpu_model_plan *p, int j) {
  if (j < 0) return -1;
  if (is_conv(&p->steps[j])) return j;
  return p->steps[j].pre && j + 1 < p->n_steps && is_conv(&p->steps[j + 1]) ? j + 1 : -1;
}

/* Whether f32 buffer y, written by conv w, goes whole and only through one
 * f16 operand copy into one convolution `c` (-1: any), w widening the
 * channels and that one narrowing them again (an MLP's hidden activation,
 * the widest tensor there); returns the copy, else -1. */
static int hand_off(const gpu_model_plan *p, int w, int y, int c) {
  int copy = only_user(p, y, w);
  if (copy < 0 || !f16_copy(p, &p->steps[copy], y) || p->steps[copy].args[2] < 0) return -1;
  int to = conv_of(p, only_user(p, p->steps[copy].args[2], copy));
  if (to < 0 || (c >= 0 && to != c)) return -1;
  const gpu_problem *a = &p->steps[w].plan.prob, *b = &p->steps[to].plan.prob;
  return a->ck > a->cc && b->ck < b->cc ? copy : -1;
}

int gpu_model_pad_link(const gpu_model_plan *p, int i) {
  const gpu_mstep *s = &p->steps[i];
  if (!is_conv(s)) return 0;
  /* forward: this conv's f32 result is the next conv's operand copy's
   * only source */
  if (s->args[2] >= 0 && hand_off(p, i, s->args[2], -1) >= 0) return 1;
  /* backward: this conv's operand is the f16 copy of a conv's result that
   * nothing else reads */
  int in = i > 0 && p->steps[i - 1].pre ? p->steps[i - 1].args[0] : s->args[0];
  for (int c = 0; in >= 0 && c < i; c++) {
    const gpu_mstep *x = &p->steps[c];
    if (x->args[2] != in || x->args[0] < 0 || !f16_copy(p, x, x->args[0])) continue;
    int src = x->args[0];
    for (int w = c - 1; src >= 0 && w >= 0; w--)
      if (p->steps[w].op == GPU_STEP_LAUNCH && gpu_ms_writes(&p->steps[w], src))
        return is_conv(&p->steps[w]) && hand_off(p, w, src, i) == c;
  }
  return 0;
}

/* Wide output channels read only by a global average pool (a classifier
 * head): at least GPU_PAD_WIDE_N of them, so that the last N tile's
 * zero-filled columns are at most 56 of 512 or more (11%; SqueezeNet's
 * 1000 channels in 64-wide tiles: 24 of 1024, 2.3%), where exact tiles
 * would have to be as narrow as the largest power-of-two multiple of 8
 * dividing N (8 for 1000: B chunks that no tile of 4 waves divides); the
 * input channels whole 128-byte K tiles (no tail there: ShuffleNet's
 * conv5, 464 channels, keeps its NCHW kernel and fused operand). The
 * pool reads the NHWC f16 result (gpu_pool.h); elsewhere such a conv
 * between NCHW kernels would add conversions (an expansion feeding a
 * depthwise conv). */
enum { GPU_PAD_WIDE_N = 512 };
int gpu_model_pad_wide(const gpu_model_plan *p, int i) {
  const gpu_mstep *s = &p->steps[i];
  if (!is_conv(s) || s->plan.prob.ck < GPU_PAD_WIDE_N || s->plan.prob.cc % 64 || s->args[2] < 0) return 0;
  int r = only_user(p, s->args[2], i);
  if (r < 0) return 0;
  /* the pool's call sees the conv's images and channels (else it reads
   * the NCHW form: gpu_mlayout.c pool_kernel) */
  const gpu_mstep *u = &p->steps[r];
  const gpu_mbuf *y = &p->bufs[s->args[2]];
  if (u->op != GPU_STEP_LAUNCH || u->kkind != GPU_KERNEL_EW || u->ew.kind != GPU_EW_CODELET) return 0;
  const gpu_cdl_call *k = &u->ew.cdl;
  return !strcmp(cov_codelet_name(k->c), "global_avgpool") && k->n_in == 1 && k->in_rank[0] == 4 && y->rank == 4 &&
         k->in_shape[0][0] == y->shape[0] && k->in_shape[0][1] == y->shape[1] &&
         k->in_shape[0][2] * k->in_shape[0][3] == y->shape[2] * y->shape[3];
}

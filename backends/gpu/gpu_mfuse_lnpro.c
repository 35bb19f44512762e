/* backends/gpu/gpu_mfuse_lnpro.c: a LayerNorm over rows joined to the
 * matrix kernels reading its result (gpu_ms_fuse_ln_prologue, called by
 * gpu_model_fuse after gpu_mfuse_ln.c has made each LayerNorm one
 * GPU_EW_LNORM launch).
 *
 * A pre-norm transformer layer normalises its residual stream x twice, each
 * time only for the next matmul (the QKV projection, the MLP's first layer):
 * the LayerNorm launch writes the f16 operand h that the matmul alone
 * reads. Where every reader of h is a matmul whose kernel can normalise its
 * A rows as it loads them (prob.a_lnorm, gpu_lower_aln.c: guarded element
 * copies, K = the norm's width up to GPU_ALN_MAX_K, 16-bit), each reads x
 * instead, with the norm's gamma, beta (arguments 7, 8) and epsilon, and
 * the LayerNorm launch goes. x must then stay unchanged from the LayerNorm
 * to its last reader; it does in a transformer (the next residual add
 * writes a new buffer), and it is still the later residual add's input. A
 * LayerNorm whose f32 result is read too (a post-norm layer: the result is
 * the residual, `dual`), whose rows are stored permuted (`rq`) or over the
 * channels of an image (W > 1) stays a launch. */
#include <string.h>

#include "backends/gpu/gpu_msteps.h"

/* the statistics' 8 bytes a row added to a plan's shared memory stay
 * within the least any GPU target offers a workgroup (the plan pass does
 * not see the target's capacity) */
enum { GPU_ALN_MAX_SHARED = 64 * 1024 };

/* Whether step j reads h as a matmul's A operand that it can normalise:
 * rows x K of the norm (n rows of c); x not its residual addend. */
static int takes_rows(const gpu_mstep *s, int h, int x, int64_t n, int64_t c) {
  const gpu_plan *pl = &s->plan;
  if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre || pl->prob.kind != GPU_OP_MATMUL ||
      pl->prob.in_dtype != COV_F16 || pl->prob.a_lnorm || s->args[0] != h || pl->G * pl->M != n || pl->K != c ||
      s->n_args > 7)
    return 0;
  for (int k = 1; k < s->n_args; k++)
    if (s->args[k] == h || s->args[k] == x) return 0;
  gpu_plan q = *pl;
  q.prob.a_lnorm = true;
  uint64_t need = gpu_plan_shared_need(&q, 2);
  return gpu_aln_ok(&q) && (need <= GPU_ALN_MAX_SHARED || need <= pl->shared_bytes);
}

/* Matmul step s reading x through the norm of step f. */
static void join(gpu_mstep *s, const gpu_mstep *f) {
  s->plan.prob.a_lnorm = true, s->plan.prob.a_ln_eps = f->ew.post0;
  s->plan.shared_bytes = (unsigned)gpu_plan_shared_need(&s->plan, 2);
  s->shared_bytes = s->plan.shared_bytes;
  for (int k = s->n_args; k < 7; k++) s->args[k] = -1;
  s->args[0] = f->args[0], s->args[7] = f->args[1], s->args[8] = f->args[3], s->n_args = 9;
  size_t n = strlen(s->kernel);
  if (n + 3 < sizeof s->kernel) memcpy(s->kernel + n, "_ln", 4);
}

/* Step L, a row LayerNorm writing only the f16 operand of matmuls that can
 * take it, joined to them; returns whether it was. */
static int fuse_at(gpu_model_plan *p, char *del, int L) {
  const gpu_mstep *f = &p->steps[L];
  const gpu_ew *e = &f->ew;
  if (f->op != GPU_STEP_LAUNCH || f->kkind != GPU_KERNEL_EW || e->kind != GPU_EW_LNORM || e->W != 1 ||
      e->out_dtype != COV_F16 || e->dual || e->also || e->rq || f->n_args != 4)
    return 0;
  int x = f->args[0], h = f->args[2], readers = 0, last = -1;
  if (x < 0 || h < 0 || f->args[1] < 0 || f->args[3] < 0 || p->bufs[x].dtype != COV_F32 ||
      p->bufs[x].numel != e->N * e->C || p->bufs[h].kind != GPU_BUF_INTERMEDIATE || p->bufs[h].dtype != COV_F16 ||
      p->bufs[h].numel != e->N * e->C)
    return 0;
  for (int j = 0; j < p->n_steps; j++) {
    if (del[j] || j == L) continue;
    const gpu_mstep *s = &p->steps[j];
    int uses = gpu_ms_writes(s, h);
    for (int k = 0; s->op == GPU_STEP_LAUNCH && k < s->n_args; k++) uses |= s->args[k] == h;
    if (!uses) continue;
    if (j < L || !takes_rows(s, h, x, e->N, e->C)) return 0;
    readers++, last = j;
  }
  for (int j = L + 1; j <= last; j++) /* x unchanged until the last reader */
    if (!del[j] && gpu_ms_writes(&p->steps[j], x)) return 0;
  if (!readers) return 0;
  for (int j = L + 1; j <= last; j++)
    if (!del[j] && p->steps[j].op == GPU_STEP_LAUNCH && p->steps[j].kkind == GPU_KERNEL_MATRIX &&
        p->steps[j].args[0] == h)
      join(&p->steps[j], f);
  del[L] = 1;
  return 1;
}

int gpu_ms_fuse_ln_prologue(gpu_model_plan *p, char *del) {
  int any = 0;
  for (int L = 0; L < p->n_steps; L++) any |= !del[L] && fuse_at(p, del, L);
  return any;
}

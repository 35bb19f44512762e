/* mapper/map_bias.c: a bias preloaded into the array's accumulators.
 *
 * A convolution's epilogue starts with r0 = add(r0, b) for a per-channel
 * vector b. On the SIMD unit that add reads the whole output tile and the
 * broadcast vector and writes the tile again: on mobilenet_v2's expansion
 * layers the epilogue, not the array, bounds the time. A systolic array
 * whose ACG gives it an input path of its own for such a vector (npu-16x16:
 * dram -> bbuf -> pe_array, "bias, preloaded into the accumulators") can
 * start each accumulation from b instead of 0 (the ISA's gemm `bias` flag:
 * C = bias + A x B, the bias a row vector over the columns, the same for
 * every streamed row). The rewrite drops the add (first, or second after a
 * max pool, map_bind_epilogue's pool_first) from the epilogue, marks
 * the problem (map_problem.bias_init) and gives b a path to the array; the
 * search then keeps only schedules whose GEMMs stream rows of one bias
 * (map_bias_fits, checked in map_build), and the cost model compares them
 * with the original's. The sum is the same, added first instead of last:
 * f32 rounding differs by an ulp. */
#include <stdlib.h>

#include "mapper/map_internal.h"

int map_bias_out_dim(const map_problem *p, int v) {
  const map_operand *b = &p->operands[v], *y = &p->operands[p->output];
  if (b->acc.rank != 1) return -1;
  for (int d = 0; d < y->acc.rank; d++) {
    bool same = y->acc.off[d] == b->acc.off[0] && y->shape[d] == b->shape[0];
    for (int l = 0; l < p->n_loops && same; l++) same = y->acc.coef[d][l] == b->acc.coef[0][l];
    if (same) return d;
  }
  return -1;
}

bool map_bias_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out) {
  const map_problem *p = &proto->prob;
  const cov_acg *g = t->acg;
  if (p->kind != MAP_MAIN_MAC || p->bias_init || proto->n_vops < 1 || t->node < g->n_storage ||
      g->compute[t->node - g->n_storage].kind != ACG_SYSTOLIC || map_output_stationary(g, t->node) ||
      !cov_dtype_is_float(t->acc_dtype))
    return false;
  /* the add is first, or right after a max pool that map_bind_epilogue
   * moved ahead of it (max(x + b) over a window is max(x) + b for b the
   * same over the window) */
  int bi = proto->vops[0].kind == MAP_VOP_POOL && proto->vops[0].op == COV_OP_MAX && proto->n_vops > 1;
  const map_vop *v0 = &proto->vops[bi];
  if (v0->kind != MAP_VOP_MAP || v0->op != COV_OP_ADD || v0->dst != 0 || v0->a.kind != MAP_VS_REG ||
      v0->a.index != 0 || v0->b.kind != MAP_VS_VEC || (v0->din && v0->din != COV_F32) ||
      (v0->dout && v0->dout != COV_F32))
    return false;
  int v = v0->b.index;
  if (v <= p->output || v >= p->n_operands || p->operands[v].dtype != COV_F32 || map_bias_out_dim(p, v) < 0)
    return false;
  if (bi)
    for (int w = 0; w < 2; w++)
      if (map_operand_depends(&p->operands[v], proto->vops[0].pool_loop[w])) return false;
  /* no later op reads the vector: it will not be on the SIMD unit's side */
  for (int i = bi + 1; i < proto->n_vops; i++) {
    const map_vop *vo = &proto->vops[i];
    if ((vo->a.kind == MAP_VS_VEC && vo->a.index == v) || (vo->b.kind == MAP_VS_VEC && vo->b.index == v))
      return false;
  }
  out->prob.bias_init = true;
  out->prob.bias_op = v;
  for (int i = bi + 1; i < proto->n_vops; i++) out->vops[i - 1] = proto->vops[i];
  out->n_vops = proto->n_vops - 1;
  map_fold_relu_into_pool(out);
  return true;
}

bool map_bias_fits(const map_schedule *s) {
  const map_problem *p = &s->prob;
  if (!p->bias_init) return true;
  map_gemm_plan gp;
  map_gemm_plan_make(s, &gp);
  const map_operand *b = &p->operands[p->bias_op];
  if (gp.output_stationary) return false;
  for (int k = 0; k < 2; k++) {
    int i = k ? gp.ml2 : gp.ml;
    if (i >= 0 && map_operand_depends(b, s->sloops[i].loop)) return false;
  }
  return true;
}

/* A rewrite followed by the bias one (the padded or depthwise problem with
 * its bias preloaded). */
static bool then_bias(const map_schedule *proto, const map_target *t, map_schedule *out,
                      map_rewrite_fn first) {
  map_schedule *mid = malloc(sizeof *mid);
  if (!mid) return false; /* an optimisation: the other candidates stand */
  *mid = *proto;
  bool ok = first(proto, t, mid);
  if (ok) {
    *out = *mid;
    ok = map_bias_rewrite(mid, t, out);
  }
  free(mid);
  return ok;
}

bool map_pad_bias_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out) {
  return then_bias(proto, t, out, map_pad_rewrite);
}

bool map_dw_bias_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out) {
  return then_bias(proto, t, out, map_dw_rewrite);
}

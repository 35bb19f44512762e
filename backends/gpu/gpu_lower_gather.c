/* backends/gpu/gpu_lower_gather.c: the row gather kernel (GPU_EW_ROWS): an
 * embedding lookup, rows of a [V, D] f32 table at run-time i64 indices
 * (the codelet gather_rows, codelets/gather.cdl, whose loop nest compares
 * every index with every row: O(V) per element, where this kernel loads the
 * one row), or a Gather on any axis (gather_axis: x seen as [A, V, D], N
 * indices, y [A, N, D]; e->N > 0). One thread per output element
 * i = (a*N + n)*D + d: the index ids[n], plus V when negative (ONNX
 * Gather), picks row r of block a; an index out of range stores 0 and
 * reads nothing (its load is of row 0), as the codelet's comparisons pick
 * no row; an addend (e->bias) is added to every element. gpu_gather_emulate
 * is the same meaning in C for the CPU emulation of a compiled model. */
#include "backends/gpu/gpu_gather.h"
#include "backends/gpu/gpu_ir.h"

void gpu_lower_rows(gpu_gen *g, const gpu_ew *e, LLVMValueRef i, LLVMValueRef x, LLVMValueRef ids, LLVMValueRef y,
                    LLVMValueRef addend) {
  LLVMTypeRef i64 = g->i64;
  LLVMValueRef n = udiv(g, i, e->D), d = urem(g, i, e->D), a = NULL;
  if (e->N > 0) a = udiv(g, n, e->N), n = urem(g, n, e->N);
  LLVMValueRef id = LLVMBuildLoad2(g->b, i64, gept(g, i64, ids, n), "id");
  LLVMValueRef V = LLVMConstInt(i64, (unsigned long long)e->V, 0), zero = LLVMConstInt(i64, 0, 0);
  LLVMValueRef neg = LLVMBuildICmp(g->b, LLVMIntSLT, id, zero, "");
  LLVMValueRef r = LLVMBuildSelect(g->b, neg, LLVMBuildAdd(g->b, id, V, ""), id, "");
  /* unsigned r < V: 0 <= r < V */
  LLVMValueRef ok = LLVMBuildICmp(g->b, LLVMIntULT, r, V, "");
  LLVMValueRef row = LLVMBuildTrunc(g->b, LLVMBuildSelect(g->b, ok, r, zero, ""), g->i32, "");
  if (a) row = add(g, mul(g, a, C(e->V)), row);
  LLVMValueRef src = add(g, mul(g, row, C(e->D)), d);
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, x, src), "");
  v = LLVMBuildSelect(g->b, ok, v, LLVMConstReal(g->f32, 0.0), "");
  if (addend) v = LLVMBuildFAdd(g->b, v, LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, addend, i), ""), "");
  LLVMBuildStore(g->b, v, gept(g, g->f32, y, i));
}

void gpu_gather_emulate(const gpu_ew *e, const float *x, const int64_t *ids, float *y, const float *add) {
  int64_t N = e->N > 0 ? e->N : e->n / e->D;
  for (int64_t i = 0; i < e->n; i++) {
    int64_t t = i / e->D, a = t / N, id = ids[t % N], r = id < 0 ? id + e->V : id;
    y[i] = r >= 0 && r < e->V ? x[(a * e->V + r) * e->D + i % e->D] : 0.0f;
    if (add) y[i] += add[i];
  }
}

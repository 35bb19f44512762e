/* backends/gpu/gpu_lower_split.c: split-K's combine step in the tiled
 * kernel (plan.split, gpu_plan.h).
 *
 * A tile's K tiles are cut into `split` ranges, one workgroup each (grid
 * z = batch * split + range). After its K loop a workgroup
 *   stores its f32 partial tile into the workspace (argument 4) in the
 *   accumulators' register order: float i of thread t of range z of tile
 *   q at ((q * split + z) * n + i) * threads + t, so that a warp's stores
 *   of one i are consecutive words, and every workgroup of the tile reads
 *   back exactly the words it would have written (same threads, same
 *   fragments: no index translation);
 *   makes them visible device-wide (a fence), waits for all its threads
 *   (a barrier), and its first thread bumps the tile's counter (argument
 *   5, u32, zero at rest) and passes the old value through shared memory.
 * The workgroup that saw split - 1 earlier arrivals is the last: every
 * partial is in memory. It resets the counter to zero for the next launch
 * (graph replays need no fill step), then each thread sums its floats over
 * the ranges in order 0 .. split-1 (its own partial read back like the
 * others), so the result does not depend on which workgroup came last, and
 * the kernel's own epilogue runs on the sums. The others return.
 *
 * Why in the kernel and not a second reduce kernel: the epilogues (bias,
 * activations, f16 / NHWC stores through shared memory, pooled rows,
 * atomic pooling) stay the ones the unsplit kernel runs, and no extra launch
 * or workspace pass over the output is added. */
#include "backends/gpu/gpu_lower.h"

/* A fence over the whole device (the partials' stores before the counter,
 * the counter before the partials' loads). */
static void device_fence(gpu_gen *g) {
  if (g->target->device_fence) g->target->device_fence(g);
  else LLVMBuildFence(g->b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
}

/* The tile's partials' sums into the accumulator slots (n per thread). */
static void sum_partials(kernel *k, LLVMValueRef tbase, int n) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  long long T = p->threads, per = (long long)n * T;
  LLVMValueRef zero = LLVMConstReal(g->f32, 0.0), starts[n], phis[n], nexts[n], out[n];
  for (int i = 0; i < n; i++) starts[i] = zero;
  gpu_loop l;
  LLVMValueRef z = loop_open(g, &l, C(0), p->split, 1);
  for (int i = 0; i < n; i++) {
    phis[i] = LLVMBuildPhi(g->b, g->f32, "");
    LLVMAddIncoming(phis[i], &starts[i], &l.pre, 1);
  }
  LLVMValueRef row = add(g, tbase, add(g, mul(g, z, C(per)), k->tid));
  for (int i = 0; i < n; i++) {
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, gept(g, g->f32, k->split_ws, add(g, row, C((long long)i * T))), "");
    /* read past this core's own cache: other cores wrote them */
    LLVMSetVolatile(v, 1);
    nexts[i] = LLVMBuildFAdd(g->b, phis[i], v, "");
  }
  loop_close(g, &l, n, phis, nexts, starts, out);
  for (int i = 0; i < n; i++) LLVMBuildStore(g->b, out[i], k->acc_slots[i]);
}

void gpu_k_split_combine(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_target_ops *target = g->target;
  int n = k->nmf * k->nnf * k->fr->n_acc;
  long long T = p->threads, per = (long long)n * T, gx = p->grid[0], gy = p->grid[1];
  LLVMValueRef tile = add(g, mul(g, add(g, mul(g, k->gidx, C(gy)), udiv(g, k->m0, p->bm)), C(gx)), udiv(g, k->n0, p->bn));
  LLVMValueRef tbase = mul(g, tile, C(per * p->split));
  LLVMValueRef mine = add(g, tbase, add(g, mul(g, k->split_z, C(per)), k->tid));
  for (int i = 0; i < n; i++) {
    LLVMValueRef v = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[i], "");
    LLVMBuildStore(g->b, v, gept(g, g->f32, k->split_ws, add(g, mine, C((long long)i * T))));
  }
  device_fence(g);
  /* every thread's partial is out (and no warp still reads the pipeline's
   * shared memory, whose first word carries the arrival count) */
  target->barrier(g);
  LLVMValueRef counter = gept(g, g->i32, k->split_count, tile);
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, k->tid, 1), &join);
  LLVMValueRef old = LLVMBuildAtomicRMW(g->b, LLVMAtomicRMWBinOpAdd, counter, C(1), LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildStore(g->b, old, k->smem);
  end_if(g, join);
  target->barrier(g);
  LLVMValueRef seen = LLVMBuildLoad2(g->b, g->i32, k->smem, "");
  LLVMValueRef last = LLVMBuildICmp(g->b, LLVMIntEQ, seen, C(p->split - 1), "");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "split_last");
  LLVMBasicBlockRef leave = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "split_leave");
  LLVMBuildCondBr(g->b, last, go, leave);
  LLVMPositionBuilderAtEnd(g->b, leave);
  LLVMBuildRetVoid(g->b);
  LLVMPositionBuilderAtEnd(g->b, go);
  device_fence(g);
  begin_if(g, ult(g, k->tid, 1), &join);
  LLVMBuildStore(g->b, C(0), counter);
  end_if(g, join);
  sum_partials(k, tbase, n);
  /* the flag's word is read by every thread before an epilogue stages
   * through shared memory (gpu_k_stage_out begins with a barrier) */
}

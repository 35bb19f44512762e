/* backends/gpu/gpu_lower_ws.c: the warp-specialised, persistent matmul of a
 * plan.tma (warpgroup MMA fed by bulk tensor copies).
 *
 *   workgroup = 1 producer warpgroup + (bm/64)*(bn/wn) consumer warpgroups;
 *   the workgroups (one per SM, or one per tile) walk the output tiles
 *   t = blockIdx.x, + gridDim.x, ... (each batch's tiles rasterised in
 *   strips of 8 tile-rows, as gpu_raster);
 *   a ring of `stages` shared-memory stages, each with a "full" barrier
 *   (count 1: the producer's arrival, plus the bytes of the stage's copies)
 *   and an "empty" barrier (count: every consumer thread);
 *   the producer's first thread, for every K tile of every tile it walks:
 *   waits until the stage is empty, announces its bytes, issues the copy of
 *   A's box and of B's 64-column slabs (the copy engine writes them in the
 *   128-byte swizzle the warpgroup instructions read);
 *   each consumer warpgroup, for the same sequence: waits until the stage
 *   is full, issues its batch of MMAs, waits for it, arrives on "empty"
 *   (with plan.wg_inflight: waits until one batch is left and releases the
 *   previous K tile's stage, the last one after the loop);
 *   after a tile's last K tile it stores its accumulators (the direct
 *   epilogue) while the producer already fills the next tile's stages.
 * Producer and consumers count K tiles with one running index i over all
 * tiles: stage i % S, and round i / S selects the barrier phase (the
 * producer's first round waits for the phase before the first, which the
 * hardware counts as completed).
 *
 * plan.ws_pingpong: two consumer warpgroups, each a whole 64 x bn tile;
 * warpgroup c takes the workgroup's tiles j = c, c + 2, ... (running index
 * j * KT + kt), so one runs a tile's K loop while the other stores the
 * previous tile. A wait on a stage's barrier is only valid for the phase in
 * progress or the one before (parity), so the K loops must run in tile
 * order: after its K loop, a warpgroup arrives on the other's named barrier
 * (when the other has a next tile), and before the K loop of any tile but
 * the workgroup's first it waits on its own. */
#include "backends/gpu/gpu_lower.h"

/* The tile's batch and origin (k->gidx, m0, n0) from its linear index. */
static void tile_origin(kernel *k, LLVMValueRef t) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  long long gx = p->N / p->bn, gy = p->M / p->bm, grp = 8, per = grp * gx;
  k->gidx = udiv(g, t, gx * gy);
  LLVMValueRef pid = urem(g, t, gx * gy);
  LLVMValueRef first = mul(g, udiv(g, pid, per), C(grp));
  LLVMValueRef left = LLVMBuildSub(g->b, C(gy), first, "");
  LLVMValueRef rows = LLVMBuildSelect(g->b, ult(g, left, grp), left, C(grp), "");
  LLVMValueRef in = urem(g, pid, per);
  k->m0 = mul(g, add(g, first, LLVMBuildURem(g->b, in, rows, "")), C(p->bm));
  k->n0 = mul(g, LLVMBuildUDiv(g->b, in, rows, ""), C(p->bn));
}

typedef struct ws {
  kernel *k;
  LLVMValueRef bars, it; /* the barriers; the running K-tile index (an alloca) */
  long long tiles, KT;
  LLVMValueRef cons;     /* ping-pong: this consumer warpgroup (0, 1) */
} ws;

/* ping-pong: the named barrier a consumer waits on before its K loop */
enum { WS_PP_BAR = 1 };

static LLVMValueRef bar_at(ws *w, LLVMValueRef stage, int empty) {
  gpu_gen *g = w->k->g;
  LLVMValueRef s = empty ? add(g, stage, C(w->k->p->stages)) : stage;
  return gep8(g, w->bars, mul(g, s, C(8)));
}

/* Opens the loops over this workgroup's tiles and their K tiles; returns
 * the K tile; *stage and *round come from the running index. */
static LLVMValueRef open_loops(ws *w, gpu_loop *lt, gpu_loop *lk, int consumer, LLVMValueRef *stage,
                               LLVMValueRef *round) {
  kernel *k = w->k;
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  LLVMValueRef first = g->target->block_id(g, 0), t;
  if (consumer && p->ws_pingpong) {
    /* tiles j = cons, cons + 2, ...: t = first + j * grid; K tiles from j * KT */
    t = loop_open(g, lt, add(g, first, mul(g, w->cons, C(p->grid[0]))), w->tiles, 2LL * p->grid[0]);
    LLVMValueRef j = udiv(g, LLVMBuildSub(g->b, t, first, ""), p->grid[0]);
    LLVMBuildStore(g->b, mul(g, j, C(w->KT)), w->it);
    LLVMBasicBlockRef join;
    begin_if(g, LLVMBuildICmp(g->b, LLVMIntNE, j, C(0), ""), &join);
    g->target->named_barrier(g, add(g, w->cons, C(WS_PP_BAR)), 256, 0);
    end_if(g, join);
  } else {
    t = loop_open(g, lt, first, w->tiles, p->grid[0]);
  }
  tile_origin(k, t);
  if (consumer)
    for (int i = 0; i < p->wn / 2; i++) LLVMBuildStore(g->b, LLVMConstReal(g->f32, 0.0), k->acc_slots[i]);
  LLVMValueRef kt = loop_open(g, lk, C(0), w->KT, 1);
  LLVMValueRef it = LLVMBuildLoad2(g->b, g->i32, w->it, "");
  *stage = urem(g, it, p->stages);
  *round = LLVMBuildAnd(g->b, udiv(g, it, p->stages), C(1), "");
  LLVMBuildStore(g->b, add(g, it, C(1)), w->it);
  return kt;
}

static void producer(ws *w) {
  kernel *k = w->k;
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_target_ops *t = g->target;
  if (p->ws_regs) t->set_max_regs(g, GPU_TMA_PRODUCER_REGS, 0);
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, k->tid, 1), &join);
  if (t->tma_prefetch) t->tma_prefetch(g, k->A), t->tma_prefetch(g, k->B);
  gpu_loop lt, lk;
  LLVMValueRef stage, round;
  LLVMValueRef kt = open_loops(w, &lt, &lk, 0, &stage, &round);
  LLVMValueRef full = bar_at(w, stage, 0);
  t->mbar_wait(g, bar_at(w, stage, 1), LLVMBuildXor(g->b, round, C(1), ""));
  t->mbar_expect_tx(g, full, k->stage_bytes);
  LLVMValueRef k0 = mul(g, kt, C(p->bk));
  gpu_tile ta = gpu_k_tile_a(k, stage), tb = gpu_k_tile_b(k, stage);
  t->tma_load_2d(g, ta.base, k->A, k0, add(g, mul(g, k->gidx, C(p->M)), k->m0), full);
  LLVMValueRef brow = add(g, mul(g, k->gidx, C(p->K)), k0);
  for (int j = 0; j < p->bn / tb.slab; j++)
    t->tma_load_2d(g, gep8(g, tb.base, C((long long)j * p->bk * 128)), k->B, add(g, k->n0, C((long long)j * tb.slab)),
                   brow, full);
  loop_close(g, &lk, 0, NULL, NULL, NULL, NULL);
  loop_close(g, &lt, 0, NULL, NULL, NULL, NULL);
  end_if(g, join);
}

static void consumer(ws *w) {
  kernel *k = w->k;
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_target_ops *t = g->target;
  if (p->ws_regs) t->set_max_regs(g, p->ws_regs, 1);
  LLVMValueRef warp = udiv(g, k->tid, 32), c = LLVMBuildSub(g->b, udiv(g, warp, 4), C(1), "");
  int warps_n = p->bn / p->wn;
  if (p->ws_pingpong) /* each consumer warpgroup owns whole tiles */
    w->cons = c, c = C(0);
  k->wg_row = mul(g, udiv(g, c, warps_n), C(p->wm));
  k->wg_col = mul(g, urem(g, c, warps_n), C(p->wn));
  k->wrow = add(g, k->wg_row, mul(g, urem(g, warp, 4), C(16)));
  k->wcol = k->wg_col;
  gpu_loop lt, lk;
  LLVMValueRef stage, round;
  LLVMValueRef kt = open_loops(w, &lt, &lk, 1, &stage, &round);
  t->mbar_wait(g, bar_at(w, stage, 0), round);
  LLVMValueRef acc[128];
  gpu_k_wg_issue(k, stage, acc);
  if (!p->wg_inflight) {
    gpu_k_wg_wait(k, acc, 0);
    t->mbar_arrive(g, bar_at(w, stage, 1));
  } else {
    /* one batch left in flight: the previous K tile's batch is done, its
     * stage goes back to the producer */
    gpu_k_wg_wait(k, acc, 1);
    LLVMBasicBlockRef join;
    begin_if(g, LLVMBuildICmp(g->b, LLVMIntNE, kt, C(0), ""), &join);
    t->mbar_arrive(g, bar_at(w, urem(g, add(g, stage, C(p->stages - 1)), p->stages), 1));
    end_if(g, join);
  }
  loop_close(g, &lk, 0, NULL, NULL, NULL, NULL);
  if (p->wg_inflight) { /* the tile's last batch and its stage */
    for (int i = 0; i < p->wn / 2; i++) acc[i] = LLVMBuildLoad2(g->b, g->f32, k->acc_slots[i], "");
    gpu_k_wg_wait(k, acc, 0);
    LLVMValueRef last = LLVMBuildSub(g->b, LLVMBuildLoad2(g->b, g->i32, w->it, ""), C(1), "");
    t->mbar_arrive(g, bar_at(w, urem(g, last, p->stages), 1));
  }
  if (p->ws_pingpong) { /* the other warpgroup's next tile may start its K loop */
    LLVMBasicBlockRef join;
    begin_if(g, ult(g, add(g, lt.i, C(p->grid[0])), w->tiles), &join);
    t->named_barrier(g, LLVMBuildSub(g->b, C(WS_PP_BAR + 1), w->cons, ""), 256, 1);
    end_if(g, join);
  }
  gpu_k_epilogue(k);
  loop_close(g, &lt, 0, NULL, NULL, NULL, NULL);
}

cov_status gpu_lower_ws(kernel *k) {
  gpu_gen *g = k->g;
  const gpu_plan *p = k->p;
  const gpu_target_ops *t = g->target;
  if (!t->mbar_init || !t->tma_load_2d || !t->wg_mma || (p->ws_pingpong && !t->named_barrier))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&p->prob), "GPU lowering: target %s has no bulk tensor copies",
                     t->name);
  ws w = {k, NULL, NULL, 0, p->K / p->bk, NULL};
  w.tiles = p->G * (p->M / p->bm) * (p->N / p->bn);
  w.it = LLVMBuildAlloca(g->b, g->i32, "it"); /* in the entry block: promoted to registers */
  LLVMBuildStore(g->b, C(0), w.it);
  k->tid = t->thread_id(g);
  g->lane = urem(g, k->tid, 32);
  k->smem = t->shared_array(g, p->shared_bytes);
  /* tiles on a 1024-byte boundary (the swizzle pattern's period) */
  LLVMValueRef a = LLVMBuildPtrToInt(g->b, k->smem, g->i32, "");
  k->smem = gep8(g, k->smem, LLVMBuildAnd(g->b, LLVMBuildSub(g->b, C(0), a, ""), C(1023), ""));
  w.bars = gep8(g, k->smem, C((long long)p->stages * k->stage_bytes));
  LLVMBasicBlockRef join;
  begin_if(g, ult(g, k->tid, 1), &join);
  for (int s = 0; s < p->stages; s++) {
    t->mbar_init(g, bar_at(&w, C(s), 0), 1);
    /* every consumer thread releases a stage; with ping-pong one warpgroup */
    t->mbar_init(g, bar_at(&w, C(s), 1), p->ws_pingpong ? 128 : p->threads - 128);
  }
  t->mbar_init_fence(g);
  end_if(g, join);
  t->barrier(g);
  LLVMBasicBlockRef prod = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "producer");
  LLVMBasicBlockRef cons = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "consumer");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
  LLVMBuildCondBr(g->b, ult(g, k->tid, 128), prod, cons);
  LLVMPositionBuilderAtEnd(g->b, prod);
  producer(&w);
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, cons);
  consumer(&w);
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, done);
  LLVMBuildRetVoid(g->b);
  return NULL;
}

/* backends/gpu/gpu_plan.c: checking problems and plans, and the plan of a
 * problem from the mapper's GPU search (mapper/map_gpu.h: the one planner;
 * it reads only ACG numbers, no target names) or from a hand-fixed tile.
 *
 */
#include "backends/gpu/gpu_plan.h"

#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"

cov_status gpu_caps_from_acg(const cov_acg *acg, cov_dtype in, gpu_target_caps *out) {
  memset(out, 0, sizeof *out);
  out->warp_size = (int)acg->backend.wave_size;
  out->max_threads = (int)acg->backend.max_workgroup_threads;
  if (out->warp_size != 32 && out->warp_size != 64)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(acg->file, "$.backend.wave_size"),
                     "backend.wave_size %d (GPU targets need 32 or 64)", out->warp_size);
  if (out->max_threads < out->warp_size)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(acg->file, "$.backend.max_workgroup_threads"),
                     "backend.max_workgroup_threads %d is below the wave size", out->max_threads);
  for (int i = 0; i < acg->n_storage; i++) {
    const acg_storage *s = &acg->storage[i];
    if (s->kind == ACG_SCRATCHPAD && !out->shared_bytes) {
      out->shared_bytes = s->capacity_bytes;
      out->cores = (int)(s->instances ? s->instances : 1);
    }
    if (s->kind == ACG_REGFILE && !out->regfile_bytes) out->regfile_bytes = s->capacity_bytes;
  }
  if (!out->shared_bytes)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(acg->file, "$.storage"),
                     "no scratchpad storage (the GPU's shared memory / LDS) in the ACG");
  for (int c = 0; c < acg->n_compute; c++) {
    const acg_compute *u = &acg->compute[c];
    if (u->kind != ACG_MATRIX) continue;
    for (int j = 0; j < u->n_caps && out->n_tiles < 8; j++) {
      const acg_capability *cap = &u->caps[j];
      if (cap->op != COV_OP_MAC || cap->n_in < 2 || cap->in[0] != in || cap->in[1] != in ||
          cap->out != COV_F32 || cap->tile_rank != 3)
        continue;
      for (int d = 0; d < 3; d++) out->tiles[out->n_tiles][d] = (int)cap->tile[d];
      out->n_tiles++;
    }
  }
  return NULL;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

cov_status gpu_problem_check(const gpu_problem *q, gpu_plan *p) {
  memset(p, 0, sizeof *p);
  p->prob = *q;
  if (q->in_dtype != COV_F16 && q->in_dtype != COV_BF16 && q->in_dtype != COV_F32)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "GPU lowering: inputs of type %s (expected f16, bf16 or f32)",
                     cov_dtype_name(q->in_dtype));
  const gpu_epilogue *e = &q->epi;
  if (e->act == GPU_ACT_CLIP && !(e->clip_lo <= e->clip_hi))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "clip range [%g, %g] is empty", e->clip_lo, e->clip_hi);
  int64_t a_elems, b_elems, c_elems;
  if (q->nhwc_io && (q->kind != GPU_OP_CONV2D || e->maxpool2x2))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "channels-last outputs are for conv2d layers without a fused pool");
  if (q->nhwc_out && (q->kind != GPU_OP_CONV2D || q->groups != 1 || q->nhwc_io || e->maxpool2x2 || e->residual))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q),
                     "NHWC outputs of the NCHW gather are for ungrouped conv2d layers without a fused pool or "
                     "residual");
  if (e->softmax && q->kind != GPU_OP_MATMUL)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "a fused softmax needs a matmul layer (rows of the output)");
  if (q->out_f16 && (q->kind != GPU_OP_MATMUL || e->softmax))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "f16 outputs are for matmuls without a fused softmax");
  if (e->residual && (q->kind == GPU_OP_MATMUL ? e->softmax : q->kind != GPU_OP_CONV2D || !q->nhwc_io || e->maxpool2x2))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q),
                     "a residual addend is for matmuls without a fused softmax and channels-last convs without a pool");
  if (q->kind == GPU_OP_MAXPOOL) {
    if (q->cn < 1 || q->cc < 1 || q->ch < 1 || q->cw < 1 || q->cr < 1 || q->cs < 1 || q->stride < 1 || q->pad < 0)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "maxpool: sizes and stride must be positive, pad >= 0");
    /* torch's rule: padding at most half the window, so no window is all padding */
    if (2 * q->pad > q->cr || 2 * q->pad > q->cs)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "maxpool: pad %lld exceeds half the %lldx%lld window",
                       (long long)q->pad, (long long)q->cr, (long long)q->cs);
    if (q->ch + 2 * q->pad < q->cr || q->cw + 2 * q->pad < q->cs)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "maxpool: the window is larger than the padded input");
    if (e->bias || e->act != GPU_ACT_NONE || e->maxpool2x2)
      return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "maxpool: no fused epilogue");
    p->oh = (q->ch + 2 * q->pad - q->cr) / q->stride + 1;
    p->ow = (q->cw + 2 * q->pad - q->cs) / q->stride + 1;
    p->G = 1, p->M = q->cn * q->cc * p->oh * p->ow, p->N = 1, p->K = q->cr * q->cs;
    a_elems = q->cn * q->cc * q->ch * q->cw, b_elems = 0, c_elems = p->M;
  } else if (q->kind == GPU_OP_MATMUL) {
    if (q->batch < 1 || q->m < 1 || q->n < 1 || q->k < 1)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "matmul sizes batch %lld M %lld N %lld K %lld must be positive",
                       (long long)q->batch, (long long)q->m, (long long)q->n, (long long)q->k);
    if (e->maxpool2x2) return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "a fused max pool needs a conv2d layer");
    p->G = q->batch, p->M = q->m, p->N = q->n, p->K = q->k;
    a_elems = p->G * p->M * p->K, b_elems = p->G * p->K * p->N, c_elems = p->G * p->M * p->N;
  } else {
    if (q->cn < 1 || q->cc < 1 || q->ch < 1 || q->cw < 1 || q->ck < 1 || q->cr < 1 || q->cs < 1 ||
        q->stride < 1 || q->dilation < 1 || q->pad < 0 || q->groups < 1)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "conv2d: sizes, stride, dilation and groups must be positive, pad >= 0");
    if (q->cc % q->groups || q->ck % q->groups)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "conv2d: groups %lld must divide C %lld and K %lld",
                       (long long)q->groups, (long long)q->cc, (long long)q->ck);
    p->oh = (q->ch + 2 * q->pad - q->dilation * (q->cr - 1) - 1) / q->stride + 1;
    p->ow = (q->cw + 2 * q->pad - q->dilation * (q->cs - 1) - 1) / q->stride + 1;
    if (q->ch + 2 * q->pad < q->dilation * (q->cr - 1) + 1 || q->cw + 2 * q->pad < q->dilation * (q->cs - 1) + 1)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "conv2d: the filter is larger than the padded input");
    if (e->maxpool2x2) {
      if (!(e->act == GPU_ACT_RELU || (e->act == GPU_ACT_CLIP && e->clip_lo >= 0)))
        return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q),
                         "a fused 2x2 max pool needs a non-negative activation (relu or clip) before it");
      if (p->oh < 2 || p->ow < 2) return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "conv2d output too small to pool 2x2");
    }
    p->G = q->groups, p->M = q->cn * p->oh * p->ow, p->N = q->ck / q->groups,
    p->K = q->cc / q->groups * q->cr * q->cs;
    a_elems = q->cn * q->cc * q->ch * q->cw, b_elems = q->ck * p->K, c_elems = q->cn * q->ck * p->oh * p->ow;
  }
  const int64_t lim = (int64_t)1 << 31;
  if (a_elems >= lim || b_elems >= lim || c_elems >= lim || p->M >= lim / 2 || p->N >= lim / 2 || p->K >= lim / 2)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "GPU lowering: tensors of 2^31 elements or more are not supported");
  return NULL;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* The standalone pool: one output element per thread, no shared memory;
 * the depthwise kernel: one pixel run x 8 channels per thread. */
enum { POOL_THREADS = 256, DW_THREADS = 256 };

static cov_status pool_plan_check(const gpu_plan *p, const gpu_target_caps *caps) {
  if (p->threads < 1 || p->threads > caps->max_threads || p->threads % p->warp_size || p->shared_bytes ||
      (int64_t)p->grid[0] * p->threads < p->M || (int64_t)(p->grid[0] - 1) * p->threads >= p->M ||
      p->grid[1] != 1 || p->grid[2] != 1)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: a pool of %lld outputs on %ux%d threads",
                     (long long)p->M, p->grid[0], p->threads);
  return NULL;
}

/* Warpgroup MMA: a warpgroup instruction per warpgroup tile and 16 of K;
 * the operand tiles in 128-byte swizzled rows of K (A) and 64-column slabs
 * (B). Matmuls the tiles divide, and channels-last convolutions: their A
 * rows are whole 128-byte rows of one pixel's channels, copied zero-filled
 * into the same swizzled layout (rows past M are zeros; the staged
 * epilogue stores only rows below M). */
static cov_status wgmma_plan_check(const gpu_plan *p, const gpu_target_caps *caps, int es) {
  const gpu_problem *q = &p->prob;
  bool matmul = q->kind == GPU_OP_MATMUL;
  if (!caps->has_wgmma || !caps->has_async_copy || !p->matrix || (!matmul && !p->nhwc) || es != 2 ||
      p->warp_size != 32 || p->wm != 64 || p->fm != 64 || p->fn != p->wn || p->fk != 16 || p->wn % 64 ||
      p->wn > 256 || p->bk * es != 128 || (matmul && (p->staged || p->M % p->bm || p->N % p->bn || p->K % p->bk)) ||
      p->wg_inflight < 0 || p->wg_inflight > 1 || p->stages < 2 + p->wg_inflight)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: warpgroup MMA needs a 16-bit matmul the tiles divide or a channels-last "
                     "convolution, warpgroup tiles 64 x (64..256, a multiple of 64), 128-byte K tiles and 2 + "
                     "(batches in flight) stages on a target that has it");
  return NULL;
}

/* plan.dw: a 1-D grid covering the pixel runs, 1 to 8 pixels per thread,
 * f16 outputs, nothing of the contraction kernel's. */
static cov_status dw_plan_check(const gpu_plan *p, const gpu_target_caps *caps) {
  const gpu_problem *q = &p->prob;
  if (!p->dw || !gpu_is_dw(q) || p->dw_pw < 1 || p->dw_pw > 8 || p->threads < 1 || p->threads > caps->max_threads ||
      p->threads % p->warp_size || p->shared_bytes || !p->out_f16 || p->nhwc || p->wgmma || p->tma || p->staged ||
      (int64_t)p->grid[0] * p->threads < gpu_dw_units(p) || (int64_t)(p->grid[0] - 1) * p->threads >= gpu_dw_units(p) ||
      p->grid[1] != 1 || p->grid[2] != 1 || q->cr * q->cs > 64)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q),
                     "GPU plan: the depthwise kernel needs a channels-last 16-bit depthwise conv (C a multiple of 8, "
                     "at most 64 taps), 1 to 8 pixels per thread, whole warps and a grid of its pixel runs");
  return NULL;
}

/* split-K (plan.split): a caller that binds the workspace, the tiled
 * kernel (not the persistent one, not whole-row softmax), ranges that
 * cover the K tiles with none empty, a workspace that 32-bit indices
 * reach. */
static cov_status split_plan_check(const gpu_plan *p) {
  if (p->split <= 1) {
    if (p->split_kt)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: K tiles per split without a split");
    return NULL;
  }
  int64_t kt = gpu_k_tiles(p);
  if (!p->prob.split_ok || p->tma || p->prob.epi.softmax)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: split-K needs a caller that binds its workspace, and the tiled kernel without a row "
                     "softmax");
  if (p->split_kt < 1 || (int64_t)p->split_kt * (p->split - 1) >= kt || (int64_t)p->split_kt * p->split < kt)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: %d splits of %d K tiles do not cover %lld K tiles without an empty one", p->split,
                     p->split_kt, (long long)kt);
  if (p->G * p->split > 65535 || gpu_split_ws_floats(p) >= ((int64_t)1 << 31))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: %d splits of %lld tiles exceed the grid or a 2^31-float workspace", p->split,
                     (long long)gpu_split_tiles(p));
  return NULL;
}

/* f16 outputs: matmuls stored from the registers (the direct epilogue of
 * the tiled and the bulk-tensor-copy kernels), and convs on channels-last
 * tensors through the channels-last kernel's staged epilogue. */
static cov_status out_plan_check(const gpu_plan *p) {
  if (p->prob.kind == GPU_OP_CONV2D ? p->out_f16 != gpu_conv_out_nhwc(&p->prob)
                                     : p->out_f16 && (p->staged || p->prob.kind != GPU_OP_MATMUL || p->prob.epi.softmax))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: f16 outputs are for matmuls stored from the registers and channels-last convolutions");
  if (p->out_rq && (p->staged || p->prob.kind != GPU_OP_MATMUL || p->G != 1 || p->out_rq < 1 || p->out_r0 < 0 ||
                    p->out_r1 < 0))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: permuted output rows are for matmuls of one batch stored from the registers");
  if (p->prob.epi.residual && (p->prob.kind == GPU_OP_MATMUL
                                   ? p->staged
                                   : !p->prob.nhwc_io || !p->staged || p->pool_order || (p->oh * p->ow) % 4))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: a residual addend is for matmuls stored from the registers and channels-last convs "
                     "stored to NCHW through the staged epilogue (OH*OW a multiple of 4)");
  if (p->prob.a_pro != GPU_APRO_NONE &&
      (p->prob.kind != GPU_OP_CONV2D || p->nhwc || p->vector_copy || p->wgmma || p->tma || p->dw ||
       p->prob.in_dtype == COV_F32))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&p->prob),
                     "GPU plan: an A-operand prologue needs a 16-bit conv on the NCHW gather (guarded element copies)");
  if (p->prob.nhwc_out && (p->nhwc || p->staged || p->dw))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&p->prob),
                     "GPU plan: NHWC outputs of the NCHW gather are stored from the registers");
  if (p->prob.nhwc_io && (!p->nhwc || !p->staged || p->prob.epi.maxpool2x2 || p->bn % 8))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&p->prob),
                     "GPU plan: channels-last f16 outputs need the channels-last kernel (an ungrouped 16-bit conv "
                     "whose C is a multiple of 8) with its staged epilogue, no fused pooling, N tiles of 8s");
  return NULL;
}

cov_status gpu_plan_check(const gpu_plan *p, const gpu_target_caps *caps) {
  int es = (int)cov_dtype_size(p->prob.in_dtype);
  if (p->prob.kind == GPU_OP_MAXPOOL) return pool_plan_check(p, caps);
  if (p->dw || gpu_is_dw(&p->prob)) return dw_plan_check(p, caps);
  if (p->fm < 1 || p->fn < 1 || p->fk < 1 || p->wm % p->fm || p->wn % p->fn || p->bk % p->fk ||
      p->bm % p->wm || p->bn % p->wn)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: tiles %dx%dx%d / warp %dx%d / fragment %dx%dx%d do not nest", p->bm, p->bn, p->bk,
                     p->wm, p->wn, p->fm, p->fn, p->fk);
  if (!is_pow2(p->bk * es / 16) || !is_pow2(p->bn * es / 16) || (p->bk * es) % 16 || (p->bn * es) % 16)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: tile rows (bk %d, bn %d) must be a power of two of 16-byte chunks", p->bk, p->bn);
  if (p->warp_size != caps->warp_size ||
      p->threads != (p->wgmma ? 4 : 1) * p->warp_size * (p->bm / p->wm) * (p->bn / p->wn) + (p->tma ? 128 : 0) +
                        (p->ws_pingpong ? 128 : 0) ||
      p->threads > caps->max_threads)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: %d threads do not match its warps or exceed %d",
                     p->threads, caps->max_threads);
  if (p->stages < 2) return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: needs at least 2 stages");
  if (p->wgmma) {
    COV_RETURN_IF_ERROR(wgmma_plan_check(p, caps, es));
  } else if (p->wg_inflight) {
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: batches in flight without warpgroup MMA");
  }
  if (p->ws_pingpong && (!p->tma || p->bm != p->wm || p->bn != p->wn || !p->ws_regs))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: ping-pong consumers need the bulk-tensor-copy kernel with setmaxnreg and one warpgroup "
                     "tile per workgroup tile");
  COV_RETURN_IF_ERROR(out_plan_check(p));
  COV_RETURN_IF_ERROR(split_plan_check(p));
  if (p->tma && (!p->wgmma || p->prob.kind != GPU_OP_MATMUL || !caps->has_tma || p->stages > 16 || p->bm > 256 ||
                 (p->ws_regs && (p->ws_regs % 8 || p->ws_regs < GPU_TMA_PRODUCER_REGS || p->ws_regs > 256))))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: bulk tensor copies need a matmul on warpgroup MMA on a target that has them, at most 16 "
                     "stages, M tiles of at most 256 rows and consumer registers a multiple of 8 in [%d, 256]",
                     GPU_TMA_PRODUCER_REGS);
  if (p->tma && p->ws_regs && 65536 / p->threads >= p->ws_regs)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: setmaxnreg to %d registers needs a workgroup that could not have them all (%d threads)",
                     p->ws_regs, p->threads);
  if (!p->tma && p->ws_regs)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: consumer registers without bulk tensor copies");
  if (p->ktable && (p->prob.kind != GPU_OP_CONV2D || p->prob.ch >= 16384 || p->prob.cw >= 16384 ||
                    (p->prob.cr - 1) * p->prob.dilation >= 16384 || (p->prob.cs - 1) * p->prob.dilation >= 16384))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                     "GPU plan: a K-offset table is for conv2d with inputs and filters under 16384 pixels");
  if (p->nhwc) {
    const gpu_problem *q = &p->prob;
    int per = 16 / es;
    if (q->kind != GPU_OP_CONV2D || q->groups != 1 || es != 2 || p->ktable || p->bk % per || q->cc % per ||
        p->N % per || (q->exact_channels && (q->cc % p->bk || p->N % p->bn)) || (p->bm * p->bk / per) % p->threads ||
        (p->bk * p->bn / per) % p->threads)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob),
                       "GPU plan: channels-last copies need an ungrouped 16-bit conv2d whose C and output channels "
                       "are whole 16-byte chunks (multiples of %d; of the tiles with exact channels), and tiles (K "
                       "%d, N %d) whose chunks divide among the threads",
                       per, p->bk, p->bn);
  }
  if (p->staged) {
    const gpu_problem *q = &p->prob;
    int rows_ok = q->kind == GPU_OP_CONV2D
                      ? p->nhwc && p->cstride >= p->bm && p->cstride % 4 == 0 && p->bm % 4 == 0 &&
                            (q->epi.maxpool2x2 ? p->pool_order : q->nhwc_io || (p->oh * p->ow) % 4 == 0)
                      : q->epi.softmax && p->cstride > p->bm;
    if (!rows_ok)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: a staged epilogue does not fit this layer");
  }
  if (p->pool_order != (p->staged && p->prob.epi.maxpool2x2))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: pooled row order without the staged epilogue");
  if (p->prob.epi.softmax && (!p->staged || p->grid[0] != 1))
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&p->prob),
                     "GPU plan: a fused softmax needs one workgroup tile (%d wide) over the whole row of %lld",
                     p->bn, (long long)p->N);
  uint64_t need = gpu_plan_shared_need(p, es);
  if (need != p->shared_bytes || need > caps->shared_bytes)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: %llu bytes of shared memory (capacity %llu)",
                     (unsigned long long)need, (unsigned long long)caps->shared_bytes);
  if (p->nhwc || p->tma) {
    /* checked above */
  } else if (p->vector_copy) {
    int per = 16 / es;
    if (p->prob.kind != GPU_OP_MATMUL || p->M % p->bm || p->N % p->bn || p->K % p->bk ||
        (p->bm * p->bk / per) % p->threads || (p->bk * p->bn / per) % p->threads)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: whole-vector copies need a matmul that the tiles divide");
  } else if ((p->bm * p->bk) % p->threads || (p->bk * p->bn) % p->threads) {
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: tile elements must divide among %d threads", p->threads);
  }
  if (p->tma) {
    if ((int64_t)p->grid[0] != gpu_tma_grid(p, caps) || p->grid[1] != 1 || p->grid[2] != 1)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: a persistent grid of %u workgroups, not %lld",
                       p->grid[0], (long long)gpu_tma_grid(p, caps));
  } else if (p->grid[0] != cdiv(p->N, p->bn) || p->grid[1] != cdiv(p->M, p->bm) || p->grid[2] != p->G * gpu_split_of(p) ||
      p->grid[1] > 65535 || p->grid[2] > 65535)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: grid %ux%ux%u does not cover the problem",
                     p->grid[0], p->grid[1], p->grid[2]);
  return NULL;
}

/* The matrix instruction of a hand-fixed schedule: the first ACG
 * capability tile that the target's lowering implements (per-wave shapes;
 * warpgroup instructions take their shape from the tile), else the FMA
 * fragment. */
static void first_matrix_shape(gpu_plan *p, const gpu_target_caps *caps, const int (*supported)[3], int n_supported) {
  p->matrix = false;
  if (p->prob.in_dtype != COV_F32)
    for (int i = 0; i < caps->n_tiles && !p->matrix; i++)
      for (int j = 0; j < n_supported && !p->matrix; j++)
        if (caps->tiles[i][0] == supported[j][0] && caps->tiles[i][1] == supported[j][1] &&
            caps->tiles[i][2] == supported[j][2])
          p->fm = supported[j][0], p->fn = supported[j][1], p->fk = supported[j][2], p->matrix = true;
  if (!p->matrix) p->fm = caps->warp_size / 8, p->fn = 8, p->fk = 4;
}

cov_status gpu_plan_fixed(const gpu_problem *prob, const gpu_target_caps *caps, const int (*supported)[3],
                          int n_supported, const gpu_fixed_tile *f, gpu_plan *out) {
  gpu_plan p;
  COV_RETURN_IF_ERROR(gpu_problem_check(prob, &p));
  if (prob->kind == GPU_OP_MAXPOOL)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(prob), "a pool takes no :BMxBNxBK:WMxWN:STAGES schedule");
  if (gpu_is_dw(prob))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(prob),
                     "a depthwise conv on channels-last tensors takes no :BMxBNxBK:WMxWN:STAGES schedule (:dwP: P pixels per thread)");
  p.warp_size = caps->warp_size;
  first_matrix_shape(&p, caps, supported, n_supported);
  p.bm = f->bm, p.bn = f->bn, p.bk = f->bk, p.wm = f->wm, p.wn = f->wn, p.stages = f->stages;
  p.wgmma = f->wgmma;
  p.wg_inflight = f->wgmma ? (f->inflight >= 0 ? f->inflight : GPU_WGMMA_INFLIGHT) : 0;
  p.tma = f->tma, p.ws_regs = f->ws_regs, p.out_f16 = f->out_f16 || prob->out_f16, p.ws_pingpong = f->pingpong;
  p.split = f->split;
  p.keep_nchw = false; /* channels-last wherever the hand-fixed tile allows it */
  COV_RETURN_IF_ERROR(gpu_plan_derive(&p, caps));
  *out = p;
  return NULL;
}

/* The mapper's GPU search (mapper/map_gpu.h) over what this lowering
 * implements: the GEMM view, the matrix shapes, asynchronous copies and
 * warpgroup instructions. */
static void map_view(const gpu_plan *p, const gpu_target_caps *caps, const int (*supported)[3], int n_supported,
                     map_gpu_problem *mp, map_gpu_lowering *low) {
  const gpu_problem *q = &p->prob;
  memset(mp, 0, sizeof *mp);
  mp->kind = q->kind == GPU_OP_CONV2D ? MAP_GPU_CONV : MAP_GPU_MATMUL;
  mp->in = q->in_dtype;
  mp->G = p->G, mp->M = p->M, mp->N = p->N, mp->K = p->K;
  mp->groups = q->kind == GPU_OP_CONV2D ? q->groups : 1;
  mp->conv_c = q->kind == GPU_OP_CONV2D ? q->cc / q->groups : 0;
  mp->exact_channels = q->exact_channels;
  mp->rows_whole = q->epi.softmax;
  mp->out_bytes = q->out_f16 || q->nhwc_io || q->nhwc_out ? 2 : 4;
  mp->out_rows = q->nhwc_out;
  memset(low, 0, sizeof *low);
  for (int i = 0; i < n_supported && i < MAP_GPU_MAX_SHAPES; i++)
    for (int d = 0; d < 3; d++) low->shapes[low->n_shapes][d] = supported[i][d], low->n_shapes += d == 2;
  low->async_copy = caps->has_async_copy;
  low->warpgroup = caps->has_wgmma;
  low->tma = caps->has_tma;
  low->split_k = q->split_ok;
}

cov_status gpu_plan_from_candidate(gpu_plan *p, const map_gpu_sched *c, const gpu_target_caps *caps) {
  p->bm = c->bm, p->bn = c->bn, p->bk = c->bk, p->wm = c->wm, p->wn = c->wn;
  p->fm = c->fm, p->fn = c->fn, p->fk = c->fk, p->matrix = c->matrix, p->wgmma = c->warpgroup;
  p->wg_inflight = c->warpgroup ? GPU_WGMMA_INFLIGHT : 0;
  p->stages = c->stages;
  p->keep_nchw = !c->channels_last;
  p->tma = c->tma, p->out_f16 = p->prob.out_f16, p->ws_pingpong = c->pingpong;
  p->ws_regs = c->tma ? gpu_ws_regs(c->threads) : 0;
  p->split = c->split;
  COV_RETURN_IF_ERROR(gpu_plan_derive(p, caps));
  if (gpu_split_of(p) != (c->split > 1 ? c->split : 1))
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, "GPU plan"), "GPU plan: the lowering splits K otherwise than the mapper");
  if (p->nhwc != c->channels_last || p->vector_copy != c->vector_copy)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, "GPU plan"), "GPU plan: the lowering derives other copies than the mapper's");
  return NULL;
}

cov_status gpu_plan_dw(const gpu_plan *checked, const gpu_target_caps *caps, int pw, gpu_plan *out) {
  gpu_plan p = *checked;
  p.warp_size = caps->warp_size;
  p.dw = true, p.dw_pw = pw, p.out_f16 = true;
  p.threads = DW_THREADS < caps->max_threads ? DW_THREADS : caps->max_threads;
  p.grid[0] = (unsigned)cdiv(gpu_dw_units(&p), p.threads), p.grid[1] = p.grid[2] = 1;
  COV_RETURN_IF_ERROR(gpu_plan_check(&p, caps));
  *out = p;
  return NULL;
}

cov_status gpu_plan_map(const gpu_problem *prob, const cov_acg *acg, const gpu_target_caps *caps,
                        const int (*supported)[3], int n_supported, gpu_plan *out, map_gpu_result *ranked) {
  gpu_plan p;
  cov_status st = gpu_problem_check(prob, &p);
  if (st) return st;
  p.warp_size = caps->warp_size;
  if (prob->kind == GPU_OP_MAXPOOL) { /* one output per thread: nothing to search */
    p.threads = POOL_THREADS < caps->max_threads ? POOL_THREADS : caps->max_threads;
    p.grid[0] = (unsigned)cdiv(p.M, p.threads), p.grid[1] = p.grid[2] = 1;
    if ((st = gpu_plan_check(&p, caps))) return st;
    *out = p;
    return NULL;
  }
  if (gpu_is_dw(prob)) { /* the depthwise kernel: the mapper's pixels per thread */
    map_gpu_dw_problem dp = {prob->cn, prob->cc, prob->ch, prob->cw, p.oh, p.ow, (int)prob->cr, (int)prob->cs,
                             (int)prob->stride, (int)cov_dtype_size(prob->in_dtype)};
    map_gpu_dw_sched c[MAP_GPU_DW_MAX];
    int n;
    if (prob->cr > 16 || prob->cs > 16 || prob->stride > 1024 || prob->dilation != 1)
      return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(prob), "a depthwise conv with filters over 16x16, dilation or stride over 1024");
    COV_RETURN_IF_ERROR(map_gpu_dw_plan(acg, &dp, prob->node, c, &n));
    return gpu_plan_dw(&p, caps, c[0].pw, out);
  }
  /* the softmax epilogue holds whole rows in one workgroup tile, at most
   * 512 columns of it (the lowering's row reduction) */
  if (prob->epi.softmax && p.N > 512)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(prob), "a fused softmax over rows of %lld (at most 512)",
                     (long long)p.N);
  map_gpu_problem mp;
  map_gpu_lowering low;
  map_view(&p, caps, supported, n_supported, &mp, &low);
  map_gpu_result *r = ranked ? ranked : malloc(sizeof *r);
  if (!r) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  st = map_gpu_search(acg, &mp, &low, r);
  /* the cheapest candidate the lowering takes (the mapper checks the same
   * rules; the lowering's check has the last word) */
  int chosen = -1;
  for (int i = 0; !st && i < r->n && chosen < 0; i++) {
    gpu_plan q = p;
    cov_status e = gpu_plan_from_candidate(&q, &r->c[i], caps);
    if (e) {
      cov_status_free(e);
      continue;
    }
    chosen = i;
    *out = q;
  }
  if (!st && chosen < 0)
    st = cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, "GPU plan"), "GPU plan: none of the mapper's %d schedules of %lldx%lldx%lld fits the lowering",
                   r->n, (long long)p.M, (long long)p.N, (long long)p.K);
  if (r != ranked) free(r);
  return st;
}

/* Channels-last applies to ungrouped 16-bit convolutions whose input and
 * output channels are whole 16-byte chunks (the tiles' chunks past them
 * zero-filled), on targets with asynchronous copies (the zero-filling
 * gather is what makes it pay; through registers the NCHW gather is
 * kept). */
static bool nhwc_fits(const gpu_plan *p, const gpu_target_caps *caps, int es) {
  const gpu_problem *q = &p->prob;
  int per = 16 / es;
  return caps->has_async_copy && q->kind == GPU_OP_CONV2D && q->groups == 1 && es == 2 && p->matrix &&
         p->bk % per == 0 && q->cc % per == 0 && p->N % per == 0 &&
         (!q->exact_channels || (q->cc % p->bk == 0 && p->N % p->bn == 0)) && (p->bm * p->bk / per) % p->threads == 0 &&
         (p->bk * p->bn / per) % p->threads == 0;
}

cov_status gpu_plan_derive(gpu_plan *p, const gpu_target_caps *caps) {
  const gpu_problem *q = &p->prob;
  int es = (int)cov_dtype_size(q->in_dtype), per = 16 / es;
  p->threads = p->wm > 0 && p->wn > 0 ? (p->wgmma ? 4 : 1) * p->warp_size * (p->bm / p->wm) * (p->bn / p->wn) : 0;
  if (p->tma && p->threads) p->threads += 128; /* the producer warpgroup */
  if (p->ws_pingpong && p->threads) p->threads += 128; /* the second consumer, on alternate tiles */
  /* a warpgroup instruction: 64 rows, the warpgroup tile's columns */
  if (p->wgmma) p->fm = 64, p->fn = p->wn, p->fk = 16;
  if (p->threads < 1)
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&p->prob), "GPU plan: warp tile %dx%d", p->wm, p->wn);
  p->vector_copy = q->kind == GPU_OP_MATMUL && p->M % p->bm == 0 && p->N % p->bn == 0 && p->K % p->bk == 0 &&
                   (p->bm * p->bk / per) % p->threads == 0 && (p->bk * p->bn / per) % p->threads == 0;
  p->nhwc = !p->keep_nchw && !q->nhwc_out && nhwc_fits(p, caps, es);
  /* the staged epilogue: channels-last convolutions (coalesced NCHW stores,
   * NHWC f16 stores, atomic-free pooling) and softmax rows */
  p->staged = false, p->pool_order = false, p->cstride = 0;
  if (q->kind == GPU_OP_CONV2D) p->out_f16 = gpu_conv_out_nhwc(q);
  if (p->nhwc && p->bm % 4 == 0 && (q->epi.maxpool2x2 || q->nhwc_io || (p->oh * p->ow) % 4 == 0)) {
    p->staged = true;
    /* +4 floats: the 8 rows x 4 column pairs of an mma accumulator store
     * hit distinct banks, and columns stay 16-byte aligned for float4 reads */
    p->cstride = p->bm + 4;
    p->pool_order = q->epi.maxpool2x2;
  } else if (q->epi.softmax) {
    p->staged = true;
    p->cstride = p->bm + 1; /* odd: rows and columns both read without bank conflicts */
  }
  if (p->pool_order) p->M = q->cn * (p->oh / 2) * (p->ow / 2) * 4;
  uint64_t stage = (uint64_t)(p->bm * p->bk + p->bk * p->bn) * (uint64_t)es;
  /* deeper pipelines only help where copies are asynchronous */
  if (p->stages == 0) {
    /* 4 stages of 64-byte K tiles, 3 of 128-byte ones (as measured) */
    int max_stages = p->bk * es >= 128 ? 3 : 4;
    /* warpgroup MMA: 4 stages where one workgroup fills the SM anyway, 3
     * where that lets two share it (H100: 128x256 63% of cuBLAS at 4 stages,
     * 61% at 3; 128x128 61% at 3 stages, two per SM, 54% at 4) */
    if (p->wgmma)
      max_stages = 2 * (3 * stage + 1024) <= caps->shared_bytes ? 3 : GPU_WGMMA_STAGES;
    p->stages = 2;
    /* bulk tensor copies: as deep as fits (the producer never waits on
     * its own copies, so every stage is a tile in flight) */
    if (p->tma) max_stages = 8;
    uint64_t extra = (p->wgmma ? 1024 : 0) + (p->tma ? GPU_TMA_BARRIER_BYTES : 0);
    if (caps->has_async_copy && (p->vector_copy || p->nhwc || p->tma))
      while (p->stages < max_stages && (uint64_t)(p->stages + 1) * stage + extra <= caps->shared_bytes)
        p->stages++;
  }
  /* conv gathers read their K offsets from a table when it fits beside the
   * tiles (and leaves room for a second workgroup) */
  p->ktable = false;
  if (q->kind == GPU_OP_CONV2D && !p->nhwc && q->ch < 16384 && q->cw < 16384 &&
      (q->cr - 1) * q->dilation < 16384 && (q->cs - 1) * q->dilation < 16384) {
    p->ktable = true;
    if ((uint64_t)p->stages * stage + gpu_ktable_bytes(p) > caps->shared_bytes / 2) p->ktable = false;
  }
  p->shared_bytes = (unsigned)gpu_plan_shared_need(p, es);
  /* split-K: equal ranges of K tiles, as many as the split asks without
   * an empty one */
  int64_t kt = gpu_k_tiles(p);
  p->split_kt = p->split > 1 && kt > 1 ? (int)cdiv(kt, p->split) : 0;
  p->split = p->split_kt ? (int)cdiv(kt, p->split_kt) : 1;
  if (p->split == 1) p->split_kt = 0;
  p->grid[0] = (unsigned)cdiv(p->N, p->bn);
  p->grid[1] = (unsigned)cdiv(p->M, p->bm);
  p->grid[2] = (unsigned)(p->G * gpu_split_of(p));
  if (p->tma) p->grid[0] = (unsigned)gpu_tma_grid(p, caps), p->grid[1] = p->grid[2] = 1;
  return gpu_plan_check(p, caps);
}

/* mapper/map_gpu_attn.c: the tile of fused attention on a GPU (map_gpu.h).
 *
 * The GPU backend's flash-attention kernel (backends/gpu/gpu_lower_attn.c)
 * has two forms: warpgroups of 64 query rows whose two products are
 * warpgroup MMAs (head dim 64 only), and warps of 16 or 32 rows on
 * m16n8k16 fragments, 64 or 128 rows per workgroup. The mapper, the one
 * planner of the pipeline, picks the form and tile here; the lowering only
 * checks and builds what it is given.
 *
 * Why a rule and not map_gpu.c's resource model: that model prices one
 * contraction per tile, while attention's time is set by how many
 * workgroups each core holds against the per-key-block softmax and barrier
 * of each; the H100 sweep of every form and tile (bench/nvptx/results/attn-forms-h100.json,
 * attn-128keys-h100.json: 22 variants at the BERT-base shapes) ranks them by
 * workgroups per core alone, which is what the rule below reads from the
 * ACG (the scratchpad's instances are the cores). */
#include "mapper/map_gpu.h"

#include "acg/acg_ir.h"

static int attn_cores(const cov_acg *acg) {
  for (int i = 0; i < acg->n_storage; i++)
    if (acg->storage[i].kind == ACG_SCRATCHPAD)
      return acg->storage[i].instances ? (int)acg->storage[i].instances : 1;
  return 1;
}

cov_status map_gpu_attn_plan(const cov_acg *acg, const map_gpu_attn_problem *p, bool warpgroup, const char *where,
                             map_gpu_attn_sched *out) {
  /* each size bounded before rows64's product, which then cannot overflow */
  if (p->batch < 1 || p->heads < 1 || p->seq < 1 || p->dim < 1 || p->batch >= (1ll << 31) || p->heads >= (1ll << 31) ||
      p->seq >= (1ll << 31) || p->dim >= (1ll << 31))
    return cov_error(COV_INVALID_ARGUMENT, MAP_LOC(NULL, where), "attention %lldx%lldx%lldx%lld: sizes from 1 to 2^31-1 expected",
                     (long long)p->batch, (long long)p->heads, (long long)p->seq, (long long)p->dim);
  int cores = attn_cores(acg);
  int64_t rows64 = p->batch * p->heads * (p->seq / 64); /* workgroups of 64 query rows */
  if (warpgroup && p->dim == 64) {
    /* one warpgroup of 64 rows per workgroup, the fastest form at all four
     * BERT shapes; key blocks of 128 where the sequence is long or the
     * workgroups fewer than the cores (fewer barriers and softmax
     * rescalings per key), of 64 on short sequences with many workgroups
     * (32 x 128: 1.12x vs 1.00x torch) */
    out->bm = out->wm = 64;
    out->bn = p->seq % 128 == 0 && (p->seq >= 512 || rows64 < cores) ? 128 : 64;
    out->warpgroup = true;
    /* fewer workgroups than cores: each core holds one warpgroup and no
     * other workgroup's MMAs fill its softmax, so the warpgroup overlaps
     * them itself (1x12x128: 1.96-2.04x vs 1.91-2.00x torch, 1x12x512:
     * 1.48-1.55x vs 1.42-1.52x, attn-pipelined-h100.json); with several per core the
     * pipelined form's registers (192 at 128 keys: 2 workgroups per core
     * instead of 3) cost more than it wins (32x12x512: 0.78-0.80x vs 0.93-0.95x) */
    out->pipe = rows64 < cores;
    /* several per core and 4 or more key blocks: each block's P V and the
     * next block's S go to the tensor cores as one batch, one wait per
     * block instead of two (32x12x512, 128 keys: 1.00-1.03x torch vs
     * 0.95-0.97x unchained, attn-chained-h100.json); on 2 blocks (32x12x128)
     * chaining measured no better (1.03-1.09x vs 1.04-1.11x) */
    out->chain = !out->pipe && p->seq / out->bn >= 4;
    return NULL;
  }
  /* m16n8k16 fragments: below one 64-row workgroup per core, 16 rows per
   * warp (more warps per row block); below 8 per core, 32 rows per warp
   * (K/V fragments read once for two row blocks); above, 128-row
   * workgroups (K/V tiles shared by 4 warps) */
  out->bm = rows64 < 8 * (int64_t)cores ? 64 : 128;
  out->wm = rows64 < cores ? 16 : 32;
  out->bn = 64;
  out->warpgroup = false;
  out->pipe = out->chain = false;
  return NULL;
}

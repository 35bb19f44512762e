/* backends/gpu/gpu_plan.c: checking problems and plans, and a small
 * deterministic planner that reads only ACG numbers (no target names). */
#include "backends/gpu/gpu_plan.h"

#include <string.h>

#include "acg/acg_ir.h"

cov_status gpu_caps_from_acg(const cov_acg *acg, cov_dtype in, gpu_target_caps *out) {
  memset(out, 0, sizeof *out);
  out->warp_size = (int)acg->backend.wave_size;
  out->max_threads = (int)acg->backend.max_workgroup_threads;
  if (out->warp_size != 32 && out->warp_size != 64)
    return cov_error(COV_INVALID_ARGUMENT, NULL, "%s: backend.wave_size %d (GPU targets need 32 or 64)",
                     acg->file, out->warp_size);
  if (out->max_threads < out->warp_size)
    return cov_error(COV_INVALID_ARGUMENT, NULL, "%s: backend.max_workgroup_threads %d is below the wave size",
                     acg->file, out->max_threads);
  for (int i = 0; i < acg->n_storage; i++) {
    const acg_storage *s = &acg->storage[i];
    if (s->kind == ACG_SCRATCHPAD && !out->shared_bytes) {
      out->shared_bytes = s->capacity_bytes;
      out->cores = (int)(s->instances ? s->instances : 1);
    }
    if (s->kind == ACG_REGFILE && !out->regfile_bytes) out->regfile_bytes = s->capacity_bytes;
  }
  if (!out->shared_bytes)
    return cov_error(COV_INVALID_ARGUMENT, NULL,
                     "%s: no scratchpad storage (the GPU's shared memory / LDS) in the ACG", acg->file);
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
    return cov_error(COV_UNSUPPORTED, NULL, "GPU lowering: inputs of type %s (expected f16, bf16 or f32)",
                     cov_dtype_name(q->in_dtype));
  const gpu_epilogue *e = &q->epi;
  if (e->act == GPU_ACT_CLIP && !(e->clip_lo <= e->clip_hi))
    return cov_error(COV_INVALID_ARGUMENT, NULL, "clip range [%g, %g] is empty", e->clip_lo, e->clip_hi);
  int64_t a_elems, b_elems, c_elems;
  if (q->kind == GPU_OP_MATMUL) {
    if (q->batch < 1 || q->m < 1 || q->n < 1 || q->k < 1)
      return cov_error(COV_INVALID_ARGUMENT, NULL, "matmul sizes batch %lld M %lld N %lld K %lld must be positive",
                       (long long)q->batch, (long long)q->m, (long long)q->n, (long long)q->k);
    if (e->maxpool2x2) return cov_error(COV_UNSUPPORTED, NULL, "a fused max pool needs a conv2d layer");
    p->G = q->batch, p->M = q->m, p->N = q->n, p->K = q->k;
    a_elems = p->G * p->M * p->K, b_elems = p->G * p->K * p->N, c_elems = p->G * p->M * p->N;
  } else {
    if (q->cn < 1 || q->cc < 1 || q->ch < 1 || q->cw < 1 || q->ck < 1 || q->cr < 1 || q->cs < 1 ||
        q->stride < 1 || q->dilation < 1 || q->pad < 0 || q->groups < 1)
      return cov_error(COV_INVALID_ARGUMENT, NULL, "conv2d: sizes, stride, dilation and groups must be positive, pad >= 0");
    if (q->cc % q->groups || q->ck % q->groups)
      return cov_error(COV_INVALID_ARGUMENT, NULL, "conv2d: groups %lld must divide C %lld and K %lld",
                       (long long)q->groups, (long long)q->cc, (long long)q->ck);
    p->oh = (q->ch + 2 * q->pad - q->dilation * (q->cr - 1) - 1) / q->stride + 1;
    p->ow = (q->cw + 2 * q->pad - q->dilation * (q->cs - 1) - 1) / q->stride + 1;
    if (q->ch + 2 * q->pad < q->dilation * (q->cr - 1) + 1 || q->cw + 2 * q->pad < q->dilation * (q->cs - 1) + 1)
      return cov_error(COV_INVALID_ARGUMENT, NULL, "conv2d: the filter is larger than the padded input");
    if (e->maxpool2x2) {
      if (!(e->act == GPU_ACT_RELU || (e->act == GPU_ACT_CLIP && e->clip_lo >= 0)))
        return cov_error(COV_UNSUPPORTED, NULL,
                         "a fused 2x2 max pool needs a non-negative activation (relu or clip) before it");
      if (p->oh < 2 || p->ow < 2) return cov_error(COV_INVALID_ARGUMENT, NULL, "conv2d output too small to pool 2x2");
    }
    p->G = q->groups, p->M = q->cn * p->oh * p->ow, p->N = q->ck / q->groups,
    p->K = q->cc / q->groups * q->cr * q->cs;
    a_elems = q->cn * q->cc * q->ch * q->cw, b_elems = q->ck * p->K, c_elems = q->cn * q->ck * p->oh * p->ow;
  }
  const int64_t lim = (int64_t)1 << 31;
  if (a_elems >= lim || b_elems >= lim || c_elems >= lim || p->M >= lim / 2 || p->N >= lim / 2 || p->K >= lim / 2)
    return cov_error(COV_UNSUPPORTED, NULL, "GPU lowering: tensors of 2^31 elements or more are not supported");
  return NULL;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

cov_status gpu_plan_check(const gpu_plan *p, const gpu_target_caps *caps) {
  int es = (int)cov_dtype_size(p->prob.in_dtype);
  if (p->fm < 1 || p->fn < 1 || p->fk < 1 || p->wm % p->fm || p->wn % p->fn || p->bk % p->fk ||
      p->bm % p->wm || p->bn % p->wn)
    return cov_error(COV_INVALID_ARGUMENT, NULL,
                     "GPU plan: tiles %dx%dx%d / warp %dx%d / fragment %dx%dx%d do not nest", p->bm, p->bn, p->bk,
                     p->wm, p->wn, p->fm, p->fn, p->fk);
  if (!is_pow2(p->bk * es / 16) || !is_pow2(p->bn * es / 16) || (p->bk * es) % 16 || (p->bn * es) % 16)
    return cov_error(COV_INVALID_ARGUMENT, NULL,
                     "GPU plan: tile rows (bk %d, bn %d) must be a power of two of 16-byte chunks", p->bk, p->bn);
  if (p->warp_size != caps->warp_size ||
      p->threads != p->warp_size * (p->bm / p->wm) * (p->bn / p->wn) || p->threads > caps->max_threads)
    return cov_error(COV_INVALID_ARGUMENT, NULL, "GPU plan: %d threads do not match its warps or exceed %d",
                     p->threads, caps->max_threads);
  if (p->stages < 2) return cov_error(COV_INVALID_ARGUMENT, NULL, "GPU plan: needs at least 2 stages");
  if (p->ktable && (p->prob.kind != GPU_OP_CONV2D || p->prob.ch >= 16384 || p->prob.cw >= 16384 ||
                    (p->prob.cr - 1) * p->prob.dilation >= 16384 || (p->prob.cs - 1) * p->prob.dilation >= 16384))
    return cov_error(COV_INVALID_ARGUMENT, NULL,
                     "GPU plan: a K-offset table is for conv2d with inputs and filters under 16384 pixels");
  uint64_t need = (uint64_t)p->stages * (uint64_t)(p->bm * p->bk + p->bk * p->bn) * (uint64_t)es + gpu_ktable_bytes(p);
  if (need != p->shared_bytes || need > caps->shared_bytes)
    return cov_error(COV_INVALID_ARGUMENT, NULL, "GPU plan: %llu bytes of shared memory (capacity %llu)",
                     (unsigned long long)need, (unsigned long long)caps->shared_bytes);
  if (p->vector_copy) {
    int per = 16 / es;
    if (p->prob.kind != GPU_OP_MATMUL || p->M % p->bm || p->N % p->bn || p->K % p->bk ||
        (p->bm * p->bk / per) % p->threads || (p->bk * p->bn / per) % p->threads)
      return cov_error(COV_INVALID_ARGUMENT, NULL, "GPU plan: whole-vector copies need a matmul that the tiles divide");
  } else if ((p->bm * p->bk) % p->threads || (p->bk * p->bn) % p->threads) {
    return cov_error(COV_INVALID_ARGUMENT, NULL, "GPU plan: tile elements must divide among %d threads", p->threads);
  }
  if (p->grid[0] != cdiv(p->N, p->bn) || p->grid[1] != cdiv(p->M, p->bm) || p->grid[2] != p->G ||
      p->grid[1] > 65535 || p->grid[2] > 65535)
    return cov_error(COV_INVALID_ARGUMENT, NULL, "GPU plan: grid %ux%ux%u does not cover the problem",
                     p->grid[0], p->grid[1], p->grid[2]);
  return NULL;
}

typedef struct cand {
  int bm, bn, wm, wn;
} cand;

cov_status gpu_plan_choose(const gpu_problem *prob, const gpu_target_caps *caps,
                           const int (*supported)[3], int n_supported, gpu_plan *out) {
  gpu_plan p;
  cov_status st = gpu_problem_check(prob, &p);
  if (st) return st;
  int es = (int)cov_dtype_size(prob->in_dtype);
  p.warp_size = caps->warp_size;
  /* the matrix instruction: the first ACG capability tile the target's
   * lowering implements */
  p.matrix = false;
  if (prob->in_dtype != COV_F32)
    for (int i = 0; i < caps->n_tiles && !p.matrix; i++)
      for (int j = 0; j < n_supported; j++)
        if (caps->tiles[i][0] == supported[j][0] && caps->tiles[i][1] == supported[j][1] &&
            caps->tiles[i][2] == supported[j][2]) {
          p.fm = supported[j][0], p.fn = supported[j][1], p.fk = supported[j][2];
          p.matrix = true;
          break;
        }
  if (!p.matrix) p.fm = caps->warp_size / 8, p.fn = 8, p.fk = 4;
  /* candidate workgroup tiles, largest first (H100 measurements, see
   * backends/gpu/README.md): whole-vector asynchronous copies do best with
   * 64x64 warp tiles; the guarded element gathers (convolutions, ragged
   * matmuls) are bound by their loads and want more threads per tile */
  static const cand mat_vec[] = {{128, 128, 64, 64}, {128, 64, 64, 32}, {64, 64, 32, 32}};
  static const cand mat_gather[] = {{128, 128, 32, 64}, {128, 64, 32, 32}, {64, 64, 32, 32}};
  static const cand fma[] = {{64, 64, 32, 32}, {32, 32, 32, 32}};
  int gather = prob->kind != GPU_OP_MATMUL || p.M % 64 || p.N % 64 || p.K % 64;
  const cand *cs = !p.matrix ? fma : gather ? mat_gather : mat_vec;
  int n = p.matrix ? 3 : 2;
  p.bk = p.matrix ? (64 / es > p.fk ? 64 / es : p.fk) : 64 / es;
  /* score = useful fraction of the tiles' work x fullness of the last wave
   * of workgroups over the SMs/CUs; a smaller tile must beat a larger one
   * by 5% to be chosen (larger tiles reuse more) */
  int chosen = -1;
  double best = -1;
  for (int i = 0; i < n; i++) {
    if (cs[i].wm % p.fm || cs[i].wn % p.fn) continue;
    if ((int64_t)caps->warp_size * (cs[i].bm / cs[i].wm) * (cs[i].bn / cs[i].wn) > caps->max_threads) continue;
    if ((uint64_t)2 * (uint64_t)(cs[i].bm * p.bk + p.bk * cs[i].bn) * (uint64_t)es > caps->shared_bytes) continue;
    int64_t tm = cdiv(p.M, cs[i].bm), tn = cdiv(p.N, cs[i].bn), tiles = p.G * tm * tn;
    int64_t cores = caps->cores > 0 ? caps->cores : 1, waves = cdiv(tiles, cores);
    double eff = (double)p.M * (double)p.N / ((double)tm * cs[i].bm * (double)tn * cs[i].bn);
    double score = eff * (double)tiles / (double)(waves * cores);
    if (chosen < 0 || score > best * 1.05) best = score, chosen = i;
  }
  if (chosen < 0)
    return cov_error(COV_UNSUPPORTED, NULL, "GPU planner: no workgroup tile fits a %dx%dx%d fragment in %llu bytes",
                     p.fm, p.fn, p.fk, (unsigned long long)caps->shared_bytes);
  p.bm = cs[chosen].bm, p.bn = cs[chosen].bn, p.wm = cs[chosen].wm, p.wn = cs[chosen].wn;
  p.threads = p.warp_size * (p.bm / p.wm) * (p.bn / p.wn);
  int per = 16 / es;
  p.vector_copy = prob->kind == GPU_OP_MATMUL && p.M % p.bm == 0 && p.N % p.bn == 0 && p.K % p.bk == 0 &&
                  (p.bm * p.bk / per) % p.threads == 0 && (p.bk * p.bn / per) % p.threads == 0;
  uint64_t stage = (uint64_t)(p.bm * p.bk + p.bk * p.bn) * (uint64_t)es;
  /* deeper pipelines only help where copies are asynchronous */
  p.stages = 2;
  if (caps->has_async_copy && p.vector_copy)
    while (p.stages < 4 && (uint64_t)(p.stages + 1) * stage <= caps->shared_bytes) p.stages++;
  p.shared_bytes = (unsigned)(p.stages * stage);
  /* conv gathers read their K offsets from a table when it fits beside the
   * tiles (and leaves room for a second workgroup) */
  if (prob->kind == GPU_OP_CONV2D && prob->ch < 16384 && prob->cw < 16384 &&
      (prob->cr - 1) * prob->dilation < 16384 && (prob->cs - 1) * prob->dilation < 16384) {
    p.ktable = true;
    if (p.shared_bytes + gpu_ktable_bytes(&p) > caps->shared_bytes / 2)
      p.ktable = false;
    else
      p.shared_bytes += (unsigned)gpu_ktable_bytes(&p);
  }
  p.grid[0] = (unsigned)cdiv(p.N, p.bn);
  p.grid[1] = (unsigned)cdiv(p.M, p.bm);
  p.grid[2] = (unsigned)p.G;
  if ((st = gpu_plan_check(&p, caps))) return st;
  *out = p;
  return NULL;
}

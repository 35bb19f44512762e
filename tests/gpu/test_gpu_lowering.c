/* tests/gpu/test_gpu_lowering.c: CPU tests of the shared GPU lowering's
 * index arithmetic and planning (the kernels themselves run on the H100,
 * bench/nvptx/).
 *  - the shared-memory swizzle: a bijection per row, and 8 consecutive rows
 *    at one logical chunk hit 8 distinct 16-byte bank groups;
 *  - plans for every suite layer (and the GPU shapes, f32 and bf16) on every
 *    GPU target pass gpu_plan_check and cover the problem;
 *  - a C emulation of the kernel's loops (workgroups, K tiles staged through
 *    a swizzled byte buffer with the lowering's guarded implicit-GEMM
 *    gathers, warp/fragment/lane ownership of C with the NVPTX mma and FMA
 *    accumulator layouts, the epilogue's NCHW and pooled stores, the
 *    channels-last gather with its pooled row order, the staged epilogue
 *    and softmax rows, the standalone pool) equals the direct loop nest of
 *    gpu_reference on random problems;
 *  - bad problems are rejected with errors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_ref.h"
#include "backends/registry/backend_registry.h"
#include "covenant/mapper.h"

static int failures, checks;
#define CHECK(cond, ...)                         \
  do {                                           \
    checks++;                                    \
    if (!(cond)) {                               \
      failures++;                                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);              \
      fputc('\n', stderr);                       \
    }                                            \
  } while (0)

static void test_swizzle(void) {
  for (int rc = 1; rc <= 16; rc *= 2)
    for (int row = 0; row < 64; row++) {
      int seen[16] = {0};
      for (int c = 0; c < rc; c++) {
        int s = gpu_swizzle_chunk(row, c, rc);
        CHECK(s >= 0 && s < rc && !seen[s], "swizzle not a bijection: rc %d row %d", rc, row);
        if (s >= 0 && s < rc) seen[s] = 1;
      }
      if (row % 8) continue;
      for (int c = 0; c < rc; c++) {
        int slots = 0;
        for (int r = row; r < row + 8; r++) slots |= 1 << ((r * rc + gpu_swizzle_chunk(r, c, rc)) % 8);
        CHECK(slots == 0xff, "rows %d..%d at chunk %d (row of %d chunks) share a bank group", row, row + 7, c, rc);
      }
    }
}

static void test_raster(void) {
  for (unsigned gx = 1; gx < 20; gx++)
    for (unsigned gy = 1; gy < 30; gy++) {
      char seen[20 * 30] = {0};
      int ok = 1;
      for (unsigned by = 0; by < gy; by++)
        for (unsigned bx = 0; bx < gx; bx++) {
          unsigned tx, ty;
          gpu_raster(bx, by, gx, gy, 8, &tx, &ty);
          if (tx >= gx || ty >= gy || seen[ty * gx + tx]++) ok = 0;
        }
      CHECK(ok, "rasterisation of a %ux%u grid is not a bijection", gx, gy);
    }
}

static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

/* byte offset of (row, col) in a tile, exactly as gpu_tile_addr builds it */
static size_t tile_off(int row, int col, int cols, int es) {
  int rb = cols * es, byte = col * es;
  return (size_t)row * (size_t)rb + (size_t)gpu_swizzle_chunk(row, byte >> 4, rb / 16) * 16 + (size_t)(byte & 15);
}

/* A warp's share of the workgroup tile as the lowering sees it: origin
 * (wrow, wcol) and wm/fm x wn/fn fragments of fm x fn. Warpgroup MMA
 * (plan.wgmma): warpgroup w / 4 owns a wm x wn tile, warp w % 4 its rows
 * 16 (w % 4) .. +16, seen as mma.m16n8 fragments (the target's wg_acc). */
typedef struct wview {
  gpu_plan v; /* the plan with the per-warp wm, fm, fn */
  int wrow, wcol;
} wview;
static wview warp_view(const gpu_plan *p, int w) {
  wview x = {*p, 0, 0};
  int warps_n = p->bn / p->wn;
  if (!p->wgmma) {
    x.wrow = (w / warps_n) * p->wm, x.wcol = (w % warps_n) * p->wn;
    return x;
  }
  int wgi = w / 4;
  x.wrow = (wgi / warps_n) * p->wm + 16 * (w % 4), x.wcol = (wgi % warps_n) * p->wn;
  x.v.wm = 16, x.v.fm = 16, x.v.fn = 8;
  return x;
}

/* accumulator element i of lane -> (row, col) in the fragment */
static void acc_coord(const gpu_plan *p, int lane, int i, int *r, int *c) {
  if (!p->matrix) {
    *r = lane / 8, *c = lane % 8;
  } else if (p->fm == 16 && p->fn == 8) { /* NVPTX mma.m16n8k16 */
    *r = lane / 4 + (i >= 2 ? 8 : 0), *c = 2 * (lane % 4) + (i & 1);
  } else if (p->fm == 16) { /* MFMA 16x16x16 */
    *r = 4 * (lane / 16) + i, *c = lane % 16;
  } else { /* MFMA 32x32x8 */
    *r = 8 * (i / 4) + 4 * (lane / 32) + i % 4, *c = lane % 32;
  }
}

static float act(const gpu_epilogue *e, float v) {
  switch (e->act) {
  case GPU_ACT_RELU: return v > 0 ? v : 0;
  case GPU_ACT_CLIP: return v > e->clip_lo ? (v < e->clip_hi ? v : e->clip_hi) : e->clip_lo;
  case GPU_ACT_GELU: return (float)(0.5 * v * (1 + erf(v * 0.7071067811865476)));
  default: return v;
  }
}

/* conv_pixel of gpu_lower.c */
static void conv_pixel(const gpu_plan *p, int64_t m, int64_t *n, int64_t *oh, int64_t *ow) {
  if (!p->pool_order) {
    *n = m / (p->oh * p->ow), *oh = m % (p->oh * p->ow) / p->ow, *ow = m % p->ow;
    return;
  }
  int64_t ph = p->oh / 2, pw = p->ow / 2, win = m / 4, j = m % 4, pp = win % (ph * pw);
  *n = win / (ph * pw), *oh = 2 * (pp / pw) + j / 2, *ow = 2 * (pp % pw) + j % 2;
}

/* The standalone pool kernel, thread by thread. */
static void emulate_pool(const gpu_plan *p, const float *A, float *out) {
  const gpu_problem *q = &p->prob;
  for (unsigned b = 0; b < p->grid[0]; b++)
    for (int t = 0; t < p->threads; t++) {
      int64_t idx = (int64_t)b * p->threads + t;
      if (idx >= p->M) continue;
      int64_t ow = idx % p->ow, r0 = idx / p->ow, oh = r0 % p->oh, nc = r0 / p->oh;
      float mx = -INFINITY;
      for (int r = 0; r < q->cr; r++)
        for (int s = 0; s < q->cs; s++) {
          int64_t ih = oh * q->stride - q->pad + r, iw = ow * q->stride - q->pad + s;
          float v = (ih >= 0 && ih < q->ch && iw >= 0 && iw < q->cw) ? A[(nc * q->ch + ih) * q->cw + iw] : -INFINITY;
          mx = v > mx ? v : mx;
        }
      out[idx] = mx;
    }
}

/* The staged epilogue: accumulators to the column-major tile, then the
 * conv's 4-row stores / pooled windows, or the softmax rows. */
static void emulate_staged(const gpu_plan *p, const float *acc, int nacc_all, int n_acc, int64_t m0, int64_t n0,
                           unsigned gz, const float *bias, float *out) {
  const gpu_problem *q = &p->prob;
  int warps = p->threads / p->warp_size;
  float *cs = calloc((size_t)p->bn * (size_t)p->cstride, sizeof(float));
  for (int w = 0; w < warps; w++)
    for (int lane = 0; lane < p->warp_size; lane++) {
      wview x = warp_view(p, w);
      const gpu_plan *pv = &x.v;
      int wrow = x.wrow, wcol = x.wcol, slot = 0;
      const float *ac = acc + (size_t)(w * p->warp_size + lane) * (size_t)nacc_all;
      for (int mf = 0; mf < pv->wm / pv->fm; mf++)
        for (int nf = 0; nf < pv->wn / pv->fn; nf++)
          for (int i = 0; i < n_acc; i++, slot++) {
            int r, c;
            acc_coord(pv, lane, i, &r, &c);
            int row = wrow + mf * pv->fm + r, col = wcol + nf * pv->fn + c;
            int64_t gcol = n0 + col, ch = q->kind == GPU_OP_CONV2D ? gz * p->N + gcol : gcol;
            float v = ac[slot] + (q->epi.bias ? bias[gcol < p->N ? ch : 0] : 0);
            cs[(size_t)col * (size_t)p->cstride + (size_t)row] = act(&q->epi, v);
          }
    }
  if (q->epi.softmax) {
    for (int row = 0; row < p->bm; row++) {
      int64_t m = m0 + row;
      if (m >= p->M) continue;
      float mx = -INFINITY, sum = 0;
      for (int c = 0; c < p->N; c++) mx = fmaxf(mx, cs[c * p->cstride + row]);
      for (int c = 0; c < p->N; c++) sum += expf(cs[c * p->cstride + row] - mx);
      for (int c = 0; c < p->N; c++) out[(gz * p->M + m) * p->N + c] = expf(cs[c * p->cstride + row] - mx) / sum;
    }
  } else {
    int groups = p->bm / 4;
    for (int u = 0; u < groups * p->bn; u++) {
      int col = u / groups, r4 = u % groups;
      int64_t m = m0 + 4 * r4, gcol = n0 + col, ch = gz * p->N + gcol;
      if (m >= p->M || gcol >= p->N) continue;
      const float *x = cs + (size_t)col * (size_t)p->cstride + 4 * (size_t)r4;
      if (!p->pool_order) {
        int64_t hw = p->oh * p->ow;
        for (int j = 0; j < 4; j++) out[(m / hw * q->ck + ch) * hw + m % hw + j] = x[j];
      } else {
        int64_t pp = (p->oh / 2) * (p->ow / 2), win = m / 4;
        out[(win / pp * q->ck + ch) * pp + win % pp] = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
      }
    }
  }
  free(cs);
}

/* Emulates the kernel for `p` on floats; returns the output. */
static void emulate(const gpu_plan *p, const float *A, const float *B, const float *bias, float *out) {
  const gpu_problem *q = &p->prob;
  if (q->kind == GPU_OP_MAXPOOL) {
    emulate_pool(p, A, out);
    return;
  }
  /* channels-last: the transform kernel's NHWC input and the weights as
   * [R][S][C][K] */
  float *An = NULL, *Bw = NULL;
  if (p->nhwc) {
    int64_t hw = q->ch * q->cw;
    An = malloc(sizeof(float) * (size_t)(q->cn * q->cc * hw));
    Bw = malloc(sizeof(float) * (size_t)(q->ck * p->K));
    for (int64_t n = 0; n < q->cn; n++)
      for (int64_t c = 0; c < q->cc; c++)
        for (int64_t x = 0; x < hw; x++) An[(n * hw + x) * q->cc + c] = A[(n * q->cc + c) * hw + x];
    for (int64_t o = 0; o < q->ck; o++)
      for (int64_t c = 0; c < q->cc; c++)
        for (int64_t r = 0; r < q->cr * q->cs; r++) Bw[(r * q->cc + c) * q->ck + o] = B[(o * q->cc + c) * q->cr * q->cs + r];
  }
  wview w0 = warp_view(p, 0); /* fragment shapes are the same for every warp */
  const gpu_plan *v0 = &w0.v;
  int es = 4, n_acc = !p->matrix ? 1 : v0->fm * v0->fn / p->warp_size;
  size_t a_bytes = (size_t)p->bm * (size_t)p->bk * (size_t)es, b_bytes = (size_t)p->bk * (size_t)p->bn * (size_t)es;
  unsigned char *ta = malloc(a_bytes), *tb = malloc(b_bytes);
  int warps = p->threads / p->warp_size;
  int nacc_all = (v0->wm / v0->fm) * (v0->wn / v0->fn) * n_acc;
  float *acc = malloc(sizeof(float) * (size_t)(p->threads * nacc_all));
  /* the conv K-offset table, as build_ktable fills it */
  int64_t kt_n = (p->K + p->bk - 1) / p->bk * p->bk;
  int32_t *tbl = malloc(sizeof(int32_t) * 2 * (size_t)kt_n);
  for (int64_t e = 0; p->ktable && e < kt_n; e++) {
    int64_t c = e / (q->cr * q->cs), rs = e % (q->cr * q->cs), rd = rs / q->cs * q->dilation, sd = rs % q->cs * q->dilation;
    tbl[2 * e] = e < p->K ? (int32_t)(c * q->ch * q->cw + rd * q->cw + sd) : 0;
    tbl[2 * e + 1] = e < p->K ? (int32_t)(rd << 16 | sd) : 0x7fff7fff;
  }
  for (unsigned gz = 0; gz < p->grid[2]; gz++)
    for (unsigned by = 0; by < p->grid[1]; by++)
      for (unsigned bx = 0; bx < p->grid[0]; bx++) {
        unsigned tx, ty;
        gpu_raster(bx, by, p->grid[0], p->grid[1], 8, &tx, &ty);
        int64_t m0 = (int64_t)ty * p->bm, n0 = (int64_t)tx * p->bn;
        memset(acc, 0, sizeof(float) * (size_t)(p->threads * nacc_all));
        for (int64_t k0 = 0; k0 < p->K; k0 += p->bk) {
          /* guarded copies, thread by thread, element by element */
          for (int t = 0; t < p->threads; t++) {
            for (int i = 0; i < p->bm * p->bk / p->threads; i++) {
              int e = t + i * p->threads, row = e / p->bk, col = e % p->bk;
              int64_t m = m0 + row, kk = k0 + col;
              float v = 0;
              if (m < p->M && (kk < p->K || (q->kind == GPU_OP_CONV2D && p->ktable))) {
                if (q->kind == GPU_OP_MATMUL) {
                  v = A[(gz * p->M + m) * p->K + kk];
                } else if (p->nhwc) {
                  /* chunk col / 8 of tap k0 / C, channels k0 % C + col */
                  int64_t n, oh, ow, rs = k0 / q->cc, c0 = k0 % q->cc;
                  conv_pixel(p, m, &n, &oh, &ow);
                  int64_t ih = oh * q->stride - q->pad + rs / q->cs * q->dilation;
                  int64_t iw = ow * q->stride - q->pad + rs % q->cs * q->dilation;
                  if (ih >= 0 && ih < q->ch && iw >= 0 && iw < q->cw)
                    v = An[((n * q->ch + ih) * q->cw + iw) * q->cc + c0 + col / 8 * 8 + col % 8];
                } else if (p->ktable) {
                  int64_t n = m / (p->oh * p->ow), pix = m % (p->oh * p->ow);
                  int64_t ih0 = pix / p->ow * q->stride - q->pad, iw0 = pix % p->ow * q->stride - q->pad;
                  int64_t base = (n * q->cc + gz * (q->cc / q->groups)) * q->ch * q->cw + ih0 * q->cw + iw0;
                  int64_t ih = ih0 + (tbl[2 * kk + 1] >> 16), iw = iw0 + (tbl[2 * kk + 1] & 0xffff);
                  if (ih >= 0 && ih < q->ch && iw >= 0 && iw < q->cw) v = A[base + tbl[2 * kk]];
                } else {
                  int64_t n = m / (p->oh * p->ow), pix = m % (p->oh * p->ow), oh = pix / p->ow, ow = pix % p->ow;
                  int64_t c = kk / (q->cr * q->cs), rs = kk % (q->cr * q->cs), r = rs / q->cs, s = rs % q->cs;
                  int64_t ih = oh * q->stride + r * q->dilation - q->pad, iw = ow * q->stride + s * q->dilation - q->pad;
                  if (ih >= 0 && ih < q->ch && iw >= 0 && iw < q->cw)
                    v = A[((n * q->cc + gz * (q->cc / q->groups) + c) * q->ch + ih) * q->cw + iw];
                }
              }
              memcpy(ta + tile_off(row, col, p->bk, es), &v, 4);
            }
            for (int i = 0; i < p->bk * p->bn / p->threads; i++) {
              int e = t + i * p->threads, row, col;
              int64_t idx;
              if (q->kind == GPU_OP_MATMUL || p->nhwc)
                row = e / p->bn, col = e % p->bn, idx = (gz * p->K + k0 + row) * p->N + n0 + col;
              else
                row = e % p->bk, col = e / p->bk, idx = (gz * p->N + n0 + col) * p->K + k0 + row;
              float v = (k0 + row < p->K && n0 + col < p->N) ? (p->nhwc ? Bw : B)[idx] : 0;
              memcpy(tb + tile_off(row, col, p->bn, es), &v, 4);
            }
          }
          /* every lane's accumulators, from the staged tiles */
          for (int w = 0; w < warps; w++)
            for (int lane = 0; lane < p->warp_size; lane++) {
              wview wv = warp_view(p, w);
              const gpu_plan *pv = &wv.v;
              int wrow = wv.wrow, wcol = wv.wcol, slot = 0;
              float *ac = acc + (size_t)(w * p->warp_size + lane) * (size_t)nacc_all;
              for (int mf = 0; mf < pv->wm / pv->fm; mf++)
                for (int nf = 0; nf < pv->wn / pv->fn; nf++)
                  for (int i = 0; i < n_acc; i++, slot++) {
                    int r, c;
                    acc_coord(pv, lane, i, &r, &c);
                    for (int kk = 0; kk < p->bk; kk++) {
                      float x, y;
                      memcpy(&x, ta + tile_off(wrow + mf * pv->fm + r, kk, p->bk, es), 4);
                      memcpy(&y, tb + tile_off(kk, wcol + nf * pv->fn + c, p->bn, es), 4);
                      ac[slot] += x * y;
                    }
                  }
            }
        }
        if (p->staged) {
          emulate_staged(p, acc, nacc_all, n_acc, m0, n0, gz, bias, out);
          continue;
        }
        /* epilogue */
        for (int w = 0; w < warps; w++)
          for (int lane = 0; lane < p->warp_size; lane++) {
            wview wv = warp_view(p, w);
            const gpu_plan *pv = &wv.v;
            int wrow = wv.wrow, wcol = wv.wcol, slot = 0;
            float *ac = acc + (size_t)(w * p->warp_size + lane) * (size_t)nacc_all;
            for (int mf = 0; mf < pv->wm / pv->fm; mf++)
              for (int nf = 0; nf < pv->wn / pv->fn; nf++)
                for (int i = 0; i < n_acc; i++, slot++) {
                  int r, c;
                  acc_coord(pv, lane, i, &r, &c);
                  int64_t row = m0 + wrow + mf * pv->fm + r, col = n0 + wcol + nf * pv->fn + c;
                  if (row >= p->M || col >= p->N) continue;
                  int64_t ch = q->kind == GPU_OP_CONV2D ? gz * p->N + col : col;
                  float v = ac[slot] + (q->epi.bias ? bias[ch] : 0);
                  v = act(&q->epi, v);
                  if (q->kind == GPU_OP_MATMUL) {
                    out[(gz * p->M + row) * p->N + col] = v;
                    continue;
                  }
                  int64_t n = row / (p->oh * p->ow), pix = row % (p->oh * p->ow);
                  if (!q->epi.maxpool2x2) {
                    out[(n * q->ck + ch) * p->oh * p->ow + pix] = v;
                    continue;
                  }
                  int64_t ph = p->oh / 2, pw = p->ow / 2, py = pix / p->ow / 2, px = pix % p->ow / 2;
                  if (py < ph && px < pw) {
                    float *o = &out[((n * q->ck + ch) * ph + py) * pw + px];
                    if (v > *o) *o = v;
                  }
                }
          }
      }
  free(ta), free(tb), free(acc), free(tbl), free(An), free(Bw);
}

static void random_problem(gpu_problem *q, int i) {
  memset(q, 0, sizeof *q);
  q->in_dtype = COV_F32;
  q->stride = q->dilation = q->groups = q->batch = 1;
  if (i % 3 == 0) {
    q->kind = GPU_OP_MATMUL;
    q->batch = 1 + rnd() % 3, q->m = 1 + rnd() % 150, q->n = 1 + rnd() % 150, q->k = 1 + rnd() % 100;
  } else {
    q->kind = GPU_OP_CONV2D;
    q->groups = 1 + rnd() % 3;
    q->cn = 1 + rnd() % 2, q->cc = q->groups * (1 + rnd() % 5), q->ck = q->groups * (1 + rnd() % 20);
    q->cr = 1 + rnd() % 4, q->cs = 1 + rnd() % 4, q->stride = 1 + rnd() % 2, q->dilation = 1 + rnd() % 2;
    q->pad = rnd() % 3;
    q->ch = q->dilation * (q->cr - 1) + 2 + rnd() % 12, q->cw = q->dilation * (q->cs - 1) + 2 + rnd() % 12;
  }
  q->epi.bias = rnd() % 2;
  q->epi.act = (gpu_act)(rnd() % 4);
  q->epi.clip_lo = 0, q->epi.clip_hi = 0.5f;
  if (q->kind == GPU_OP_CONV2D && q->epi.act == GPU_ACT_RELU && rnd() % 2) q->epi.maxpool2x2 = true;
  if (i % 5 == 4 && q->kind == GPU_OP_CONV2D) {
    /* channels-last shapes (ungrouped, C a multiple of the K tile, K of 64) */
    q->groups = 1, q->cc = 32 * (1 + rnd() % 2), q->ck = 64 * (1 + rnd() % 2);
    q->ch = q->dilation * (q->cr - 1) + 2 + rnd() % 9, q->cw = q->dilation * (q->cs - 1) + 2 + rnd() % 9;
    if (rnd() % 2) q->epi.act = GPU_ACT_RELU, q->epi.maxpool2x2 = true;
  }
  if (q->kind == GPU_OP_MATMUL && rnd() % 3 == 0) { /* softmax rows; never after gelu's large values */
    q->epi.softmax = true;
    if (rnd() % 2) q->n = 100 + rnd() % 150; /* up to 256: a 32-row tile fits 64 KiB */
  }
  if (i % 7 == 6) {
    memset(q, 0, sizeof *q);
    q->kind = GPU_OP_MAXPOOL, q->batch = q->groups = q->dilation = 1;
    q->cn = 1 + rnd() % 2, q->cc = 1 + rnd() % 5, q->cr = 1 + rnd() % 3, q->cs = 1 + rnd() % 3;
    q->stride = 1 + rnd() % 2, q->pad = rnd() % 2;
    if (2 * q->pad > q->cr || 2 * q->pad > q->cs) q->pad = 0;
    q->ch = q->cr + rnd() % 9, q->cw = q->cs + rnd() % 9;
  }
}

static void test_emulation(const char *target) {
  /* the emulation runs on floats: plan as for f16 on this target (matrix
   * fragments), then as f32 (the FMA fragment, or NVPTX's 3xTF32) */
  int n_nhwc = 0, n_softmax = 0, n_pool = 0, n_pool_order = 0, n_wg_conv = 0;
  for (int pass = 0; pass < 2; pass++) {
    gpu_target t;
    cov_status st = gpu_target_open(backend_gpu_vendors(), target, pass ? COV_F32 : COV_F16, &t);
    CHECK(!st, "cannot open %s", target);
    if (st) {
      cov_status_free(st);
      return;
    }
    for (int i = 0; i < 60; i++) {
      gpu_problem q;
      random_problem(&q, i);
      q.in_dtype = pass ? COV_F32 : COV_F16;
      gpu_plan p;
      st = gpu_plan_map(&q, t.acg, &t.caps, (const int (*)[3])t.shapes, t.n_shapes, &p, NULL);
      if (st && q.epi.maxpool2x2) { /* too small to pool: fine, it said so */
        cov_status_free(st);
        continue;
      }
      CHECK(!st, "%s: no plan for random problem %d", target, i);
      if (st) {
        cov_status_print(stderr, st, 0);
        cov_status_free(st);
        continue;
      }
      size_t na, nb, no, nbias;
      gpu_buffer_sizes(&p, &na, &nb, &no, &nbias);
      float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc(nbias * 4), *want = malloc(no * 4),
            *got = calloc(no, 4);
      /* multiples of 1/16: exact products and sums in f32 (up to the
       * activation), so the two orders of summation agree closely */
      for (size_t j = 0; j < na; j++) a[j] = (float)((int)(rnd() % 33) - 16) / 16;
      for (size_t j = 0; j < nb; j++) b[j] = (float)((int)(rnd() % 33) - 16) / 16;
      for (size_t j = 0; j < nbias; j++) bias[j] = (float)((int)(rnd() % 33) - 16) / 16;
      gpu_reference(&p, a, b, bias, want);
      emulate(&p, a, b, bias, got);
      double err = 0;
      for (size_t j = 0; j < no; j++) err = fmax(err, fabs((double)got[j] - want[j]));
      CHECK(err < 1e-4, "%s pass %d problem %d (%s%s%s%s): emulated kernel differs by %g", target, pass, i,
            q.kind == GPU_OP_MATMUL ? "matmul" : q.kind == GPU_OP_CONV2D ? "conv2d" : "maxpool",
            p.nhwc ? ", channels-last" : "", p.staged ? ", staged" : "", q.epi.softmax ? ", softmax" : "", err);
      n_nhwc += p.nhwc, n_softmax += q.epi.softmax, n_pool += q.kind == GPU_OP_MAXPOOL, n_pool_order += p.pool_order;
      n_wg_conv += p.nhwc && p.wgmma;
      free(a), free(b), free(bias), free(want), free(got);
    }
    gpu_target_close(&t);
  }
  /* the random problems reach every kind of kernel: channels-last (on
   * targets with asynchronous copies) with and without pooled row order,
   * on warpgroup MMA (NVPTX), softmax rows, the standalone pool */
  int cl = strstr(target, "nvptx") != NULL;
  CHECK(n_softmax > 0 && n_pool > 0 && (!cl || (n_nhwc > 0 && n_pool_order > 0 && n_wg_conv > 0)),
        "%s: emulated %d channels-last (%d pooled order, %d warpgroup MMA), %d softmax, %d pool kernels", target,
        n_nhwc, n_pool_order, n_wg_conv, n_softmax, n_pool);
}

static void test_suite_plans(const char *target) {
  static const char *specs[] = {"resnet50_conv1", "resnet50_res2_3x3", "resnet50_res3_1x1", "resnet50_res4_3x3",
                                "resnet50_res5_1x1", "mobilenetv2_dw3x3", "mobilenetv2_pw1x1", "bert_base_qkv",
                                "bert_base_ffn1", "bert_base_attn_qk", "dlrm_mlp_top", "convnet_layer1", "resnet50_stem_pool",
                                "convnet_layer2", "gemm_8192x8192x8192", "gemm_4096x3072x768",
                                "resnet50_res2_3x3@b32", "resnet50_res4_3x3@b32", "convnet_layer1@b32"};
  cov_dtype dts[3] = {COV_F16, COV_BF16, COV_F32};
  for (int d = 0; d < 3; d++) {
    gpu_target t;
    cov_status st = gpu_target_open(backend_gpu_vendors(), target, dts[d], &t);
    CHECK(!st, "cannot open %s", target);
    if (st) {
      cov_status_free(st);
      return;
    }
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
      gpu_layer l;
      gpu_plan p;
      st = gpu_layer_from_spec(gpu_default_suite(), specs[i], dts[d], &l);
      if (!st) st = gpu_plan_map(&l.prob, t.acg, &t.caps, (const int (*)[3])t.shapes, t.n_shapes, &p, NULL);
      CHECK(!st, "%s %s %s: no plan", target, specs[i], cov_dtype_name(dts[d]));
      if (st) {
        cov_status_print(stderr, st, 0);
        cov_status_free(st);
        continue;
      }
      if (l.prob.kind == GPU_OP_MAXPOOL) {
        CHECK((int64_t)p.grid[0] * p.threads >= p.M, "%s %s: pool grid does not cover", target, specs[i]);
        CHECK(!gpu_plan_check(&p, &t.caps), "%s %s: plan check", target, specs[i]);
        continue;
      }
      /* the matrix unit wherever the target has a shape for the dtype
       * (f32: NVPTX's 3xTF32; AMD's f32 goes to the FMA fragment) */
      CHECK(p.matrix == (t.n_shapes > 0), "%s %s: matrix unit use", target, specs[i]);
      /* the warp-specialised kernel's grid is persistent: its workgroups walk the tiles */
      CHECK(p.tma ? p.grid[0] == (unsigned)gpu_tma_grid(&p, &t.caps)
                  : (int64_t)p.grid[0] * p.bn >= p.N && (int64_t)p.grid[1] * p.bm >= p.M && p.grid[2] == p.G,
            "%s %s: grid does not cover", target, specs[i]);
      CHECK(!l.prob.epi.softmax || p.grid[0] == 1, "%s %s: softmax rows in one workgroup", target, specs[i]);
      CHECK(p.shared_bytes <= t.caps.shared_bytes, "%s %s: shared memory", target, specs[i]);
      CHECK(!gpu_plan_check(&p, &t.caps), "%s %s: plan check", target, specs[i]);
    }
    gpu_target_close(&t);
  }
}

static void expect_error(const gpu_problem *q, const char *needle) {
  gpu_plan p;
  cov_status st = gpu_problem_check(q, &p);
  CHECK(st && strstr(cov_status_message(st), needle), "expected an error mentioning '%s', got '%s'", needle,
        st ? cov_status_message(st) : "success");
  cov_status_free(st);
}

static void test_errors(void) {
  gpu_problem q = {.kind = GPU_OP_CONV2D, .in_dtype = COV_F16, .cn = 1, .cc = 6, .ch = 8, .cw = 8, .ck = 4,
                   .cr = 3, .cs = 3, .stride = 1, .dilation = 1, .groups = 4};
  expect_error(&q, "groups");
  q.groups = 1;
  q.epi.maxpool2x2 = true;
  expect_error(&q, "non-negative activation");
  q.epi.maxpool2x2 = false;
  q.cr = 11;
  expect_error(&q, "larger than the padded input");
  gpu_problem m = {.kind = GPU_OP_MATMUL, .in_dtype = COV_F16, .batch = 1, .m = 65536, .n = 65536, .k = 16};
  expect_error(&m, "2^31");
  m.m = 0;
  expect_error(&m, "positive");
  m.m = 4, m.in_dtype = COV_I8;
  expect_error(&m, "i8");
  gpu_layer l;
  cov_status st = gpu_layer_from_spec(gpu_default_suite(), "resnet50_stem_pool", COV_F16, &l);
  CHECK(!st && l.prob.kind == GPU_OP_MAXPOOL && l.prob.cr == 3 && l.prob.stride == 2 && l.prob.pad == 1,
        "the stem pool is a 3x3/2 maxpool");
  cov_status_free(st);
  gpu_problem mp = {.kind = GPU_OP_MAXPOOL, .in_dtype = COV_F16, .cn = 1, .cc = 4, .ch = 8, .cw = 8, .cr = 3,
                    .cs = 3, .stride = 2, .pad = 2};
  expect_error(&mp, "half the");
  mp.pad = 1, mp.epi.bias = true;
  expect_error(&mp, "no fused epilogue");
  gpu_problem sc = q;
  sc.cr = sc.cs = 3, sc.epi.softmax = true;
  expect_error(&sc, "softmax needs a matmul");
  st = gpu_layer_from_spec(gpu_default_suite(), "gemm_4x4", COV_F16, &l);
  CHECK(st && strstr(cov_status_message(st), "gemm_MxNxK"), "bad gemm spec should be refused");
  cov_status_free(st);
  st = gpu_layer_from_spec(gpu_default_suite(), "bert_base_attn_qk", COV_F16, &l);
  CHECK(!st && !l.unfused[0] && l.prob.epi.softmax, "the attention softmax is fused");
  cov_status_free(st);
}

/* Warpgroup-MMA plans: the planner's choice for large and small 16-bit
 * matmuls on NVPTX (tiles, stages from the shared capacity, threads), none
 * on AMDGPU or for ragged shapes, and the checks a hand-fixed one meets. */
static int refused(cov_status st) {
  int r = st != NULL;
  cov_status_free(st);
  return r;
}

static void test_wgmma_plans(void) {
  gpu_target nv, amd;
  cov_status st = gpu_target_open(backend_gpu_vendors(), "nvptx-sm90", COV_F16, &nv);
  CHECK(!st, "cannot open nvptx-sm90");
  if (st) {
    cov_status_free(st);
    return;
  }
  CHECK(nv.caps.has_wgmma, "nvptx-sm90 offers warpgroup MMA");
  /* the plan of each GEMM must be the warp-specialised kernel with the
   * schedule measured fastest of its kind on the H100 (the :ws rows of
   * bench/nvptx/results/kernels-h100-ws-handfixed.json: BMxBN, warpgroup tile width, stages);
   * the last two matmuls are not divided by the tiles */
  static const struct {
    int64_t m, n, k;
    int ok[4][4];
  } want[] = {{4096, 4096, 4096, {{128, 256, 256, 4}}},
              {8192, 8192, 8192, {{128, 256, 256, 4}}},
              {1024, 1024, 1024, {{128, 64, 64, 8}}},
              {512, 2304, 768, {{128, 128, 128, 6}}},
              {100, 128, 64, {{0}}},
              {128, 128, 48, {{0}}}};
  for (int i = 0; i < 6; i++) {
    gpu_problem q = {.kind = GPU_OP_MATMUL, .in_dtype = COV_F16, .batch = 1, .m = want[i].m, .n = want[i].n,
                     .k = want[i].k};
    gpu_plan p;
    st = gpu_plan_map(&q, nv.acg, &nv.caps, (const int (*)[3])nv.shapes, nv.n_shapes, &p, NULL);
    CHECK(!st, "no plan for matmul %d", i);
    if (st) {
      cov_status_free(st);
      continue;
    }
    /* f16 outputs: only the warp-specialised kernel writes them, so the
     * mapper keeps its candidates only (none where the tiles do not divide
     * the matmul or the lowering has no bulk tensor copies) */
    gpu_problem qh = q;
    qh.out_f16 = true;
    gpu_plan ph;
    cov_status sh = gpu_plan_map(&qh, nv.acg, &nv.caps, (const int (*)[3])nv.shapes, nv.n_shapes, &ph, NULL);
    if (!want[i].ok[0][0]) {
      CHECK(!p.wgmma, "matmul %d (tiles do not divide it) takes per-warp mma", i);
      CHECK(refused(sh), "matmul %d: f16 outputs refused where the tiles do not divide it", i);
      continue;
    }
    /* (the H100 run of bench/nvptx/results/gemm-f16-candidates-h100.json: the f32 pick's
     * schedule is the fastest with f16 outputs too) */
    CHECK(!sh && ph.tma && ph.out_f16 && ph.bm == p.bm && ph.bn == p.bn && ph.stages == p.stages &&
              !gpu_plan_check(&ph, &nv.caps),
          "matmul %d: f16 outputs on the warp-specialised kernel with the f32 pick's schedule", i);
    cov_status_free(sh);
    bool measured_fast = false;
    for (int j = 0; j < 4 && want[i].ok[j][0]; j++)
      measured_fast |= p.bm == want[i].ok[j][0] && p.bn == want[i].ok[j][1] && p.wn == want[i].ok[j][2] &&
                       p.stages == want[i].ok[j][3];
    CHECK(p.wgmma && p.tma && measured_fast && p.wm == 64 && p.fm == 64 && p.fn == p.wn && p.fk == 16 && p.bk == 64 &&
              p.threads == 128 * (p.bm / 64) * (p.bn / p.wn) + 128 && p.wg_inflight == 0 &&
              p.ws_regs == (p.threads > 256 ? GPU_TMA_CONSUMER_REGS : 0) && p.grid[0] == (unsigned)gpu_tma_grid(&p, &nv.caps),
          "matmul %d: plan %dx%dx%d / %dx%d / %d stages / %d threads (wgmma %d, tma %d, grid %u)", i, p.bm, p.bn, p.bk,
          p.wm, p.wn, p.stages, p.threads, p.wgmma, p.tma, p.grid[0]);
    CHECK(p.shared_bytes == (unsigned)(p.stages * (p.bm + p.bn) * p.bk * 2 + 1024 + GPU_TMA_BARRIER_BYTES),
          "matmul %d: 1 KiB alignment spare and the barriers", i);
    /* hand-fixed variants the check refuses */
    gpu_plan bad = p;
    bad.wn = bad.fn = 96, bad.threads = 128 * (bad.bm / 64) * (bad.bn / 96);
    CHECK(refused(gpu_plan_check(&bad, &nv.caps)), "matmul %d: a 96-wide warpgroup tile is refused", i);
    bad = p, bad.wg_inflight = 1, bad.stages = 2;
    bad.shared_bytes = (unsigned)gpu_plan_shared_need(&bad, 2);
    CHECK(refused(gpu_plan_check(&bad, &nv.caps)), "matmul %d: a batch in flight needs 3 stages", i);
    gpu_target_caps no = nv.caps;
    no.has_wgmma = 0;
    CHECK(refused(gpu_plan_check(&p, &no)), "matmul %d: refused without warpgroup MMA", i);
    /* a lowering without bulk tensor copies gets the cp.async warpgroup kernel */
    no = nv.caps, no.has_tma = 0;
    gpu_plan q2;
    st = gpu_plan_map(&q, nv.acg, &no, (const int (*)[3])nv.shapes, nv.n_shapes, &q2, NULL);
    CHECK(!st && q2.wgmma && !q2.tma && q2.vector_copy && q2.threads == 128 * (q2.bm / 64) * (q2.bn / q2.wn),
          "matmul %d: without bulk tensor copies, the cp.async warpgroup kernel", i);
    CHECK(refused(gpu_plan_map(&qh, nv.acg, &no, (const int (*)[3])nv.shapes, nv.n_shapes, &q2, NULL)),
          "matmul %d: without bulk tensor copies, f16 outputs are refused", i);
    cov_status_free(st);
    st = NULL;
  }
  gpu_target_close(&nv);
  st = gpu_target_open(backend_gpu_vendors(), "amdgpu-gfx942", COV_F16, &amd);
  CHECK(!st, "cannot open amdgpu-gfx942");
  if (st) {
    cov_status_free(st);
    return;
  }
  gpu_problem q = {.kind = GPU_OP_MATMUL, .in_dtype = COV_F16, .batch = 1, .m = 4096, .n = 4096, .k = 4096};
  gpu_plan p;
  st = gpu_plan_map(&q, amd.acg, &amd.caps, (const int (*)[3])amd.shapes, amd.n_shapes, &p, NULL);
  CHECK(!st && !amd.caps.has_wgmma && !p.wgmma, "AMDGPU plans no warpgroup MMA");
  cov_status_free(st);
  gpu_target_close(&amd);
}


/* The mapper's GPU search (mapper/map_gpu.h) against the lowering: its view
 * of each suite layer (from the codelet IR) is the lowering's GEMM view
 * (from its own suite reader); its ranking is in ascending cost; every
 * schedule it ranks passes the lowering's plan check unchanged (the two
 * sets of fit rules agree), and the plan the lowering takes from it is the
 * first one. */
static void test_mapper_search(const char *target) {
  static const char *specs[] = {"resnet50_conv1", "resnet50_res2_3x3", "resnet50_res3_1x1", "resnet50_res4_3x3",
                                "resnet50_res5_1x1", "mobilenetv2_dw3x3", "mobilenetv2_pw1x1", "bert_base_qkv",
                                "bert_base_ffn1", "bert_base_attn_qk", "dlrm_mlp_top", "convnet_layer1",
                                "convnet_layer2"};
  gpu_target t;
  cov_status st = gpu_target_open(backend_gpu_vendors(), target, COV_F16, &t);
  CHECK(!st, "cannot open %s", target);
  if (st) {
    cov_status_free(st);
    return;
  }
  map_gpu_result *r = malloc(sizeof *r);
  for (size_t i = 0; r && i < sizeof specs / sizeof *specs; i++) {
    gpu_layer l;
    gpu_plan p, base;
    cov_layer *layer = NULL;
    map_gpu_problem mp;
    st = gpu_layer_from_spec(gpu_default_suite(), specs[i], COV_F16, &l);
    if (!st) st = gpu_problem_check(&l.prob, &base);
    if (!st) st = cov_layer_from_suite(NULL, specs[i], 1, &layer);
    if (!st) st = map_gpu_problem_of_layer(layer, t.acg, COV_F16, &mp);
    if (!st) st = gpu_plan_map(&l.prob, t.acg, &t.caps, (const int (*)[3])t.shapes, t.n_shapes, &p, r);
    CHECK(!st, "%s %s: mapper GPU search", target, specs[i]);
    cov_layer_free(layer);
    if (st) {
      cov_status_print(stderr, st, 0);
      cov_status_free(st);
      continue;
    }
    CHECK(mp.G == base.G && mp.M == base.M && mp.N == base.N && mp.K == base.K &&
              mp.rows_whole == l.prob.epi.softmax && (mp.kind == MAP_GPU_CONV) == (l.prob.kind == GPU_OP_CONV2D),
          "%s %s: the mapper's view %lldx%lldx%lldx%lld, the lowering's %lldx%lldx%lldx%lld", target, specs[i],
          (long long)mp.G, (long long)mp.M, (long long)mp.N, (long long)mp.K, (long long)base.G, (long long)base.M,
          (long long)base.N, (long long)base.K);
    int rejected = 0;
    base.warp_size = t.caps.warp_size;
    for (int j = 0; j < r->n; j++) {
      CHECK(j == 0 || r->c[j].cycles >= r->c[j - 1].cycles, "%s %s: ranking not ascending at %d", target, specs[i], j);
      gpu_plan q = base;
      cov_status e = gpu_plan_from_candidate(&q, &r->c[j], &t.caps);
      if (e) {
        if (!rejected) fprintf(stderr, "%s %s: candidate %d: %s\n", target, specs[i], j, cov_status_message(e));
        rejected++;
        cov_status_free(e);
      } else if (j == 0) {
        CHECK(q.bm == p.bm && q.bn == p.bn && q.bk == p.bk && q.wm == p.wm && q.stages == p.stages,
              "%s %s: the plan is not the mapper's first schedule", target, specs[i]);
      }
    }
    CHECK(r->n > 0 && rejected == 0, "%s %s: %d of the mapper's %d schedules refused by the lowering", target,
          specs[i], rejected, r->n);
  }
  free(r);
  gpu_target_close(&t);
}

/* Split-K from the mapper (plan.split): taken where the output tiles
 * leave most cores idle and K is long (EfficientNet-B0's squeeze-excite
 * fc1 at batch 1: one tile, K = 1152; ResNet-18's classifier, M = 1) and
 * the caller binds a workspace (prob.split_ok), cheaper than every
 * unsplit schedule; never without split_ok, nor where the tiles fill the
 * machine (ResNet-18's layer4 3x3 conv at batch 64: 392 64x64 tiles); every
 * split candidate of the ranking planned by the lowering as ranked. */
static void test_mapper_split(const char *target) {
  gpu_target t;
  cov_status st = gpu_target_open(backend_gpu_vendors(), target, COV_F16, &t);
  CHECK(!st, "cannot open %s", target);
  if (st) {
    cov_status_free(st);
    return;
  }
  gpu_problem se = {.kind = GPU_OP_CONV2D, .in_dtype = COV_F16, .cn = 1, .cc = 1152, .ch = 1, .cw = 1, .ck = 48, .cr = 1,
                    .cs = 1, .stride = 1, .dilation = 1, .groups = 1, .epi = {.bias = true, .act = GPU_ACT_SILU}};
  gpu_problem fc = {.kind = GPU_OP_MATMUL, .in_dtype = COV_F16, .batch = 1, .m = 1, .n = 1000, .k = 512, .epi = {.bias = true}};
  gpu_problem big = {.kind = GPU_OP_CONV2D, .in_dtype = COV_F16, .cn = 64, .cc = 512, .ch = 7, .cw = 7, .ck = 512,
                     .cr = 3, .cs = 3, .stride = 1, .pad = 1, .dilation = 1, .groups = 1, .epi = {.bias = true, .act = GPU_ACT_RELU}};
  const gpu_problem *qs[3] = {&se, &fc, &big};
  map_gpu_result *r = malloc(sizeof *r);
  for (int i = 0; r && i < 3; i++)
    for (int ok = 0; ok < 2; ok++) {
      gpu_problem q = *qs[i];
      q.split_ok = ok;
      gpu_plan p, base;
      st = gpu_plan_map(&q, t.acg, &t.caps, (const int (*)[3])t.shapes, t.n_shapes, &p, r);
      if (!st) st = gpu_problem_check(&q, &base);
      CHECK(!st, "%s split %d/%d: mapper GPU search", target, i, ok);
      if (st) {
        cov_status_free(st);
        continue;
      }
      base.warp_size = t.caps.warp_size;
      int splits = 0, refused = 0;
      double unsplit = -1;
      for (int j = 0; j < r->n; j++) {
        splits += r->c[j].split > 1;
        if (r->c[j].split > 1) {
          gpu_plan x = base;
          cov_status e = gpu_plan_from_candidate(&x, &r->c[j], &t.caps);
          refused += e != NULL || x.split != r->c[j].split;
          cov_status_free(e);
        } else if (unsplit < 0) {
          unsplit = r->c[j].cycles;
        }
      }
      CHECK(refused == 0, "%s split %d/%d: %d split schedules refused by the lowering", target, i, ok, refused);
      if (!ok || i == 2) {
        CHECK(p.split <= 1 && (ok || splits == 0), "%s split %d/%d: split %d (%d split candidates)", target, i, ok, p.split,
              splits);
      } else {
        CHECK(p.split > 1 && r->c[0].cycles < unsplit && p.grid[2] == (unsigned)(p.G * p.split),
              "%s split %d: split %d, %.0f cycles against %.0f unsplit", target, i, p.split, r->c[0].cycles, unsplit);
      }
    }
  free(r);
  gpu_target_close(&t);
}

int main(void) {
  test_swizzle();
  test_wgmma_plans();
  test_raster();
  test_errors();
  static const char *targets[] = {"nvptx-sm90", "amdgpu-gfx90a", "amdgpu-gfx942"};
  for (int i = 0; i < 3; i++) {
    test_suite_plans(targets[i]);
    test_emulation(targets[i]);
    test_mapper_search(targets[i]);
    test_mapper_split(targets[i]);
  }
  printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}

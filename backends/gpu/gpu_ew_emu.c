/* backends/gpu/gpu_ew_emu.c: the meaning in C of the model compiler's own
 * kernels (gpu_lower_ew.c: copies, gathers, the direct depthwise
 * convolution), element by element as each GPU thread computes it, in f32
 * with the same formulas (erf through the same polynomial, the same order
 * of the reduction), so a CPU run of a compiled model follows its kernels;
 * the reference it is checked against is the codelet interpreter
 * (cov_model_run_ref), an independent implementation. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/gpu/gpu_lnorm.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_pool.h"

static float ferf(float z) {
  float az = fabsf(z), t = 1.0f / (1.0f + az * 0.3275911f);
  static const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
  float poly = a[4];
  for (int i = 3; i >= 0; i--) poly = poly * t + a[i];
  poly *= t;
  float r = 1.0f - poly * expf(-(az * az));
  return z < 0 ? -r : r;
}

static float unit(float v) {
  v = v < 0 ? 0.0f : v;
  return v > 1 ? 1.0f : v;
}

static float apply(gpu_ew_fn fn, float p0, float p1, float x) {
  switch (fn) {
  case GPU_FN_HSWISH: return unit(x * (float)(1.0 / 6.0) + 0.5f) * x;
  case GPU_FN_HSIGMOID: return unit(x * p0 + p1);
  case GPU_FN_NONE: return x;
  case GPU_FN_RELU: return x > 0 ? x : 0.0f;
  case GPU_FN_CLIP: {
    float v = x < p0 ? p0 : x;
    return v > p1 ? p1 : v;
  }
  case GPU_FN_GELU: return x * 0.5f * (1.0f + ferf(x * 0.70710678f));
  case GPU_FN_SILU: return x / (1.0f + expf(-x));
  case GPU_FN_SIGMOID: return 1.0f / (1.0f + expf(-x));
  }
  return x;
}

void gpu_ew_copy_at(const gpu_ew *e, int64_t i, int64_t *src, int64_t *dst) {
  if (!e->run) {
    *src = e->s0 + i, *dst = e->d0 + i;
    return;
  }
  *src = e->s0 + i % e->run, *dst = e->d0 + i % e->run;
  int64_t t = i / e->run;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) {
    int64_t r = l < GPU_COPY_LEVELS - 1 ? t % e->rep[l] : t;
    *src += r * e->ss[l], *dst += r * e->ds[l];
    t /= e->rep[l];
  }
}

static float conv(const gpu_ew *e, int64_t i, const float *x, const float *w, const float *bias) {
  int64_t q = i % e->Q, t = i / e->Q, p = t % e->P, t2 = t / e->P, k = t2 % e->K, n = t2 / e->K;
  int64_t cg = e->C / e->groups, kg = e->K / e->groups, rs = e->R * e->S, c0 = k / kg * cg;
  float sum = 0;
  for (int64_t j = 0; j < cg * rs; j++) {
    int64_t c = j / rs, r = j % rs / e->S, s = j % e->S;
    int64_t ih = p * e->sh - e->pt + r * e->dh, iw = q * e->sw - e->pl + s * e->dw;
    int ok = ih >= 0 && ih < e->H && iw >= 0 && iw < e->W;
    float xv = ok ? x[(n * e->C + c0 + c) * e->H * e->W + ih * e->W + iw] : 0.0f;
    sum += xv * w[k * cg * rs + j];
  }
  if (e->bias) sum += bias[k];
  return apply(e->post, e->post0, e->post1, sum);
}

/* The sum of a pair's per-lane partial sums v[0 .. m->lanes) in
 * gpu_lower_lnorm's order: a butterfly within each warp's warp_lanes
 * lanes (lane 0's sum of it), then the warps' sums in warp order. */
static float lane_sum(const gpu_ln_map *m, float *v) {
  float t[GPU_EW_THREADS];
  for (int mask = m->warp_lanes / 2; mask >= 1; mask /= 2) {
    for (int l = 0; l < m->lanes; l++) t[l] = v[l] + v[l ^ mask];
    memcpy(v, t, (size_t)m->lanes * sizeof *v);
  }
  float s = v[0];
  for (int w = 1; w < m->groups; w++) s += v[w * m->warp_lanes];
  return s;
}

/* Layer normalisation of x [N][C][W] over C for work item i: the pair
 * whose lane 0 it is (gpu_lnorm.h), as gpu_lower_lnorm computes it. */
static void lnorm(const gpu_ew *e, int64_t i, const float *x, const float *w, float *y, const float *bias) {
  gpu_ln_map m = gpu_ln_map_of(e);
  int64_t t = i % GPU_EW_THREADS, slot = m.pixel_major ? t % m.per_wg : t / m.lanes;
  int64_t lane = m.pixel_major ? t / m.per_wg : t % m.lanes, pair = i / GPU_EW_THREADS * m.per_wg + slot;
  if (!m.lanes || lane || pair >= e->N * e->W) return;
  int64_t o = pair / e->W, p = pair % e->W, base = o * e->C * e->W + p;
  float part[GPU_EW_THREADS] = {0};
  for (int64_t c = 0; c < e->C; c++) part[c % m.lanes] += x[base + c * e->W];
  float mean = lane_sum(&m, part) / (float)e->C;
  memset(part, 0, sizeof part);
  for (int64_t c = 0; c < e->C; c++) {
    float d = x[base + c * e->W] - mean;
    part[c % m.lanes] += d * d;
  }
  float var = lane_sum(&m, part) / (float)e->C;
  float rstd = 1.0f / sqrtf(var + e->post0);
  for (int64_t c = 0; c < e->C; c++) {
    float v = (x[base + c * e->W] - mean) * rstd * w[c] + bias[c];
    int64_t row = e->rq ? pair / e->rq * e->r1 + pair % e->rq * e->r0 : pair; /* rows (W == 1) permuted */
    y[e->also ? pair * e->C + c : e->rq ? row * e->C + c : base + c * e->W] = v;
  }
}

/* MAXPOOL's output element i (as gpu_lower_pool.c's thread computes it:
 * taps in row order, v > max replacing it, padding -inf; each of a vec8
 * thread's channels alike). */
static void maxpool(const gpu_ew *e, const float *x, float *y) {
  int in_cl = e->in_dtype == COV_F16, out_cl = e->out_dtype == COV_F16;
  for (int64_t n = 0; n < e->N; n++)
    for (int64_t c = 0; c < e->C; c++)
      for (int64_t p = 0; p < e->P; p++)
        for (int64_t q = 0; q < e->Q; q++) {
          float mx = -INFINITY;
          for (int64_t r = 0; r < e->R; r++)
            for (int64_t s = 0; s < e->S; s++) {
              int64_t ih = p * e->sh - e->pt + r, iw = q * e->sw - e->pl + s;
              if (ih < 0 || ih >= e->H || iw < 0 || iw >= e->W) continue; /* -inf never wins */
              float v = x[in_cl ? ((n * e->H + ih) * e->W + iw) * e->C + c : ((n * e->C + c) * e->H + ih) * e->W + iw];
              mx = v > mx ? v : mx;
            }
          y[out_cl ? ((n * e->P + p) * e->Q + q) * e->C + c : ((n * e->C + c) * e->P + p) * e->Q + q] = mx;
        }
}

/* GAVGPOOL in gpu_pool.h's order: each lane's sum over its pixels, the
 * pairwise tree over the lanes, the division by H * W. */
static void gavgpool(const gpu_ew *e, const float *x, float *y) {
  gpu_gpool_map m = gpu_gpool_map_of(e);
  int64_t hw = e->H * e->W;
  float part[GPU_EW_THREADS];
  for (int64_t n = 0; n < e->N; n++)
    for (int64_t c = 0; c < e->C; c++) {
      const float *b = e->in_dtype == COV_F16 ? x + n * hw * e->C + c : x + (n * e->C + c) * hw;
      int64_t px = e->in_dtype == COV_F16 ? e->C : 1;
      for (int l = 0; l < m.lanes; l++) {
        float s = 0.0f;
        for (int64_t p = l; p < hw; p += m.lanes) s += b[p * px];
        part[l] = s;
      }
      for (int half = m.lanes / 2; half >= 1; half /= 2)
        for (int l = 0; l < half; l++) part[l] += part[l + half];
      y[n * e->C + c] = part[0] / (float)hw;
    }
}

void gpu_se_emulate(const gpu_ew *e, const float *x, const float *w1, float *y, const float *b1, const float *w2,
                    const float *b2) {
  float h[GPU_SE_MAX_K], part[GPU_SE_LANES];
  for (int64_t n = 0; n < e->N; n++) {
    const float *xn = x + n * e->C;
    for (int64_t k = 0; k < e->K && k < GPU_SE_MAX_K; k++) {
      for (int l = 0; l < GPU_SE_LANES; l++) {
        float s = 0.0f;
        for (int64_t c = l; c < e->C; c += GPU_SE_LANES) s += xn[c] * w1[e->R ? c * e->K + k : k * e->C + c];
        part[l] = s;
      }
      for (int m = GPU_SE_LANES / 2; m >= 1; m /= 2) { /* every lane adds its partner's value */
        float o[GPU_SE_LANES];
        for (int l = 0; l < GPU_SE_LANES; l++) o[l] = part[l] + part[l ^ m];
        memcpy(part, o, sizeof part);
      }
      h[k] = apply(e->post, e->post0, e->post1, part[0] + b1[k]);
    }
    for (int64_t c = 0; c < e->C; c++) {
      float s = 0.0f;
      for (int64_t k = 0; k < e->K && k < GPU_SE_MAX_K; k++) s += h[k] * w2[e->S ? k * e->C + c : c * e->K + k];
      y[n * e->C + c] = apply(e->mul_fn, e->mul0, e->mul1, s + b2[c]);
    }
  }
}

size_t gpu_ew_raw(const gpu_ew *e) {
  if (e->kind != GPU_EW_COPY && e->kind != GPU_EW_TABLE) return 0;
  switch (e->out_dtype) {
  case COV_I64: case COV_I32: case COV_BOOL: case COV_U8: case COV_I8: return cov_dtype_size(e->out_dtype);
  default: return 0;
  }
}

/* A copy or table gather of integer or bool elements, each moved whole. */
static void emulate_raw(const gpu_ew *e, size_t es, const void *x, void *y, const int32_t *table) {
  for (int64_t i = 0; i < e->n; i++) {
    int64_t s = e->kind == GPU_EW_TABLE ? table[i] : 0, d = i;
    if (e->kind == GPU_EW_COPY) gpu_ew_copy_at(e, i, &s, &d);
    if (s >= 0) memcpy((char *)y + (size_t)d * es, (const char *)x + (size_t)s * es, es);
  }
}

void gpu_ew_emulate(const gpu_ew *e, const float *x, const float *w, float *y, const float *bias,
                    const int32_t *table) {
  if (e->kind == GPU_EW_MAXPOOL || e->kind == GPU_EW_GAVGPOOL) {
    if (e->kind == GPU_EW_MAXPOOL) maxpool(e, x, y);
    else gavgpool(e, x, y);
    return;
  }
  size_t es = gpu_ew_raw(e);
  if (es) {
    emulate_raw(e, es, x, y, table);
    return;
  }
  for (int64_t i = 0; i < e->n; i++) {
    switch (e->kind) {
    case GPU_EW_COPY: {
      int64_t s, d;
      gpu_ew_copy_at(e, i, &s, &d);
      float v = x[s];
      if (e->mul_c > 0)
        v *= apply(e->mul_fn, e->mul0, e->mul1, w[(e->mul_img > 0 ? d / e->mul_img * e->mul_c : 0) + d / e->mul_hw % e->mul_c]);
      if (e->bias == 2) { /* the shortcut's NHWC f16 form */
        int64_t hw = e->H * e->W, px = d % hw, c = d / hw % e->C, n = d / hw / e->C;
        v += bias[(n * hw + px) * e->C + c];
      } else if (e->bias) {
        v += bias[d];
      }
      if (e->scale_hw > 0) v = v / (1.0f + expf(-bias[d / e->scale_hw]));
      y[d] = apply(e->post, e->post0, e->post1, v);
      break;
    }
    case GPU_EW_TABLE:
      if (table[i] >= 0) y[i] = x[table[i]];
      break;
    case GPU_EW_CONV: y[i] = conv(e, i, x, w, bias); break;
    case GPU_EW_LNORM: lnorm(e, i, x, w, y, bias); break;
    default: break;
    }
  }
}

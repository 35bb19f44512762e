/* backends/gpu/gpu_ew_emu.c: the generic kernels' meaning in C, element by
 * element as each GPU thread computes it (gpu_lower_ew.c), in f32 with the
 * same formulas (tanh through exp, erf through the same polynomial, the
 * same order of reductions), so a CPU run of a compiled model follows its
 * kernels; the reference it is checked against is the codelet interpreter
 * (cov_model_run_ref), an independent implementation. */
#include <math.h>
#include <stdint.h>

#include "backends/gpu/gpu_mplan.h"

static float ferf(float z) {
  float az = fabsf(z), t = 1.0f / (1.0f + az * 0.3275911f);
  static const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
  float poly = a[4];
  for (int i = 3; i >= 0; i--) poly = poly * t + a[i];
  poly *= t;
  float r = 1.0f - poly * expf(-(az * az));
  return z < 0 ? -r : r;
}
static float ftanh(float x) { return 1.0f - 2.0f / (expf(x * 2.0f) + 1.0f); }

static float apply(gpu_ew_fn fn, float p0, float p1, float x, float y) {
  switch (fn) {
  case GPU_FN_NONE: return x;
  case GPU_FN_RELU: return x > 0 ? x : 0.0f;
  case GPU_FN_CLIP: {
    float v = x < p0 ? p0 : x;
    return v > p1 ? p1 : v;
  }
  case GPU_FN_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case GPU_FN_TANH: return ftanh(x);
  case GPU_FN_GELU: return x * 0.5f * (1.0f + ferf(x * 0.70710678f));
  case GPU_FN_ERF: return ferf(x);
  case GPU_FN_GELU_TANH: return x * 0.5f * (1.0f + ftanh(0.7978845608f * (x + 0.044715f * x * x * x)));
  case GPU_FN_EXP: return expf(x);
  case GPU_FN_SQRT: return sqrtf(x);
  case GPU_FN_ABS: return fabsf(x);
  case GPU_FN_NEG: return -x;
  case GPU_FN_LEAKY: return x > 0 ? x : x * p0;
  case GPU_FN_ADD: return x + y;
  case GPU_FN_SUB: return x - y;
  case GPU_FN_MUL: return x * y;
  case GPU_FN_DIV: return x / y;
  case GPU_FN_MAX: return y > x ? y : x;
  case GPU_FN_MIN: return y < x ? y : x;
  }
  return x;
}

static float post(const gpu_ew *e, float v, const float *bias, int64_t bidx) {
  if (e->bias) v += bias[bidx];
  return apply(e->post, e->post0, e->post1, v, 0);
}

static int64_t bcast(const int64_t c[4], const int64_t s[4]) {
  int64_t idx = 0;
  for (int d = 0; d < 4; d++) idx = idx * s[d] + (s[d] == 1 ? 0 : c[d]);
  return idx;
}

static void rows(const gpu_ew *e, int64_t row, const float *x, const float *w, float *y, const float *bias) {
  int64_t N = e->cols;
  const float *xr = x + row * N;
  float *yr = y + row * N;
  if (e->kind == GPU_EW_SOFTMAX) {
    float mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < N; c++) mx = xr[c] > mx ? xr[c] : mx;
    for (int64_t c = 0; c < N; c++) s += expf(xr[c] - mx);
    float inv = 1.0f / s;
    for (int64_t c = 0; c < N; c++) yr[c] = post(e, expf(xr[c] - mx) * inv, bias, c);
    return;
  }
  float mean = 0, var = 0;
  for (int64_t c = 0; c < N; c++) mean += xr[c];
  mean /= (float)N;
  for (int64_t c = 0; c < N; c++) var += (xr[c] - mean) * (xr[c] - mean);
  var /= (float)N;
  float inv = 1.0f / sqrtf(var + e->p0);
  for (int64_t c = 0; c < N; c++) yr[c] = apply(e->post, e->post0, e->post1, (xr[c] - mean) * inv * w[c] + bias[c], 0);
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

static void elem(const gpu_ew *e, int64_t i, const float *x, const float *w, float *y, const float *bias,
                 const int32_t *table) {
  switch (e->kind) {
  case GPU_EW_COPY: {
    int64_t s, d;
    gpu_ew_copy_at(e, i, &s, &d);
    y[d] = x[s];
    return;
  }
  case GPU_EW_TABLE:
    if (table[i] >= 0) y[i] = x[table[i]];
    return;
  case GPU_EW_UNARY: y[i] = post(e, apply(e->fn, e->p0, e->p1, x[i], 0), bias, 0); return;
  case GPU_EW_BINARY: {
    int64_t c[4], t = i;
    for (int d = 3; d >= 0; d--) c[d] = d ? t % e->y[d] : t, t = d ? t / e->y[d] : t;
    y[i] = post(e, apply(e->fn, 0, 0, x[bcast(c, e->a)], w[bcast(c, e->b)]), bias, 0);
    return;
  }
  case GPU_EW_BIAS: y[i] = apply(e->post, e->post0, e->post1, x[i] + w[(i / e->H) % e->C], 0); return;
  case GPU_EW_BATCHNORM: {
    int64_t ch = (i / e->H) % e->C;
    float v = (x[i] - w[ch + 2 * e->C]) / sqrtf(w[ch + 3 * e->C] + e->p0);
    y[i] = apply(e->post, e->post0, e->post1, v * w[ch] + w[ch + e->C], 0);
    return;
  }
  case GPU_EW_POOL: {
    int64_t q = i % e->Q, t = i / e->Q, p = t % e->P, nc = t / e->P;
    int64_t ih0 = p * e->sh - e->pt, iw0 = q * e->sw - e->pl;
    int is_max = e->fn == GPU_FN_MAX;
    float acc = is_max ? -INFINITY : 0.0f, cnt = 0;
    for (int64_t r = 0; r < e->R; r++)
      for (int64_t s = 0; s < e->S; s++) {
        int64_t ih = ih0 + r * e->dh, iw = iw0 + s * e->dw;
        int ok = ih >= 0 && ih < e->H && iw >= 0 && iw < e->W;
        float v = ok ? x[nc * e->H * e->W + ih * e->W + iw] : 0.0f;
        if (is_max) {
          v = ok ? v : -INFINITY;
          acc = v > acc ? v : acc;
        } else {
          acc += v, cnt += ok ? 1.0f : 0.0f;
        }
      }
    if (!is_max) acc /= e->count_include_pad ? (float)(e->R * e->S) : cnt;
    y[i] = post(e, acc, bias, 0);
    return;
  }
  case GPU_EW_GPOOL: {
    int64_t hw = e->H * e->W;
    int is_max = e->fn == GPU_FN_MAX;
    float r = is_max ? -INFINITY : 0.0f;
    for (int64_t k = 0; k < hw; k++) {
      float v = x[i * hw + k];
      r = is_max ? (v > r ? v : r) : r + v;
    }
    if (!is_max) r /= (float)hw;
    y[i] = post(e, r, bias, 0);
    return;
  }
  case GPU_EW_CONV: {
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
    y[i] = post(e, sum, bias, k);
    return;
  }
  case GPU_EW_MATMUL: {
    int64_t col = i % e->cols, t = i / e->cols, m = t % e->M, gg = t / e->M;
    const float *a = x + (gg * e->ga * e->M + m) * e->Kd, *b = w + gg * e->gb * e->Kd * e->cols + col;
    float sum = 0;
    for (int64_t kk = 0; kk < e->Kd; kk++) sum += a[kk] * b[kk * e->cols];
    y[i] = post(e, sum, bias, col);
    return;
  }
  default: return;
  }
}

void gpu_ew_emulate(const gpu_ew *e, const float *x, const float *w, float *y, const float *bias,
                    const int32_t *table) {
  for (int64_t i = 0; i < e->n; i++) {
    if (e->kind == GPU_EW_SOFTMAX || e->kind == GPU_EW_LAYERNORM)
      rows(e, i, x, w, y, bias);
    else
      elem(e, i, x, w, y, bias, table);
  }
}

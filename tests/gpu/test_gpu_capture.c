/* tests/gpu/test_gpu_capture.c: the GPU capture's decoder against values
 * moved — or changed — by hand, as a layout operation would between groups.
 * A copy of any permutation must decode as exactly those elements; a value
 * change must be refused even where the first three passes (id, index,
 * flipped index) decode consistently: an f32 -> f16 -> f32 or f32 -> i32
 * -> f32 round trip maps them to a broadcast of element 0, which the
 * decoder took silently before the hash pass. The reference is
 * the transformation itself: which source element each output element is.
 * i64 values (token ids) likewise: copies decode, arithmetic, a narrowing
 * and a constant mixed in are refused (integer values hold no constants).
 * i8 / u8 values (quantized tensors) carry their patterns 7 bits per lane
 * with a marker bit: copies decode, arithmetic, a selection by value and
 * a constant mixed in are refused.
 * Every f32 case is decoded twice, from word arrays and pass by pass from
 * tensors (gpu_cap_dec_pass, the capture's own path), with the same runs;
 * constants whose bits read as a valid (id, index) pair (a zero is element
 * 0 of buffer 0 in passes 0 and 1) are told apart by pass 2.
 * Usage: test_gpu_capture */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_mcapture.h"
#include "covenant/tensor.h"

enum { N = 256 };

static float as_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t as_u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

typedef uint32_t (*xform)(const uint32_t *src, int j);
static uint32_t copy_rev(const uint32_t *s, int j) { return s[N - 1 - j]; }
static uint32_t copy_same(const uint32_t *s, int j) { return s[j]; }
static uint32_t via_f16(const uint32_t *s, int j) { return as_u(cov_f16_to_f32(cov_f32_to_f16(as_f(s[j])))); }
static uint32_t via_bf16(const uint32_t *s, int j) { return as_u(cov_bf16_to_f32(cov_f32_to_bf16(as_f(s[j])))); }
static uint32_t via_i32(const uint32_t *s, int j) {
  float f = as_f(s[j]);
  return as_u(fabsf(f) < 2147483520.0f ? (float)(int32_t)f : f);
}
static uint32_t negate(const uint32_t *s, int j) { return s[j] ^ 0x80000000u; }
/* the j-th largest (TopK over the whole row): positions follow the values */
static uint32_t top(const uint32_t *s, int j) {
  static float v[N];
  for (int i = 0; i < N; i++) v[i] = as_f(s[i]);
  for (int r = 0;; r++) {
    int best = -1;
    for (int i = 0; i < N; i++)
      if (v[i] == v[i] && (best < 0 || v[i] > v[best])) best = i;
    if (r == j) return as_u(v[best]);
    v[best] = NAN;
  }
}
/* a constant in the first 16 elements (as a Pad or Concat mixes in) */
static uint32_t pad16(const uint32_t *s, int j) { return j < 16 ? as_u(0.5f) : s[j - 16]; }
/* zeros in the middle (a Pad between two copies): a zero's bits read as
 * element 0 of buffer 0 in passes 0 and 1; pass 2 tells it is a constant */
static uint32_t zero_mid(const uint32_t *s, int j) { return j >= 100 && j < 104 ? as_u(0.0f) : s[j]; }
/* a constant every 8th element (ViT's class token per row) */
static uint32_t every8(const uint32_t *s, int j) { return j % 8 == 0 ? as_u(1.0f) : s[j]; }

/* Decodes xform applied to buffer 0's patterns; 1 if it decoded. */
static int decode(xform f, gpu_cap_value *v, int *three_ok) {
  gpu_capture c;
  memset(&c, 0, sizeof c);
  c.id_numel = malloc(sizeof *c.id_numel);
  c.n_ids = c.cap_ids = 1;
  c.id_numel[0] = N;
  uint32_t src[N], pass[GPU_CAP_PASSES][N];
  for (int p = 0; p < GPU_CAP_PASSES; p++) {
    for (int i = 0; i < N; i++) src[i] = gpu_cap_pattern(p, 0, (uint32_t)i);
    for (int j = 0; j < N; j++) pass[p][j] = f(src, j);
  }
  /* what the three-pass decoder checked: a valid (id, index) whose
   * flipped index arrived in pass 2 */
  *three_ok = 1;
  for (int j = 0; j < N; j++)
    *three_ok &= pass[0][j] == 0 && pass[1][j] < N && pass[2][j] == gpu_cap_pattern(2, 0, pass[1][j]);
  int64_t shape[1] = {N};
  cov_tensor t = {0};
  if (cov_tensor_alloc(&t, COV_F32, 1, shape)) return -1;
  memcpy(t.data, pass[GPU_CAP_PASSES - 1], sizeof pass[0]);
  memset(v, 0, sizeof *v);
  gpu_cap_decode(&c, &t, pass[0], pass[1], pass[2], v);
  /* the same passes fed one tensor at a time (the capture's own path) must
   * give the same runs, or the same refusal */
  gpu_cap_value w;
  memset(&w, 0, sizeof w);
  gpu_cap_dec *d = NULL;
  for (int p = 0; p < GPU_CAP_PASSES && (p == 0 || d); p++) {
    memcpy(t.data, pass[p], sizeof pass[0]);
    gpu_cap_dec_pass(&c, &d, p, &t, &w);
  }
  int same = w.ok == v->ok && w.n_runs == v->n_runs;
  for (int r = 0; same && r < w.n_runs; r++)
    same = w.runs[r].d0 == v->runs[r].d0 && w.runs[r].s0 == v->runs[r].s0 && w.runs[r].n == v->runs[r].n &&
           (w.runs[r].src == v->runs[r].src || (w.runs[r].src > 0 && v->runs[r].src > 0));
  if (!same) printf("FAIL pass by pass: %d runs (ok %d), at once %d (ok %d)\n", w.n_runs, w.ok, v->n_runs, v->ok);
  free(w.runs);
  cov_tensor_release(&t);
  int ok = same ? v->ok : -1;
  gpu_capture_free(&c);
  return ok;
}

/* i64 values (token ids) moved or changed: source element j of pass p is
 * gpu_cap_pattern64; the decoder sees the words gpu_cap_words gives. */
typedef uint64_t (*xform64)(const uint64_t *src, int j);
static uint64_t c64_same(const uint64_t *s, int j) { return s[j]; }
static uint64_t c64_rev(const uint64_t *s, int j) { return s[N - 1 - j]; }
static uint64_t c64_plus1(const uint64_t *s, int j) { return s[j] + 1; }
static uint64_t c64_via_i32(const uint64_t *s, int j) { return (uint64_t)(int64_t)(int32_t)(uint32_t)s[j]; }
static uint64_t c64_pad(const uint64_t *s, int j) { return j < 16 ? 7 : s[j - 16]; }

static int decode64(xform64 f, gpu_cap_value *v) {
  gpu_capture c;
  memset(&c, 0, sizeof c);
  c.id_numel = malloc(sizeof *c.id_numel);
  c.n_ids = c.cap_ids = 1;
  c.id_numel[0] = N;
  int64_t shape[1] = {N};
  cov_tensor t[GPU_CAP_PASSES] = {{0}};
  static uint32_t words[GPU_CAP_PASSES][N];
  uint64_t src[N];
  for (int p = 0; p < GPU_CAP_PASSES; p++) {
    if (cov_tensor_alloc(&t[p], COV_I64, 1, shape)) return -1;
    for (int i = 0; i < N; i++) src[i] = gpu_cap_pattern64(p, 0, (uint32_t)i);
    for (int j = 0; j < N; j++) ((uint64_t *)t[p].data)[j] = f(src, j);
    gpu_cap_words(&t[p], words[p]);
  }
  memset(v, 0, sizeof *v);
  gpu_cap_decode(&c, &t[GPU_CAP_PASSES - 1], words[0], words[1], words[2], v);
  for (int p = 0; p < GPU_CAP_PASSES; p++) cov_tensor_release(&t[p]);
  int ok = v->ok;
  gpu_capture_free(&c);
  return ok;
}

/* 8-bit values (quantized tensors): in lane l of each pass an element
 * holds 7 bits of its pattern and the marker bit (gpu_cap_lane_byte); the
 * decoder sees the words gpu_cap_add_lane assembles from the lanes. */
enum { LANES = 5 };
typedef uint8_t (*xform8)(const uint8_t *src, int j);
static uint8_t c8_same(const uint8_t *s, int j) { return s[j]; }
static uint8_t c8_rev(const uint8_t *s, int j) { return s[N - 1 - j]; }
static uint8_t c8_plus1(const uint8_t *s, int j) { return (uint8_t)(s[j] + 1); }
static uint8_t c8_relu(const uint8_t *s, int j) { return (int8_t)s[j] < 0 ? 0 : s[j]; }
static uint8_t c8_pad(const uint8_t *s, int j) { return j < 16 ? 5 : s[j - 16]; }

static int decode8(xform8 f, cov_dtype dt, gpu_cap_value *v) {
  gpu_capture c;
  memset(&c, 0, sizeof c);
  c.id_numel = malloc(sizeof *c.id_numel);
  c.n_ids = c.cap_ids = 1;
  c.id_numel[0] = N;
  int64_t shape[1] = {N};
  cov_tensor t = {0};
  static uint32_t words[GPU_CAP_PASSES][N];
  uint8_t src[N];
  if (cov_tensor_alloc(&t, dt, 1, shape)) return -1;
  for (int p = 0; p < GPU_CAP_PASSES; p++)
    for (int l = 0; l < LANES; l++) {
      for (int i = 0; i < N; i++) src[i] = gpu_cap_lane_byte(gpu_cap_pattern(p, 0, (uint32_t)i), l);
      for (int j = 0; j < N; j++) ((uint8_t *)t.data)[j] = f(src, j);
      gpu_cap_add_lane(&t, l, words[p]);
    }
  memset(v, 0, sizeof *v);
  gpu_cap_decode_words(&c, N, words[0], words[1], words[2], words[3], v);
  cov_tensor_release(&t);
  int ok = v->ok;
  gpu_capture_free(&c);
  return ok;
}

/* Each decoded element is the source element the transformation took. */
static int runs_match(const gpu_cap_value *v, int (*where)(int j)) {
  int64_t seen = 0;
  for (int r = 0; r < v->n_runs; r++)
    for (int64_t k = 0; k < v->runs[r].n; k++, seen++) {
      int j = (int)(v->runs[r].d0 + k), s = where(j);
      if (s >= 0 ? (v->runs[r].src != 0 || v->runs[r].s0 + k != s) : v->runs[r].src == 0) return 0;
    }
  return seen == N;
}
static int at_rev(int j) { return N - 1 - j; }
static int at_same(int j) { return j; }
static int at_pad16(int j) { return j < 16 ? -1 : j - 16; }
static int at_zero_mid(int j) { return j >= 100 && j < 104 ? -1 : j; }
static int at_every8(int j) { return j % 8 == 0 ? -1 : j; }

int main(void) {
  static const struct {
    const char *name;
    xform f;
    int (*where)(int j); /* NULL: must be refused */
  } cases[] = {
      {"copy", copy_same, at_same},           {"reverse", copy_rev, at_rev},
      {"pad with a constant", pad16, at_pad16}, {"zeros in the middle", zero_mid, at_zero_mid},
      {"a constant every 8th", every8, at_every8}, {"f32 -> f16 -> f32", via_f16, NULL},
      {"f32 -> bf16 -> f32", via_bf16, NULL}, {"f32 -> i32 -> f32", via_i32, NULL},
      {"negation", negate, NULL},             {"top-k by value", top, NULL},
  };
  int fail = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gpu_cap_value v;
    int three_ok = 0, ok = decode(cases[i].f, &v, &three_ok);
    int good = cases[i].where ? ok == 1 && runs_match(&v, cases[i].where) : ok == 0;
    printf("%s %-22s decoded %d (first three passes consistent: %d)%s%s\n", good ? "PASS" : "FAIL", cases[i].name, ok,
           three_ok, ok ? "" : ": ", ok ? "" : v.why);
    fail |= !good;
    free(v.runs);
  }
  static const struct {
    const char *name;
    xform64 f;
    int (*where)(int j); /* NULL: must be refused */
  } cases64[] = {
      {"i64 copy", c64_same, at_same},     {"i64 reverse", c64_rev, at_rev},
      {"i64 plus one", c64_plus1, NULL},   {"i64 -> i32 -> i64", c64_via_i32, NULL},
      {"i64 constant mixed in", c64_pad, NULL},
  };
  for (size_t i = 0; i < sizeof cases64 / sizeof cases64[0]; i++) {
    gpu_cap_value v;
    int ok = decode64(cases64[i].f, &v);
    int good = cases64[i].where ? ok == 1 && runs_match(&v, cases64[i].where) : ok == 0;
    printf("%s %-22s decoded %d%s%s\n", good ? "PASS" : "FAIL", cases64[i].name, ok, ok ? "" : ": ", ok ? "" : v.why);
    fail |= !good;
    free(v.runs);
  }
  static const struct {
    const char *name;
    xform8 f;
    cov_dtype dt;
    int (*where)(int j); /* NULL: must be refused */
  } cases8[] = {
      {"i8 copy", c8_same, COV_I8, at_same},          {"u8 reverse", c8_rev, COV_U8, at_rev},
      {"i8 plus one", c8_plus1, COV_I8, NULL},        {"i8 relu", c8_relu, COV_I8, NULL},
      {"i8 constant mixed in", c8_pad, COV_I8, NULL},
  };
  for (size_t i = 0; i < sizeof cases8 / sizeof cases8[0]; i++) {
    gpu_cap_value v;
    int ok = decode8(cases8[i].f, cases8[i].dt, &v);
    int good = cases8[i].where ? ok == 1 && runs_match(&v, cases8[i].where) : ok == 0;
    printf("%s %-22s decoded %d%s%s\n", good ? "PASS" : "FAIL", cases8[i].name, ok, ok ? "" : ": ", ok ? "" : v.why);
    fail |= !good;
    free(v.runs);
  }
  return fail;
}

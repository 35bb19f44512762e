/* tests/gpu/test_gpu_qdot_jit.c: the integer dot-product kernel of
 * quantized layers (gpu_qdot.h) against the reference interpreter running
 * the codelets it replaces (conv2d_acc / matmul_acc, bias_add /
 * bias_add_chw / bias_add_2d, requant_*: codelets/quant.cdl), bit for bit.
 * Each case is lowered with a host table of target operations (no
 * dot4_i8: the products in plain IR), verified, optimised and run on this
 * CPU through LLVM's JIT, every work item in a scrambled order; its C
 * meaning (gpu_qdot_emulate, what the model emulation runs) is compared
 * too. Cases: strides, pads, dilations, groups, channel counts that are
 * not multiples of 4, 4, 2 and 1 output channels per work item,
 * per-channel and per-position biases, biases near the i32 limits (the
 * accumulator wraps), small operands with scales 1/2 and 1/4 that put
 * many results on a rounding tie, i8 and u8 results, the bare i32
 * accumulator, and matmuls. With -t TARGET each is also built as the
 * target's code object (PTX: its dp4a.s32.s32).
 * Usage: test_gpu_qdot_jit [-t TARGET]... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_qdot.h"
#include "gpu_jit_harness.h"

/* ---- cases ------------------------------------------------------------------- */

typedef struct qcase {
  const char *name;
  int matmul;                      /* x [N, C] x w [C, K] */
  int64_t N, C, H, W, K, R, S, sh, sw, pt, pl, pb, pr, dh, dw, groups;
  int bias;                        /* 0, 1 per channel, 2 per position */
  cov_dtype out;                   /* i8, u8 (requantised) or i32 */
  int ties;                        /* scales 2^-k: many products on a tie */
  int big_bias;                    /* biases near the i32 limits */
} qcase;

static const qcase k_cases[] = {
    {"conv3x3_pad1", 0, 1, 16, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, COV_I8, 0, 0},
    {"conv3x3_c3", 0, 2, 3, 9, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, COV_I8, 1, 0},
    {"conv_stride2_asym", 0, 1, 6, 11, 9, 4, 3, 2, 2, 2, 1, 0, 0, 1, 1, 1, 1, 1, COV_U8, 1, 0},
    {"conv_dilated", 0, 1, 5, 10, 10, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, COV_I8, 0, 0},
    {"conv_groups", 0, 2, 8, 6, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, COV_I8, 1, 0},
    {"conv_groups_kb4", 0, 1, 10, 5, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, COV_U8, 1, 0},
    {"conv_groups_kb2", 0, 1, 6, 7, 5, 4, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1, 2, 1, COV_I8, 0, 0},
    {"conv_depthwise", 0, 1, 7, 6, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7, 1, COV_U8, 0, 0},
    {"conv1x1_nobias", 0, 1, 12, 4, 4, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, COV_I8, 1, 0},
    {"conv_acc_i32", 0, 1, 5, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, COV_I32, 0, 1},
    {"conv_bias_wraps", 0, 1, 4, 4, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, COV_I8, 0, 1},
    {"matmul", 1, 3, 37, 1, 1, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, COV_I8, 1, 0},
    {"matmul_u8", 1, 5, 64, 1, 1, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, COV_U8, 0, 0},
    {"matmul_acc", 1, 2, 9, 1, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, COV_I32, 0, 0},
};

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t next32(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}

static cov_status alloc(cov_tensor *t, cov_dtype d, int rank, int64_t a, int64_t b, int64_t c, int64_t e) {
  int64_t shape[4] = {a, b, c, e};
  return cov_tensor_alloc(t, d, rank, shape);
}

/* The codelets' chain on the interpreter: y (out dtype). */
static cov_status reference(const cov_codelet_lib *lib, const qcase *q, const gpu_ew *e, cov_tensor *in, cov_tensor *y) {
  cov_tensor acc = {0}, b = {0};
  cov_attr at[9];
  size_t na = 0;
  if (!q->matmul) {
    const char *names[9] = {"stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right",
                            "dilation_h", "dilation_w", "groups"};
    int64_t vals[9] = {q->sh, q->sw, q->pt, q->pl, q->pb, q->pr, q->dh, q->dw, q->groups};
    for (; na < 9; na++) at[na] = (cov_attr){.name = names[na], .i = vals[na]};
  }
  cov_tensor io[2] = {in[0], in[1]};
  cov_status st = cov_codelet_run(cov_codelet_lib_find(lib, q->matmul ? "matmul_acc" : "conv2d_acc"), at, na, io, 2,
                                  &acc, 1);
  if (!st && q->bias) {
    const char *bn = q->matmul ? "bias_add_2d" : q->bias == 1 ? "bias_add" : "bias_add_chw";
    cov_tensor bi[2] = {acc, in[2]};
    st = cov_codelet_run(cov_codelet_lib_find(lib, bn), NULL, 0, bi, 2, &b, 1);
    cov_tensor_release(&acc);
    acc = b;
  }
  if (!st && e->out_dtype == COV_I32) {
    *y = acc;
    return NULL;
  }
  if (!st) {
    const char *rn = q->matmul ? (e->out_dtype == COV_I8 ? "requant_2d_i8" : "requant_2d_u8")
                               : (e->out_dtype == COV_I8 ? "requant_i8" : "requant_u8");
    cov_tensor ri[3] = {acc, in[3], in[4]};
    st = cov_codelet_run(cov_codelet_lib_find(lib, rn), NULL, 0, ri, 3, y, 1);
  }
  cov_tensor_release(&acc);
  return st;
}

/* The kernel's description of case q (as gpu_qdot_chain fills it). */
static void describe(const qcase *q, gpu_ew *e) {
  memset(e, 0, sizeof *e);
  e->kind = GPU_EW_QDOT, e->out_dtype = q->out, e->bias = q->bias;
  e->N = q->N, e->C = q->C, e->H = q->H, e->W = q->W, e->K = q->K, e->R = q->R, e->S = q->S;
  e->sh = q->sh, e->sw = q->sw, e->pt = q->pt, e->pl = q->pl, e->dh = q->dh, e->dw = q->dw, e->groups = q->groups;
  e->P = (q->H + q->pt + q->pb - q->dh * (q->R - 1) - 1) / q->sh + 1;
  e->Q = (q->W + q->pl + q->pr - q->dw * (q->S - 1) - 1) / q->sw + 1;
  e->n = e->N * e->K * e->P * e->Q / gpu_qdot_kb(e);
}

/* x, w, bias, m, zp: full-range i8 operands, biases and scales as the case asks */
static cov_status inputs(const qcase *q, const gpu_ew *e, cov_tensor *in) {
  cov_status st = q->matmul ? alloc(&in[0], COV_I8, 2, q->N, q->C, 0, 0) : alloc(&in[0], COV_I8, 4, q->N, q->C, q->H, q->W);
  if (!st) st = q->matmul ? alloc(&in[1], COV_I8, 2, q->C, q->K, 0, 0)
                          : alloc(&in[1], COV_I8, 4, q->K, q->C / q->groups, q->R, q->S);
  if (!st) st = q->bias == 2 ? alloc(&in[2], COV_I32, 3, e->K, e->P, e->Q, 0) : alloc(&in[2], COV_I32, 1, e->K, 0, 0, 0);
  if (!st) st = alloc(&in[3], COV_F32, 1, e->K, 0, 0, 0);
  if (!st) st = alloc(&in[4], COV_F32, 1, e->K, 0, 0, 0);
  if (st) return st;
  /* ties: operands in [-3, 3], so that the accumulators stay small and
   * the scales 1/2 and 1/4 put many of them on a tie */
  for (int t = 0; t < 2; t++)
    for (int64_t j = 0; j < cov_tensor_numel(&in[t]); j++)
      ((int8_t *)in[t].data)[j] = q->ties ? (int8_t)((int)(next32() % 7) - 3) : (int8_t)next32();
  for (int64_t j = 0; j < cov_tensor_numel(&in[2]); j++) {
    int32_t v = q->ties ? (int32_t)(next32() % 41) - 20 : (int32_t)(next32() % 200001) - 100000;
    if (q->big_bias) v = (int32_t)(next32() & 1 ? INT32_MAX - (next32() % 1000) : INT32_MIN + (next32() % 1000));
    ((int32_t *)in[2].data)[j] = v;
  }
  for (int64_t k = 0; k < e->K; k++) {
    float m = q->ties ? 1.0f / (float)(2 << (next32() % 2)) : (float)(next32() % 100000 + 1) * 1e-7f;
    ((float *)in[3].data)[k] = m;
    ((float *)in[4].data)[k] = q->out == COV_U8 ? (float)(next32() % 256) : (float)((int)(next32() % 256) - 128);
  }
  return NULL;
}

/* ---- the kernel ---------------------------------------------------------------- */

static cov_status lower(const void *e, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn) {
  return gpu_lower_qdot(e, ops, mod, fn);
}

static int check_case(const cov_codelet_lib *lib, const qcase *q, const gpu_jit_targets *tg) {
  gpu_ew e;
  describe(q, &e);
  cov_tensor in[5] = {{0}}, ref = {0};
  int32_t *packed = malloc((size_t)gpu_qdot_words(&e) * 4 + 4);
  int64_t n_out = e.N * e.K * e.P * e.Q;
  size_t ybytes = (size_t)n_out * cov_dtype_size(q->out);
  void *y_jit = malloc(ybytes + 1), *y_emu = malloc(ybytes + 1);
  cov_status st = packed && y_jit && y_emu ? inputs(q, &e, in) : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = reference(lib, q, &e, in, &ref);
  int ok = !st && cov_tensor_numel(&ref) == n_out;
  if (st) cov_status_print(stderr, st, 0), cov_status_free(st);
  if (ok) {
    gpu_qdot_pack(&e, in[1].data, q->matmul, packed);
    memset(y_jit, 0x5a, ybytes), memset(y_emu, 0xa5, ybytes);
    void *args[6] = {in[0].data, packed, y_jit, in[2].data, in[3].data, in[4].data};
    ok = !gpu_jit_run(q->name, lower, &e, e.n, args, 6) &&
         !gpu_jit_compare(q->name, "JIT", ref.dtype, y_jit, ref.data, n_out, NULL);
    gpu_qdot_emulate(&e, in[0].data, packed, y_emu, in[2].data, in[3].data, in[4].data);
    ok &= !gpu_jit_compare(q->name, "C meaning", ref.dtype, y_emu, ref.data, n_out, NULL);
  }
  for (int j = 0; j < tg->n && ok; j++) ok = !gpu_jit_build(q->name, &e, &tg->t[j], "dp4a.s32.s32");
  printf("%s %-20s %lld outputs, %d channels per work item\n", ok ? "ok  " : "FAIL", q->name, (long long)n_out,
         gpu_qdot_kb(&e));
  for (int i = 0; i < 5; i++) cov_tensor_release(&in[i]);
  cov_tensor_release(&ref);
  free(packed), free(y_jit), free(y_emu);
  return !ok;
}

int main(int argc, char **argv) {
  gpu_jit_init();
  gpu_jit_targets tg = {0};
  int fail = 0;
  cov_status st = NULL;
  for (int i = 1; i + 1 < argc && !st; i += 2)
    if (!strcmp(argv[i], "-t")) st = gpu_jit_target_add(&tg, argv[i + 1]);
  cov_codelet_lib *lib = NULL;
  if (!st) st = cov_codelet_lib_load(NULL, &lib);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    gpu_jit_targets_close(&tg);
    return 1;
  }
  for (size_t c = 0; c < sizeof k_cases / sizeof *k_cases; c++) fail |= check_case(lib, &k_cases[c], &tg);
  cov_codelet_lib_free(lib);
  gpu_jit_targets_close(&tg);
  return fail;
}

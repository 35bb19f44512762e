/* tests/gpu/test_gpu_ew_jit.c: the model compiler's layout copies between
 * channels-last and NCHW activations (gpu_lower_ew.c: a COPY with an f16
 * source or destination, the residual add and activation fused into it,
 * the second NHWC f16 store, SiLU, a squeeze-excite's gate) lowered with a host table of target
 * operations, verified, optimised at O2 and run on this CPU through LLVM's
 * JIT, every work item in a scrambled order; the results are compared
 * with naive loops written here (the transposes, the add, relu / relu6,
 * x * sigmoid(x), f16 rounding) and with gpu_ew_emulate, the C meaning the CPU emulation
 * of a compiled model uses. Usage: test_gpu_ew_jit */
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_target.h"
#include "backends/gpu/gpu_mplan.h"

static LLVMValueRef host_global(gpu_gen *g, const char *name) {
  LLVMValueRef v = LLVMGetNamedGlobal(g->mod, name);
  if (!v) {
    v = LLVMAddGlobal(g->mod, g->i32, name);
    LLVMSetInitializer(v, LLVMConstInt(g->i32, 0, 0));
  }
  return LLVMBuildLoad2(g->b, g->i32, v, "");
}
static LLVMValueRef host_tid(gpu_gen *g) { return host_global(g, "cov_tid"); }
static LLVMValueRef host_bid(gpu_gen *g, int d) {
  (void)d;
  return host_global(g, "cov_bid");
}
static LLVMValueRef host_exp2(gpu_gen *g, LLVMValueRef x) { return gpu_call_intrinsic(g, "llvm.exp2", &g->f32, 1, &x, 1); }
static void host_mark(gpu_gen *g, LLVMValueRef fn) { (void)g, (void)fn; }
static const gpu_target_ops k_host = {
    .name = "host", .mark_kernel = host_mark, .thread_id = host_tid, .block_id = host_bid, .exp2 = host_exp2};

typedef void (*kfn)(void *, void *, void *, void *);

static int fail_llvm(const char *what, LLVMErrorRef e) {
  char *m = LLVMGetErrorMessage(e);
  fprintf(stderr, "FAIL %s: %s\n", what, m);
  LLVMDisposeErrorMessage(m);
  return 1;
}

/* Lowers e, verifies, optimises and runs every work item on a[0..3]. */
static int run_jit(const gpu_ew *e, void **a) {
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("ew", LLVMOrcThreadSafeContextGetContext(tsc));
  cov_status st = gpu_lower_ew(e, &k_host, mod, "kern");
  char *msg = NULL;
  int bad = st != NULL;
  if (st) cov_status_print(stderr, st, 0), cov_status_free(st);
  if (!bad && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) fprintf(stderr, "FAIL: IR: %s\n", msg), bad = 1;
  LLVMDisposeMessage(msg);
  LLVMOrcLLJITRef J = NULL;
  LLVMErrorRef err = bad ? NULL : LLVMOrcCreateLLJIT(&J, NULL);
  if (err) bad = fail_llvm("JIT", err);
  if (bad) {
    LLVMDisposeModule(mod);
    LLVMOrcDisposeThreadSafeContext(tsc);
    return 1;
  }
  LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(J));
  LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(J));
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  err = LLVMRunPasses(mod, "default<O2>", NULL, po);
  LLVMDisposePassBuilderOptions(po);
  LLVMOrcDefinitionGeneratorRef gen;
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(J);
  if (!err) err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(J), NULL, NULL);
  if (!err) LLVMOrcJITDylibAddGenerator(jd, gen);
  if (!err) err = LLVMOrcLLJITAddLLVMIRModule(J, jd, LLVMOrcCreateNewThreadSafeModule(mod, tsc));
  else LLVMDisposeModule(mod);
  LLVMOrcDisposeThreadSafeContext(tsc);
  LLVMOrcExecutorAddress fa = 0, ta = 0, ba = 0;
  if (!err) err = LLVMOrcLLJITLookup(J, &fa, "kern");
  if (!err) err = LLVMOrcLLJITLookup(J, &ta, "cov_tid");
  if (!err) err = LLVMOrcLLJITLookup(J, &ba, "cov_bid");
  if (err) {
    fail_llvm("JIT build", err);
    LLVMOrcDisposeLLJIT(J);
    return 1;
  }
  kfn f = (kfn)(uintptr_t)fa;
  int32_t *tid = (int32_t *)(uintptr_t)ta, *bid = (int32_t *)(uintptr_t)ba;
  int64_t total = (e->n + GPU_EW_THREADS - 1) / GPU_EW_THREADS * GPU_EW_THREADS;
  for (int64_t i = 0; i < total; i++) { /* a scrambled order: no item may depend on another */
    int64_t item = i * 1000003 % total;
    *bid = (int32_t)(item / GPU_EW_THREADS), *tid = (int32_t)(item % GPU_EW_THREADS);
    f(a[0], a[1], a[2], a[3]);
  }
  LLVMOrcDisposeLLJIT(J);
  return 0;
}

enum { N = 2, CH = 24, H = 3, W = 5, HW = H * W, NUM = N * CH * HW };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 8.0f - 4.0f;
}
static float h16(float v) { return cov_f16_to_f32(cov_f32_to_f16(v)); }
static int64_t nchw(int64_t n, int64_t c, int64_t p) { return (n * CH + c) * HW + p; }
static int64_t nhwc(int64_t n, int64_t c, int64_t p) { return (n * HW + p) * CH + c; }

/* The copies as the channels-last pass builds them: to NHWC, consecutive
 * items on consecutive destination channels; back, on pixels. */
static gpu_ew layout_copy(int to_nhwc) {
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_COPY, e.n = NUM, e.run = 1;
  e.out_dtype = to_nhwc ? COV_F16 : COV_F32, e.in_dtype = to_nhwc ? COV_DTYPE_INVALID : COV_F16; /* f32, f16 */
  int64_t rep[3] = {CH, HW, N}, ss[3] = {HW, 1, CH * HW}, ds[3] = {1, CH, CH * HW};
  if (!to_nhwc) rep[0] = HW, rep[1] = CH, ss[0] = CH, ss[1] = 1, ds[0] = 1, ds[1] = HW;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = rep[l], e.ss[l] = ss[l], e.ds[l] = ds[l];
  return e;
}

static int compare(const char *what, const float *got, const float *want, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabsf(got[i] - want[i]) <= 1e-5f * fmaxf(1.0f, fabsf(want[i])))) { /* exp through 2^x */
      fprintf(stderr, "FAIL %s: element %lld is %g, %g expected\n", what, (long long)i, got[i], want[i]);
      return 1;
    }
  return 0;
}

static void widen(const uint16_t *h, float *f, int64_t n) {
  for (int64_t i = 0; i < n; i++) f[i] = cov_f16_to_f32(h[i]);
}

/* One case: x NCHW f32 (or NHWC f16), shortcut NCHW f32, the kernel's
 * outputs against the naive loops and against gpu_ew_emulate. */
static int check(const char *what, int to_nhwc, int add, gpu_ew_fn post, float hi, int also) {
  static float x32[NUM], sc[NUM], y32[NUM], want[NUM], want2[NUM], got[NUM], emu[NUM];
  static uint16_t x16[NUM], y16[NUM], w16[NUM];
  gpu_ew e = layout_copy(to_nhwc);
  e.bias = add, e.post = post, e.post0 = 0, e.post1 = hi, e.also = also;
  e.N = N, e.C = CH, e.H = H, e.W = W;
  for (int i = 0; i < NUM; i++) x32[i] = next(), x16[i] = cov_f32_to_f16(x32[i]), sc[i] = next();
  memset(y32, 0, sizeof y32), memset(y16, 0, sizeof y16), memset(w16, 0, sizeof w16);
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < CH; c++)
      for (int64_t p = 0; p < HW; p++) {
        if (to_nhwc) {
          want[nhwc(n, c, p)] = h16(x32[nchw(n, c, p)]);
          continue;
        }
        float v = cov_f16_to_f32(x16[nhwc(n, c, p)]) + (add ? sc[nchw(n, c, p)] : 0.0f);
        if (post == GPU_FN_RELU) v = v > 0 ? v : 0;
        if (post == GPU_FN_CLIP) v = v < 0 ? 0 : v > hi ? hi : v;
        if (post == GPU_FN_SILU) v = (float)(v / (1.0 + exp(-(double)v)));
        want[nchw(n, c, p)] = v, want2[nhwc(n, c, p)] = h16(v);
      }
  void *a[4] = {to_nhwc ? (void *)x32 : (void *)x16, w16, to_nhwc ? (void *)y16 : (void *)y32, sc};
  if (run_jit(&e, a)) return 1;
  if (to_nhwc) widen(y16, got, NUM);
  else memcpy(got, y32, sizeof got);
  int bad = compare(what, got, want, NUM);
  if (also) widen(w16, got, NUM), bad |= compare(what, got, want2, NUM);
  /* the emulation: f32 views, f16 values rounded as stored */
  float xv[NUM];
  widen(x16, xv, NUM);
  gpu_ew_emulate(&e, to_nhwc ? x32 : xv, NULL, emu, sc, NULL);
  for (int i = 0; to_nhwc && i < NUM; i++) emu[i] = h16(emu[i]);
  bad |= compare(what, emu, want, NUM);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

/* A squeeze-excite's gate: y = x * sigmoid(gate[channel]) on NCHW f32,
 * written f32 or as the next matrix kernel's f16 operand. */
static int check_gate(const char *what, cov_dtype out) {
  static float x[NUM], gate[N * CH], want[NUM], got[NUM], y32[NUM];
  static uint16_t y16[NUM];
  gpu_ew e;
  memset(&e, 0, sizeof e);
  e.kind = GPU_EW_COPY, e.n = NUM, e.out_dtype = out, e.scale_hw = HW;
  for (int l = 0; l < GPU_COPY_LEVELS; l++) e.rep[l] = 1;
  for (int i = 0; i < NUM; i++) x[i] = next();
  for (int i = 0; i < N * CH; i++) gate[i] = next();
  for (int i = 0; i < NUM; i++) {
    double v = x[i] / (1.0 + exp(-(double)gate[i / HW]));
    want[i] = out == COV_F16 ? h16((float)v) : (float)v;
  }
  void *a[4] = {x, NULL, out == COV_F16 ? (void *)y16 : (void *)y32, gate};
  if (run_jit(&e, a)) return 1;
  if (out == COV_F16) widen(y16, got, NUM);
  else memcpy(got, y32, sizeof got);
  int bad = compare(what, got, want, NUM);
  gpu_ew_emulate(&e, x, NULL, got, gate, NULL);
  for (int i = 0; out == COV_F16 && i < NUM; i++) got[i] = h16(got[i]);
  bad |= compare(what, got, want, NUM);
  if (!bad) printf("ok: %s\n", what);
  return bad;
}

int main(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  int fail = 0;
  fail |= check("NCHW f32 -> NHWC f16", 1, 0, GPU_FN_NONE, 0, 0);
  fail |= check("NHWC f16 -> NCHW f32", 0, 0, GPU_FN_NONE, 0, 0);
  fail |= check("NHWC f16 + shortcut, relu -> NCHW f32 and NHWC f16", 0, 1, GPU_FN_RELU, 0, 1);
  fail |= check("NHWC f16 + shortcut, relu6 -> NCHW f32", 0, 1, GPU_FN_CLIP, 6, 0);
  fail |= check("NHWC f16, x * sigmoid(x) -> NCHW f32", 0, 0, GPU_FN_SILU, 0, 0);
  fail |= check_gate("x * sigmoid(gate per channel) -> f32", COV_F32);
  fail |= check_gate("x * sigmoid(gate per channel) -> f16", COV_F16);
  return fail;
}

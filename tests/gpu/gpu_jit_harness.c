/* tests/gpu/gpu_jit_harness.c: the JIT tests' host target, JIT runner,
 * comparisons and GPU builds (gpu_jit_harness.h). */
#include "gpu_jit_harness.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "common/loc.h"

/* ---- the host's target operations ------------------------------------------ */

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
const gpu_target_ops gpu_jit_host = {
    .name = "host", .mark_kernel = host_mark, .thread_id = host_tid, .block_id = host_bid, .exp2 = host_exp2};

void gpu_jit_init(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
}

/* ---- the JIT ----------------------------------------------------------------- */

static int fail_llvm(const char *name, const char *what, LLVMErrorRef e) {
  char *m = LLVMGetErrorMessage(e);
  fprintf(stderr, "FAIL %s: %s: %s\n", name, what, m);
  LLVMDisposeErrorMessage(m);
  return 1;
}

/* The kernel's module lowered and verified into a new JIT (*out_jit), or 1
 * after saying why; mod and tsc are consumed either way. */
static int jit_module(const char *name, LLVMOrcThreadSafeContextRef tsc, LLVMModuleRef mod, cov_status lowered,
                      gpu_jit_define_fn define, LLVMOrcLLJITRef *out_jit) {
  char *msg = NULL;
  int bad = lowered != NULL;
  if (lowered) cov_status_print(stderr, lowered, 0), cov_status_free(lowered);
  if (!bad && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    fprintf(stderr, "FAIL %s: the IR does not verify: %s\n", name, msg);
    bad = 1;
  }
  LLVMDisposeMessage(msg);
  LLVMOrcLLJITRef J = NULL;
  LLVMErrorRef err = bad ? NULL : LLVMOrcCreateLLJIT(&J, NULL);
  if (err) bad = fail_llvm(name, "JIT", err);
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
  /* the process's own symbols (libm) for what the kernel calls */
  LLVMOrcDefinitionGeneratorRef gen;
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(J);
  if (!err) err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(J), NULL, NULL);
  if (!err) LLVMOrcJITDylibAddGenerator(jd, gen);
  if (!err && define) err = define(J, jd);
  if (!err) err = LLVMOrcLLJITAddLLVMIRModule(J, jd, LLVMOrcCreateNewThreadSafeModule(mod, tsc));
  else LLVMDisposeModule(mod);
  LLVMOrcDisposeThreadSafeContext(tsc);
  if (err) {
    fail_llvm(name, "JIT build", err);
    LLVMOrcDisposeLLJIT(J);
    return 1;
  }
  *out_jit = J;
  return 0;
}

int gpu_jit_compile(const char *name, gpu_jit_lower_fn lower, const void *what, const gpu_target_ops *ops,
                    gpu_jit_define_fn define, gpu_jit_kernel *out) {
  memset(out, 0, sizeof *out);
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("kern", LLVMOrcThreadSafeContextGetContext(tsc));
  cov_status st = lower(what, ops, mod, "kern");
  LLVMOrcLLJITRef J = NULL;
  if (jit_module(name, tsc, mod, st, define, &J)) return 1;
  LLVMOrcExecutorAddress fa = 0, ta = 0, ba = 0;
  LLVMErrorRef err = LLVMOrcLLJITLookup(J, &fa, "kern");
  if (!err && ops == &gpu_jit_host) err = LLVMOrcLLJITLookup(J, &ta, "cov_tid");
  if (!err && ops == &gpu_jit_host) err = LLVMOrcLLJITLookup(J, &ba, "cov_bid");
  if (err) {
    fail_llvm(name, "JIT lookup", err);
    LLVMOrcDisposeLLJIT(J);
    return 1;
  }
  out->jit = J;
  out->fn = (gpu_jit_fn)(uintptr_t)fa;
  out->tid = (int32_t *)(uintptr_t)ta, out->bid = (int32_t *)(uintptr_t)ba;
  return 0;
}

LLVMErrorRef gpu_jit_define_host(LLVMOrcLLJITRef J, LLVMOrcJITDylibRef jd, const char *const *names,
                                 const LLVMOrcExecutorAddress *addr, int n) {
  LLVMOrcCSymbolMapPair pairs[8];
  if (n < 0 || n > 8) n = 0;
  for (int i = 0; i < n; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(J, names[i]);
    pairs[i].Sym.Address = addr[i];
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  return LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(pairs, (size_t)n));
}

LLVMValueRef gpu_jit_host_call_i32(gpu_gen *g, const char *name, LLVMValueRef *args, int n) {
  LLVMTypeRef at[2] = {g->i32, g->i32};
  LLVMTypeRef ft = LLVMFunctionType(g->i32, at, (unsigned)n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
  if (!f) f = LLVMAddFunction(g->mod, name, ft);
  return LLVMBuildCall2(g->b, ft, f, args, (unsigned)n, "");
}

void gpu_jit_kernel_free(gpu_jit_kernel *k) {
  if (k->jit) LLVMOrcDisposeLLJIT(k->jit);
  memset(k, 0, sizeof *k);
}

int gpu_jit_run(const char *name, gpu_jit_lower_fn lower, const void *what, int64_t threads, void *const *args,
                int n_args) {
  if (n_args < 0 || n_args > GPU_JIT_MAX_ARGS) {
    fprintf(stderr, "FAIL %s: %d kernel arguments, at most %d\n", name, n_args, GPU_JIT_MAX_ARGS);
    return 1;
  }
  gpu_jit_kernel k;
  if (gpu_jit_compile(name, lower, what, &gpu_jit_host, NULL, &k)) return 1;
  void *a[GPU_JIT_MAX_ARGS] = {0};
  for (int i = 0; i < n_args; i++) a[i] = args[i];
  int64_t total = (threads + GPU_EW_THREADS - 1) / GPU_EW_THREADS * GPU_EW_THREADS;
  /* a prime step above the count: no item may depend on another */
  for (int64_t i = 0; i < total; i++) {
    int64_t item = i * 1000003 % total;
    *k.bid = (int32_t)(item / GPU_EW_THREADS), *k.tid = (int32_t)(item % GPU_EW_THREADS);
    k.fn(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
  }
  gpu_jit_kernel_free(&k);
  return 0;
}

/* ---- comparisons ------------------------------------------------------------- */

double gpu_jit_elem(cov_dtype d, const void *data, int64_t i) {
  const unsigned char *p = (const unsigned char *)data + (size_t)i * cov_dtype_size(d);
  switch (d) {
  case COV_F32: { float f; memcpy(&f, p, 4); return f; }
  case COV_F16: { uint16_t h; memcpy(&h, p, 2); return cov_f16_to_f32(h); }
  case COV_BF16: { uint16_t h; memcpy(&h, p, 2); return cov_bf16_to_f32(h); }
  case COV_F64: { double v; memcpy(&v, p, 8); return v; }
  case COV_I8: return (int8_t)*p;
  case COV_U8: case COV_BOOL: return *p;
  case COV_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case COV_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
  default: return 0;
  }
}

int gpu_jit_compare(const char *name, const char *who, cov_dtype d, const void *got, const void *want, int64_t n,
                    gpu_jit_close_fn close) {
  for (int64_t i = 0; i < n; i++) {
    double g = gpu_jit_elem(d, got, i), w = gpu_jit_elem(d, want, i);
    if (close ? close(g, w, d) : g == w) continue;
    /* floats to f32's precision, integers whole */
    const char *fmt = d == COV_F32 || d == COV_F16 || d == COV_BF16 ? "FAIL %s: %s element %lld: %.9g, %.9g expected\n"
                                                                    : "FAIL %s: %s element %lld: %.17g, %.17g expected\n";
    fprintf(stderr, fmt, name, who, (long long)i, g, w);
    return 1;
  }
  return 0;
}

/* ---- GPU targets ------------------------------------------------------------- */

double gpu_jit_unit(uint64_t *rng) {
  *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
  return (double)(*rng >> 11) * (1.0 / 9007199254740992.0);
}

float gpu_jit_h16(float v) { return cov_f16_to_f32(cov_f32_to_f16(v)); }

int gpu_jit_targets_from_args(int argc, char **argv, gpu_jit_targets *ts) {
  cov_status st = NULL;
  for (int i = 1; i + 1 < argc && !st; i += 2)
    if (!strcmp(argv[i], "-t")) st = gpu_jit_target_add(ts, argv[i + 1]);
  if (!st) return 0;
  cov_status_print(stderr, st, 0);
  cov_status_free(st);
  gpu_jit_targets_close(ts);
  return 1;
}

cov_status gpu_jit_target_add(gpu_jit_targets *ts, const char *name) {
  if (ts->n >= GPU_JIT_MAX_TARGETS)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("-t", name), "at most %d targets", GPU_JIT_MAX_TARGETS);
  cov_status st = gpu_target_open(backend_gpu_vendors(), name, COV_F16, &ts->t[ts->n]);
  if (!st) ts->n++;
  return st;
}

void gpu_jit_targets_close(gpu_jit_targets *ts) {
  for (int j = 0; j < ts->n; j++) gpu_target_close(&ts->t[j]);
  ts->n = 0;
}

int gpu_jit_build(const char *name, const gpu_ew *e, const gpu_target *t, const char *needle) {
  char *code = NULL;
  size_t size = 0;
  gpu_kernel_info info;
  cov_status st = gpu_build_ew_kernel(t, e, "covenant_kern", &code, &size, &info);
  int bad = st || size == 0 || (t->vendor->code_text && !strstr(code, needle));
  if (bad) fprintf(stderr, "FAIL %s: no code object holding '%s' for %s\n", name, needle, cov_acg_name(t->acg));
  if (st) cov_status_print(stderr, st, 0);
  cov_status_free(st);
  free(code);
  return bad;
}

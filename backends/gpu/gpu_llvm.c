/* backends/gpu/gpu_llvm.c: verify -> O-level pipeline -> object/assembly. */
#include "backends/gpu/gpu_llvm.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/loc.h"

/* LLVM's target registry is process-global; registering twice is harmless
 * but racy, so do it once. */
static pthread_once_t g_targets_once = PTHREAD_ONCE_INIT;

static void init_targets(void) {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();
  /* the object streamer assembles inline asm (the AMDGPU barrier) */
  LLVMInitializeAMDGPUAsmParser();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

/* the location of a diagnostic: the kernel module (named after its layer) */
static const char *module_name(LLVMModuleRef module) {
  size_t n;
  return LLVMGetModuleIdentifier(module, &n);
}

static cov_status llvm_failure(LLVMModuleRef module, const char *what, char *msg) {
  cov_status st =
      cov_error(COV_INTERNAL, COV_AT(NULL, module_name(module)), "LLVM %s failed: %s", what, msg ? msg : "?");
  LLVMDisposeMessage(msg);
  return st;
}

cov_status gpu_llvm_emit(LLVMModuleRef module, const gpu_emit_options *opts, char **out_data,
                         size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  pthread_once(&g_targets_once, init_targets);
  if (opts->opt_level < 0 || opts->opt_level > 3)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, module_name(module)), "optimisation level %d (expected 0..3)",
                     opts->opt_level);

  char *msg = NULL;
  if (LLVMVerifyModule(module, LLVMReturnStatusAction, &msg))
    return llvm_failure(module, "module verification", msg);
  LLVMDisposeMessage(msg);
  msg = NULL;

  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(opts->triple, &target, &msg))
    return llvm_failure(module, "target lookup", msg);
  LLVMCodeGenOptLevel level = opts->opt_level == 0   ? LLVMCodeGenLevelNone
                              : opts->opt_level == 1 ? LLVMCodeGenLevelLess
                              : opts->opt_level == 2 ? LLVMCodeGenLevelDefault
                                                     : LLVMCodeGenLevelAggressive;
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, opts->triple, opts->mcpu, opts->features ? opts->features : "",
                              level, LLVMRelocPIC, LLVMCodeModelDefault);
  if (!tm) return cov_error(COV_INTERNAL, COV_AT(NULL, module_name(module)), "LLVM could not create a target machine for %s/%s",
                            opts->triple, opts->mcpu);
  LLVMSetTarget(module, opts->triple);
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(module, layout);
  LLVMDisposeTargetData(layout);

  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", opts->opt_level);
  LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(module, pipeline, tm, pbo);
  LLVMDisposePassBuilderOptions(pbo);
  if (err) {
    LLVMDisposeTargetMachine(tm);
    return llvm_failure(module, "optimisation", LLVMGetErrorMessage(err));
  }

  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(
          tm, module, opts->kind == GPU_EMIT_OBJECT ? LLVMObjectFile : LLVMAssemblyFile, &msg,
          &buf)) {
    LLVMDisposeTargetMachine(tm);
    return llvm_failure(module, "code generation", msg);
  }
  LLVMDisposeTargetMachine(tm);
  size_t n = LLVMGetBufferSize(buf);
  char *data = malloc(n + 1);
  if (!data) {
    LLVMDisposeMemoryBuffer(buf);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory copying emitted code");
  }
  memcpy(data, LLVMGetBufferStart(buf), n);
  data[n] = '\0';
  LLVMDisposeMemoryBuffer(buf);
  *out_data = data;
  *out_size = n;
  return NULL;
}

/* backends/gpu/gpu_llvm.h: the LLVM end of every GPU backend.
 *
 * GPU backends build an LLVM module in memory through the C API (no IR text
 * templates) and hand it here: verify, optimise with the new pass manager,
 * and emit an object file (AMDGPU) or assembly (NVPTX's PTX) for a target
 * triple and processor taken from the ACG's backend section. */
#ifndef COV_GPU_LLVM_H
#define COV_GPU_LLVM_H

#include <llvm-c/Core.h>
#include <stddef.h>

#include "covenant/status.h"

typedef enum gpu_emit_kind { GPU_EMIT_OBJECT, GPU_EMIT_ASSEMBLY } gpu_emit_kind;

typedef struct gpu_emit_options {
  const char *triple;   /* "amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda" */
  const char *mcpu;     /* "gfx90a", "sm_90a" */
  const char *features; /* "" or "+ptx80" ... */
  int opt_level;        /* 0..3: the pass pipeline "default<On>" and codegen level */
  gpu_emit_kind kind;
} gpu_emit_options;

/* Verifies, optimises and emits `module` (which stays owned by the caller).
 * On success *out_data is malloc'ed (free it) and *out_size its length. */
cov_status gpu_llvm_emit(LLVMModuleRef module, const gpu_emit_options *opts, char **out_data,
                         size_t *out_size);

#endif

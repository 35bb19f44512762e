/* backends/nvptx/nvptx_ptx.h: LLVM module -> PTX text for the CUDA driver. */
#ifndef COV_NVPTX_PTX_H
#define COV_NVPTX_PTX_H

#include <llvm-c/Core.h>
#include <stddef.h>

#include "covenant/status.h"

/* Marks `fn` as a kernel entry point (nvvm.annotations "kernel"), which is
 * how LLVM 19's NVPTX backend tells entries from device functions. */
void nvptx_mark_kernel(LLVMModuleRef module, LLVMValueRef fn);

/* Emits PTX for `mcpu` (e.g. "sm_90a", PTX ISA 8.0). *out_ptx is malloc'ed
 * and NUL-terminated, as cuModuleLoadData wants it. */
cov_status nvptx_ptx_build(LLVMModuleRef module, const char *mcpu, int opt_level, char **out_ptx,
                           size_t *out_size);

#endif

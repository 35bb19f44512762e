/* backends/nvptx/nvptx_ptx.c: kernel marking and PTX emission. */
#include "backends/nvptx/nvptx_ptx.h"

#include <string.h>

#include "backends/gpu/gpu_llvm.h"

void nvptx_mark_kernel(LLVMModuleRef module, LLVMValueRef fn) {
  LLVMContextRef ctx = LLVMGetModuleContext(module);
  LLVMMetadataRef ops[3] = {
      LLVMValueAsMetadata(fn),
      LLVMMDStringInContext2(ctx, "kernel", 6),
      LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), 1, 0)),
  };
  LLVMAddNamedMetadataOperand(module, "nvvm.annotations",
                              LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, ops, 3)));
}

cov_status nvptx_ptx_build(LLVMModuleRef module, const char *mcpu, int opt_level, char **out_ptx,
                           size_t *out_size) {
  /* PTX 8.0 is what sm_90a needs and what LLVM 19 can write. */
  gpu_emit_options eo = {.triple = "nvptx64-nvidia-cuda", .mcpu = mcpu, .features = "+ptx80",
                         .opt_level = opt_level, .kind = GPU_EMIT_ASSEMBLY};
  return gpu_llvm_emit(module, &eo, out_ptx, out_size);
}

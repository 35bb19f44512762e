/* backends/amdgpu/amdgpu_hsaco.h: LLVM module -> HSACO code object.
 *
 * AMD's loaders take a HSACO: a shared ELF linked from the object LLVM emits
 * for amdgcn-amd-amdhsa. Like TVM, covenant links it with ld.lld (found as
 * $COVENANT_LD_LLD, else ld.lld-19, else ld.lld on PATH). */
#ifndef COV_AMDGPU_HSACO_H
#define COV_AMDGPU_HSACO_H

#include <llvm-c/Core.h>
#include <stddef.h>

#include "covenant/status.h"

typedef struct amdgpu_hsaco_options {
  const char *mcpu;            /* "gfx90a", "gfx942" */
  unsigned code_object_version; /* 4 (Debian's HIP 5.2) or 5 (current ROCm) */
  int opt_level;               /* 0..3 */
} amdgpu_hsaco_options;

/* Sets the code-object-version module flag, emits and links. On success
 * *out_hsaco is malloc'ed. */
cov_status amdgpu_hsaco_build(LLVMModuleRef module, const amdgpu_hsaco_options *opts,
                              char **out_hsaco, size_t *out_size);

#endif

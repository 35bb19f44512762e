/* backends/gpu/gpu_build.c: one kernel built: a plan (or a generic
 * kernel) lowered to LLVM IR in its own context and emitted as the target's
 * code object by its vendor. */
#include <string.h>

#include "backends/gpu/gpu_attn.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_target.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_vendor.h"

cov_status gpu_build_kernel(const gpu_target *t, const gpu_plan *plan, const char *kernel,
                            unsigned code_object_version, char **out, size_t *out_size,
                            gpu_kernel_info *info) {
  *out = NULL;
  *out_size = 0;
  memset(info, 0, sizeof *info);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(kernel, ctx);
  cov_status st = gpu_lower(plan, t->ops, mod, kernel);
  if (!st) st = t->vendor->build(mod, t->acg, plan, code_object_version, out, out_size, info);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return st;
}

cov_status gpu_build_ew_kernel(const gpu_target *t, const struct gpu_ew *e, const char *kernel, char **out,
                               size_t *out_size, gpu_kernel_info *info) {
  *out = NULL;
  *out_size = 0;
  memset(info, 0, sizeof *info);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(kernel, ctx);
  gpu_plan plan = {0}; /* what the vendor reads of a plan: the threads */
  plan.threads = GPU_EW_THREADS;
  plan.prob.in_dtype = COV_F32;
  cov_status st = gpu_lower_ew(e, t->ops, mod, kernel);
  if (!st) st = t->vendor->build(mod, t->acg, &plan, 0, out, out_size, info);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return st;
}

cov_status gpu_build_attn_kernel(const gpu_target *t, const gpu_attn *a, const char *kernel, char **out,
                                 size_t *out_size, gpu_kernel_info *info) {
  *out = NULL;
  *out_size = 0;
  memset(info, 0, sizeof *info);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(kernel, ctx);
  gpu_plan plan; /* what the vendor reads of a plan: threads, dtype, matrix shape */
  gpu_attn_vendor_plan(a, &plan);
  cov_status st = gpu_lower_attn(a, t->ops, mod, kernel);
  if (!st) st = t->vendor->build(mod, t->acg, &plan, 0, out, out_size, info);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return st;
}

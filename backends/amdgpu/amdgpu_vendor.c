/* backends/amdgpu/amdgpu_vendor.c: AMD as a GPU vendor: the target
 * operations (amdgpu_target.c), HSACO emission (amdgpu_hsaco.c) with the
 * register counts read back from the assembly, and the HIP module API
 * (crt_hip.c) behind gpu_vendor's face. */
#include "backends/amdgpu/amdgpu_vendor.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "runtime/crt_hip.h"
#include "backends/amdgpu/amdgpu_hsaco.h"
#include "backends/amdgpu/amdgpu_target.h"
#include "backends/gpu/gpu_llvm.h"

/* Parses the AMDGPU assembly's metadata for the report. */
static long asm_field(const char *text, const char *key) {
  const char *p = strstr(text, key);
  return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static cov_status build(LLVMModuleRef mod, const cov_acg *acg, const gpu_plan *plan, unsigned code_object_version,
                        char **out, size_t *out_size, gpu_kernel_info *info) {
  (void)plan; /* the code object says what LDS it uses */
  unsigned ver = code_object_version ? code_object_version : acg->backend.code_object_version;
  if (!ver) ver = 5;
  /* the same module, also as assembly, for the register counts */
  LLVMModuleRef twin = LLVMCloneModule(mod);
  amdgpu_hsaco_options ho = {.mcpu = acg->backend.mcpu, .code_object_version = ver, .opt_level = 3};
  cov_status st = amdgpu_hsaco_build(mod, &ho, out, out_size);
  if (!st) {
    LLVMAddModuleFlag(twin, LLVMModuleFlagBehaviorError, "amdhsa_code_object_version",
                      strlen("amdhsa_code_object_version"),
                      LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(LLVMGetModuleContext(mod)), ver * 100, 0)));
    gpu_emit_options eo = {.triple = "amdgcn-amd-amdhsa", .mcpu = acg->backend.mcpu, .features = "",
                           .opt_level = 3, .kind = GPU_EMIT_ASSEMBLY};
    char *text = NULL;
    size_t n = 0;
    st = gpu_llvm_emit(twin, &eo, &text, &n);
    if (!st) {
      info->vgprs = asm_field(text, ".vgpr_count:");
      info->agprs = asm_field(text, ".agpr_count:");
      info->lds_bytes = asm_field(text, ".group_segment_fixed_size:");
      info->scratch_bytes = asm_field(text, ".private_segment_fixed_size:");
    }
    free(text);
  }
  LLVMDisposeModule(twin);
  if (st) {
    free(*out);
    *out = NULL;
  }
  return st;
}

static cov_status open_rt(void **rt) { return crt_hip_open((crt_hip **)rt); }
static void close_rt(void *rt) { crt_hip_close(rt); }
static const char *device_name(const void *rt) { return crt_hip_device_name(rt); }
static cov_status alloc(void *rt, size_t bytes, uint64_t *out) {
  void *p = NULL;
  COV_RETURN_IF_ERROR(crt_hip_alloc(rt, bytes, &p));
  *out = (uint64_t)(uintptr_t)p;
  return NULL;
}
static void free_mem(void *rt, uint64_t p) { crt_hip_free(rt, (void *)(uintptr_t)p); }
static cov_status upload(void *rt, uint64_t dst, const void *src, size_t bytes) {
  return crt_hip_upload(rt, (void *)(uintptr_t)dst, src, bytes);
}
static cov_status download(void *rt, void *dst, uint64_t src, size_t bytes) {
  return crt_hip_download(rt, dst, (const void *)(uintptr_t)src, bytes);
}
static cov_status load(void *rt, const char *code, void **mod) {
  return crt_hip_load(rt, code, (crt_hip_module **)mod);
}
static void unload(void *rt, void *mod) { crt_hip_unload(rt, mod); }
static cov_status launch(void *rt, void *mod, const char *kernel, const unsigned grid[3], const unsigned block[3],
                         unsigned shared_bytes, void **args, float *out_ms) {
  return crt_hip_launch(rt, mod, kernel, grid, block, shared_bytes, args, out_ms);
}

/* Waves per SIMD that the registers allow: 512 per lane, allocated in
 * granules of 8 (VGPRs and AGPRs together), at most 8. */
static void occupancy(long workgroups, const gpu_kernel_info *info, char *buf, size_t n) {
  (void)workgroups;
  long regs = info->vgprs + (info->agprs > 0 ? info->agprs : 0);
  long granule = (regs + 7) / 8 * 8, waves = granule > 0 ? 512 / granule : 0;
  if (waves > 8) waves = 8;
  snprintf(buf, n, "%ldw/SIMD", waves);
}

const gpu_vendor amdgpu_vendor = {
    .backend = "amdgpu",
    .ops = &amdgpu_target_ops,
    .code_ext = "hsaco",
    .code_text = 0,
    .jit_registers = 0,
    .occupancy = occupancy,
    .build = build,
    .open = open_rt,
    .close = close_rt,
    .device_name = device_name,
    .alloc = alloc,
    .free = free_mem,
    .upload = upload,
    .download = download,
    .load = load,
    .unload = unload,
    .launch = launch,
};

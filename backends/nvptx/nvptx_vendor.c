/* backends/nvptx/nvptx_vendor.c: NVIDIA as a GPU vendor: the target
 * operations (nvptx_target.c), PTX emission (nvptx_ptx.c) and the CUDA
 * driver API (crt_cuda.c) behind gpu_vendor's face. crt_cuda.c itself
 * stays free of LLVM (it also builds on a GPU machine without it). */
#include "backends/nvptx/nvptx_vendor.h"

#include "acg/acg_ir.h"
#include "runtime/crt_cuda.h"
#include "backends/nvptx/nvptx_ptx.h"
#include "backends/nvptx/nvptx_target.h"

static cov_status build(LLVMModuleRef mod, const cov_acg *acg, const gpu_plan *plan, unsigned code_object_version,
                        char **out, size_t *out_size, gpu_kernel_info *info) {
  (void)code_object_version; /* an AMDGPU notion */
  cov_status st = nvptx_ptx_build(mod, acg->backend.mcpu, 3, out, out_size);
  info->vgprs = info->agprs = -1; /* ptxas assigns registers at load time */
  info->lds_bytes = (long)plan->shared_bytes;
  return st;
}

static cov_status open_rt(void **rt) { return crt_cuda_open((crt_cuda **)rt); }
static void close_rt(void *rt) { crt_cuda_close(rt); }
static const char *device_name(const void *rt) { return crt_cuda_device_name(rt); }
static cov_status alloc(void *rt, size_t bytes, uint64_t *out) {
  crt_devptr p = 0;
  COV_RETURN_IF_ERROR(crt_cuda_alloc(rt, bytes, &p));
  *out = p;
  return NULL;
}
static void free_mem(void *rt, uint64_t p) { cov_status_free(crt_cuda_free(rt, p)); }
static cov_status upload(void *rt, uint64_t dst, const void *src, size_t bytes) {
  return crt_cuda_upload(rt, dst, src, bytes);
}
static cov_status download(void *rt, void *dst, uint64_t src, size_t bytes) {
  return crt_cuda_download(rt, dst, src, bytes);
}
static cov_status load(void *rt, const char *code, void **mod) {
  return crt_cuda_load(rt, code, (crt_cuda_module **)mod);
}
static void unload(void *rt, void *mod) { crt_cuda_unload(rt, mod); }
static cov_status launch(void *rt, void *mod, const char *kernel, const unsigned grid[3], const unsigned block[3],
                         unsigned shared_bytes, void **args, float *out_ms) {
  return crt_cuda_launch(rt, mod, kernel, grid, block, shared_bytes, args, out_ms);
}

/* Workgroups per SM that shared memory allows (the registers are the
 * driver's, assigned when it loads the PTX). */
static void occupancy(long workgroups, const gpu_kernel_info *info, char *buf, size_t n) {
  (void)info;
  snprintf(buf, n, "%ld WG/SM", workgroups);
}

const gpu_vendor nvptx_vendor = {
    .backend = "nvptx",
    .ops = &nvptx_target_ops,
    .code_ext = "ptx",
    .code_text = 1,
    .jit_registers = 1,
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

/* backends/gpu/gpu_vendor.h: what a GPU vendor module (backends/amdgpu,
 * backends/nvptx) supplies to the shared GPU code, and the shared code's
 * entry points that take the vendors.
 *
 * The shared code names no vendor: each vendor module defines one
 * gpu_vendor (amdgpu_vendor, nvptx_vendor), and the backend registry
 * (backends/registry), the one module above both, hands the list of them
 * to gpu_target_open, gpu_compile, gpu_run and gpu_run_model. So the
 * vendors depend on gpu and gpu on no vendor (cmake/modules.txt). */
#ifndef COV_GPU_VENDOR_H
#define COV_GPU_VENDOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_target.h"
#include "covenant/acg.h"
#include "covenant/gpu.h"

typedef struct gpu_vendor {
  const char *backend;       /* the ACG backend.name it serves: "amdgpu", "nvptx" */
  const gpu_target_ops *ops; /* the lowering's target questions (gpu_target.h) */
  const char *code_ext;      /* file extension of a code object: "hsaco", "ptx" */
  int code_text;             /* 1: a code object is text the driver reads to its NUL, which artifacts keep */
  int jit_registers;         /* 1: registers are assigned when the driver loads the code */
  /* The report's occupancy of a kernel (covenant compile --report) into
   * buf: `workgroups` is how many its shared memory lets a core hold; the
   * vendor's own rule adds what the registers allow. */
  void (*occupancy)(long workgroups, const gpu_kernel_info *info, char *buf, size_t n);
  /* Emits `mod` (one lowered kernel) as a code object for acg's mcpu;
   * code_object_version 0 is the ACG's. Fills what it knows of info
   * (gpu_kernel_info: -1 where unknown). */
  cov_status (*build)(LLVMModuleRef mod, const cov_acg *acg, const gpu_plan *plan, unsigned code_object_version,
                      char **out, size_t *out_size, gpu_kernel_info *info);
  /* The runtime (loaded with dlopen): device pointers travel as 64-bit
   * values, which is what both kernel ABIs take. */
  cov_status (*open)(void **rt);
  void (*close)(void *rt);
  const char *(*device_name)(const void *rt);
  cov_status (*alloc)(void *rt, size_t bytes, uint64_t *out);
  void (*free)(void *rt, uint64_t p);
  cov_status (*upload)(void *rt, uint64_t dst, const void *src, size_t bytes);
  cov_status (*download)(void *rt, void *dst, uint64_t src, size_t bytes);
  cov_status (*load)(void *rt, const char *code, void **mod);
  void (*unload)(void *rt, void *mod);
  cov_status (*launch)(void *rt, void *mod, const char *kernel, const unsigned grid[3], const unsigned block[3],
                       unsigned shared_bytes, void **args, float *out_ms);
} gpu_vendor;

/* NULL-terminated list of vendors; the target's backend.name picks one. */
typedef const gpu_vendor *const *gpu_vendors;

/* The public cov_gpu_compile, cov_gpu_run and cov_gpu_run_model
 * (include/covenant/gpu.h) with the vendors to choose from; the registry
 * defines the public ones with its table. */
cov_status gpu_compile(gpu_vendors vendors, const cov_gpu_options *opts, const char *const *specs, int n_specs,
                       const char *out_dir, FILE *report);
cov_status gpu_run(gpu_vendors vendors, const cov_gpu_options *opts, const char *const *specs, int n_specs,
                   FILE *out);
cov_status gpu_run_model(gpu_vendors vendors, const cov_gpu_options *opts, const char *path, double tolerance,
                         cov_gpu_inputs_fn inputs, void *user, FILE *out);

#endif

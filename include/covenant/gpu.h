/* covenant/gpu.h: compiling layers for GPU targets (AMDGPU, NVPTX) and
 * running them (CUDA driver API / HIP module API).
 *
 * Layers are named by spec (see backends/gpu/gpu_layer.h): a suite entry,
 * NAME@bN for another batch, or gemm_MxNxK. Compilation writes one code
 * object per layer (HSACO for AMDGPU, PTX for NVPTX) and manifest.json,
 * which records each kernel's launch (grid, block, shared bytes), problem
 * and plan, in a given directory. */
#ifndef COVENANT_GPU_H
#define COVENANT_GPU_H

#include <stdio.h>

#include "covenant/api.h"
#include "covenant/model.h"
#include "covenant/status.h"
#include "covenant/tensor.h"
#include "covenant/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cov_gpu_options {
  const char *target;  /* ACG name or path: amdgpu-gfx90a, amdgpu-gfx942, nvptx-sm90 */
  const char *suite;   /* layer suite file; NULL: the shipped bench/suite/layers.json */
  cov_dtype dtype;     /* input dtype: f16 (default when INVALID), bf16, f32 */
  int allow_unfused;   /* accept layers whose post-ops (softmax) stay unfused */
  unsigned code_object_version; /* AMDGPU: 4 or 5; 0 = the ACG's */
  FILE *notes;         /* compile: where notes on model groups left to the CPU go; NULL: nowhere */
  const char *tuning;  /* compile: a tuning file (`covenant tune --record`); its schedules replace
                          the compiler's pick for the matrix kernels whose keys it has; NULL: none */
  const cov_model_shape *shapes; /* models: input shapes bound at load (cov_model_options.shapes) */
  size_t n_shapes;
  int f32_activations; /* models: 1 passes activations between kernels as f32 NCHW (the matrix kernels
                          still read f16 copies); 0: convolutions pass NHWC f16 to each other */
  int f16_operands;    /* models: 1 keeps every matrix kernel on f16 operands; 0 (the default) estimates
                          the f16 plan's error at compile time and, over budget, gives the first groups
                          f32 operands (the precision plan, backends/gpu/gpu_mprec.c) */
} cov_gpu_options;

/* Compiles every spec into out_dir (created if missing). With `report`,
 * prints per kernel: shared/LDS bytes, registers (AMDGPU: from the code
 * object; NVPTX: assigned later by the driver's JIT), occupancy and a
 * roofline time estimate from the ACG. */
COV_API cov_status cov_gpu_compile(const cov_gpu_options *opts, const char *const *specs, int n_specs,
                                   const char *out_dir, FILE *report);

/* Compiles each spec, runs it on seeded random inputs (NVIDIA: the CUDA
 * driver API; AMD: the HIP module API; both loaded with dlopen), compares
 * with a CPU loop nest and prints one line per layer (max relative error,
 * kernel time). COV_DEVICE_ERROR, naming what the runtime said, where there
 * is no such GPU. Debian's HIP (5.2) loads code object v4 only: set
 * code_object_version = 4 for it. */
COV_API cov_status cov_gpu_run(const cov_gpu_options *opts, const char *const *specs, int n_specs, FILE *out);

/* Compiles the ONNX model at `model_path` whole for opts->target and
 * writes one artifact (runtime/README.md) to out_path, which covenant-run
 * runs; one error lists every layer group that cannot be compiled. */
COV_API cov_status cov_gpu_compile_model(const cov_gpu_options *opts, const char *model_path, const char *out_path);

/* Fills the model's n_inputs inputs (cov_model_input_name order; each
 * allocated with cov_tensor_alloc, released by the caller of
 * cov_gpu_run_model). */
typedef cov_status (*cov_gpu_inputs_fn)(void *user, const cov_model *model, cov_tensor *inputs,
                                        size_t n_inputs);

/* Runs the ONNX model at `path` on the GPU: the device is opened first
 * (COV_DEVICE_ERROR "cannot run on T: ..." without one, before anything
 * else), then the model is compiled whole into an artifact in memory (as
 * cov_gpu_compile_model writes it) and run through the runtime: every
 * layer group on the device, intermediates kept there (f16 operands, f32
 * results). Prints the device, the steps, the model's time, the outputs'
 * first values, and each output's max|gpu - ref| / max|ref| against
 * cov_model_run_ref on the same inputs; an error when one exceeds
 * `tolerance`. */
COV_API cov_status cov_gpu_run_model(const cov_gpu_options *opts, const char *path, double tolerance,
                                     cov_gpu_inputs_fn inputs, void *user, FILE *out);

#ifdef __cplusplus
}
#endif
#endif

/* backends/gpu/gpu_run.h: one GPU device behind one face (the CUDA driver
 * API for NVPTX, the HIP module API for AMDGPU), and running one compiled
 * layer on it; shared by cov_gpu_run (suite layers against the loop-nest
 * reference) and cov_gpu_run_model (a whole ONNX model). */
#ifndef COV_GPU_RUN_H
#define COV_GPU_RUN_H

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_plan.h"

/* The target's vendor runtime (gpu_vendor.h), opened. */
typedef struct gpu_device {
  const gpu_vendor *v;
  void *rt;
} gpu_device;

/* Opens the runtime for t's backend; without it (no driver, no GPU) the
 * error says "cannot run on TARGET: " and what the runtime said. */
cov_status gpu_device_open(const gpu_target *t, const char *target, gpu_device *dev);
void gpu_device_close(gpu_device *dev);
const char *gpu_device_name(const gpu_device *dev);

/* Runs one compiled layer: `code` holds `kernel` (and, for a channels-last
 * plan, its "_nhwc" transform kernel). a (the input, NCHW or [g][m][k]),
 * b (weights as OIHW or [g][k][n]; reordered to [R][S][C][K] here for a
 * channels-last plan) and bias are f32 values of gpu_buffer_sizes' counts,
 * rounded to the plan's input dtype on upload (b and bias may be NULL
 * where their counts are 0); the f32 result goes to out. *ms: the kernels'
 * time, the transform's included. */
cov_status gpu_launch_layer(gpu_device *dev, const gpu_plan *plan, const char *code, const char *kernel,
                            const float *a, const float *b, const float *bias, float *out, float *ms);

#endif

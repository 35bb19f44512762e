/* backends/gpu/gpu_artifact.h: a compiled model (gpu_mplan.h) as an
 * artifact (runtime/README.md), for covenant compile and covenant run. */
#ifndef COV_GPU_ARTIFACT_H
#define COV_GPU_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/gpu/gpu_vendor.h"
#include "covenant/model.h"
#include "covenant/tensor.h"

typedef struct gpu_model_plan gpu_model_plan; /* gpu_mplan.h */

/* The artifact's bytes (*out malloc'ed): every buffer the steps use
 * (inputs and outputs with their buffers' dtypes, weights with their
 * data, intermediates placed in the arena by the builder), every module
 * (with the vendor's extension; a text code object, PTX, with its NUL),
 * every launch (null arguments as a 0 pointer) and fill, in order. */
cov_status gpu_model_artifact(const gpu_model_plan *p, const char *model_path, uint8_t **out, size_t *size);
/* The same bytes written to the file out_path: the one writer of a GPU
 * model's artifact (covenant compile, covenant gpu compile MODEL). */
cov_status gpu_model_artifact_write(const gpu_model_plan *p, const char *model_path, const char *out_path);

/* Loads MODEL, compiles it whole for target opts->target and writes the
 * artifact to `out_path`. */
/* Whether the model compiler has a GPU kernel for calls of `codelet`
 * (gpu_kernels.c): every codelet does (lowered from its loop nest); a call
 * can still be refused when the model is compiled (its dtypes). */
bool gpu_codelet_has_kernel(const char *codelet);

cov_status gpu_compile_artifact(gpu_vendors vendors, const cov_gpu_options *opts, const char *model_path,
                                const char *out_path);

/* The model as the GPU compiles it, loaded again from `path` with the
 * input shapes m was loaded with, into *out: with compute_f32 when it has
 * a 16-bit input or output (f16 / bf16), with recurrent_cells when it has
 * an LSTM, GRU or RNN node (a time step one kernel) unless it compiles as
 * a program (control flow, data-dependent sizes: its part steps name the
 * values the runtime's load of the model has); *out NULL when it needs
 * neither (compile m itself). */
cov_status gpu_widened(const cov_model *m, const char *path, cov_model **out);

/* Compiles the loaded model m whole for `target` (an ACG name or path) with
 * inputs of `dtype` (0: f16) and runs it once on the device through the
 * runtime, the artifact kept in memory: inputs in cov_model_input_name
 * order, outputs allocated here. `name` (the model's file) names it in
 * diagnostics (a 16-bit model is read from it again: gpu_widened). Without the vendor's driver or device: COV_DEVICE_ERROR
 * from crt_session_open ("no NVIDIA driver: ..."), nothing run. */
cov_status gpu_run_model_on_device(gpu_vendors vendors, const char *target, cov_dtype dtype, const cov_model *m,
                                   const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                   size_t n_outputs);

#endif

/* backends/npu-sim/compile/npu_compile.h: the NPU compiler's drivers, what
 * the npu-sim row of the backend registry calls (backends/registry/
 * backend_npu.c): a suite layer mapped, compiled and written as a program
 * with its manifest, or loaded into a simulator; a model into one artifact. */
#ifndef COV_NPU_COMPILE_H
#define COV_NPU_COMPILE_H

#include <stdio.h>

#include "covenant/acg.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "covenant/status.h"

/* A suite layer mapped for an ACG (the mapper's pick, re-ranked by
 * simulation as covenant run does) and compiled. */
typedef struct npu_layer_job {
  cov_layer *layer;
  cov_schedule *sched;
  cov_npu_program *prog;
  cov_npu_sim *sim; /* npu_layer_load */
} npu_layer_job;

cov_status npu_layer_build(npu_layer_job *j, const cov_acg *acg, const char *suite, const char *name, int scale);
void npu_layer_job_free(npu_layer_job *j);

/* The layer `name` of the suite compiled for acg into out_dir (created):
 * program.npu and manifest.json (target, scale, predicted cycles, tensors);
 * says so on msg. */
cov_status npu_compile_layer_dir(const cov_acg *acg, const char *suite, const char *name, int scale,
                                 const char *out_dir, FILE *msg);

/* A built job's program loaded into a simulator of acg (j->sim), and run:
 * inputs in0.. written, the program run, out read (f32) with its cycles and
 * array utilisation. */
cov_status npu_layer_load(npu_layer_job *j, const cov_acg *acg);
cov_status npu_layer_run(npu_layer_job *j, const cov_tensor *inputs, int n_inputs, cov_tensor *output,
                         uint64_t *cycles, double *array_util);
/* dt[i]: the dtype the program keeps input i (in<i>) in: a narrower float
 * (f16, bf16, e4m3, e5m2) where it rounds it, else f32. */
void npu_layer_in_dtypes(const npu_layer_job *j, cov_dtype *dt, int n);

/* The model in the file `path` compiled for acg into one artifact `out`
 * (runtime/README.md): one program per compute group that fuses, the rest
 * listed as missing; says what it wrote on msg. `mo` (may be NULL) loads
 * the model (its input shapes bound: the artifact says which dims the
 * model left symbolic). */
cov_status npu_compile_model_artifact(const cov_acg *acg, const char *path, const cov_model_options *mo,
                                      const char *out, FILE *msg);

#endif

/* covenant/run.h: a model run on any target, named as `covenant run
 * --target` names it: "ref" (the CPU reference interpreter), an NPU ACG
 * (each compute layer group mapped, compiled and simulated,
 * cov_npu_run_model) or a GPU ACG (the model compiled whole and run on the
 * device through the runtime). The backend registry picks the backend from
 * the ACG's backend.name; the caller names no backend. */
#ifndef COVENANT_RUN_H
#define COVENANT_RUN_H

#include <stddef.h>

#include "covenant/api.h"
#include "covenant/model.h"
#include "covenant/status.h"
#include "covenant/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs `m` on `target` (a shipped target name, an ACG path or "ref"; NULL
 * is the default target, npu-16x16). `name` labels diagnostics (the model's
 * file). `inputs` are in cov_model_input_name order; the n_outputs outputs
 * (cov_model_output_name order) are allocated here, release each with
 * cov_tensor_release. `report` (may be NULL) receives the run's per-group
 * report as JSON (cov_npu_report_json's document) where the backend keeps
 * one, else NULL; release it with cov_free. Thread-safe: several threads
 * may run the same model at once. */
COV_API cov_status cov_run_model(const char *target, const cov_model *m, const char *name,
                                 const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                 size_t n_outputs, char **report);

/* Runs n models at once on `target`, whose backend co-schedules them
 * (an NPU of several cores: each model on cores of its own, all sharing
 * DRAM, cov_npu_corun_models; another target: COV_UNSUPPORTED). Model i
 * (labelled names[i], may be NULL) takes inputs[i][0..n_inputs[i]) and
 * gets outputs[i][0..n_outputs[i]) (allocated here; release each with
 * cov_tensor_release). `report` (may be NULL): {"coscheduled": the
 * co-scheduled run (cov_npu_corun_json's document), "models": each
 * model's run as cov_run_model reports it}; release it with cov_free. */
COV_API cov_status cov_run_models(const char *target, const cov_model *const *models, const char *const *names,
                                  size_t n, const cov_tensor *const *inputs, const size_t *n_inputs,
                                  cov_tensor *const *outputs, const size_t *n_outputs, char **report);

#ifdef __cplusplus
}
#endif
#endif

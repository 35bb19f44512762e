/* backends/registry/backend_run.c: cov_run_model (include/covenant/run.h),
 * a model run on a target named as --target names it, through the
 * registry's row for the target's backend (run_model), with the run's
 * report as JSON where the row has one (report_json: the NPU's per-group
 * report, as `covenant run` prints it). */
#include <stdlib.h>

#include "backends/registry/backend_registry.h"
#include "common/loc.h"
#include "covenant/run.h"

cov_status cov_run_model(const char *target, const cov_model *m, const char *name, const cov_tensor *inputs,
                         size_t n_inputs, cov_tensor *outputs, size_t n_outputs, char **report) {
  if (report) *report = NULL;
  if (!m || (n_inputs && !inputs) || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_run_model"), "NULL model, inputs or outputs");
  backend_target bt;
  COV_RETURN_IF_ERROR(backend_target_open(target, &bt));
  const backend_info *b = bt.backend;
  backend_report *r = NULL;
  cov_status st = b->run_model(&bt, NULL, m, name ? name : "model", inputs, n_inputs, outputs, n_outputs,
                               report && b->report_json ? &r : NULL);
  if (!st && r && (st = b->report_json(r, report)))
    for (size_t i = 0; i < n_outputs; i++) cov_tensor_release(&outputs[i]);
  if (r) b->report_free(r);
  backend_target_close(&bt);
  return st;
}

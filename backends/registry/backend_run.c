/* backends/registry/backend_run.c: cov_run_model (include/covenant/run.h),
 * a model run on a target named as --target names it, through the
 * registry's row for the target's backend. The NPU row is run through
 * cov_npu_run_model here rather than its run_model entry, to keep the
 * per-group report, as `covenant run` does. */
#include <stdlib.h>

#include "backends/registry/backend_registry.h"
#include "common/loc.h"
#include "covenant/npu.h"
#include "covenant/run.h"

/* The NPU backend: an ACG whose row has no GPU vendor. */
static bool keeps_report(const backend_target *t) { return t->acg && t->backend->gpu == NULL; }

cov_status cov_run_model(const char *target, const cov_model *m, const char *name, const cov_tensor *inputs,
                         size_t n_inputs, cov_tensor *outputs, size_t n_outputs, char **report) {
  if (report) *report = NULL;
  if (!m || (n_inputs && !inputs) || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_run_model"), "NULL model, inputs or outputs");
  backend_target bt;
  COV_RETURN_IF_ERROR(backend_target_open(target, &bt));
  cov_status st = NULL;
  if (keeps_report(&bt)) {
    cov_npu_report *r = NULL;
    st = cov_npu_run_model(m, bt.acg, inputs, n_inputs, outputs, n_outputs, &r);
    if (!st && report && (st = cov_npu_report_json(r, report, NULL)))
      for (size_t i = 0; i < n_outputs; i++) cov_tensor_release(&outputs[i]);
    cov_npu_report_free(r);
  } else {
    st = bt.backend->run_model(&bt, m, name ? name : "model", inputs, n_inputs, outputs, n_outputs);
  }
  backend_target_close(&bt);
  return st;
}

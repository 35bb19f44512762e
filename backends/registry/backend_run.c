/* backends/registry/backend_run.c: cov_run_model (include/covenant/run.h),
 * a model run on a target named as --target names it, through the
 * registry's row for the target's backend (run_model), with the run's
 * report as JSON where the row has one (report_json: the NPU's per-group
 * report, as `covenant run` prints it); cov_run_models, several models at
 * once through the row's run_models. */
#include <stdlib.h>
#include <string.h>

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

/* {"coscheduled": joint, "models": [each...]} from the rows' JSON texts. */
static cov_status joint_json(const backend_info *b, backend_report *joint, backend_report *const *each, size_t n,
                             char **out) {
  char *parts[17] = {0};
  size_t len = 64;
  cov_status st = b->report_json(joint, &parts[0]);
  for (size_t i = 0; !st && i < n; i++) st = b->report_json(each[i], &parts[i + 1]);
  for (size_t i = 0; !st && i <= n; i++) len += strlen(parts[i]) + 2;
  char *text = st ? NULL : malloc(len);
  if (!st && !text) st = cov_error(COV_OUT_OF_MEMORY, NULL, "the report's JSON");
  if (!st) {
    size_t k = (size_t)snprintf(text, len, "{\"coscheduled\": %s, \"models\": [", parts[0]);
    for (size_t i = 1; i <= n; i++) k += (size_t)snprintf(text + k, len - k, "%s%s", i > 1 ? ", " : "", parts[i]);
    snprintf(text + k, len - k, "]}");
    *out = text;
  }
  for (size_t i = 0; i <= n; i++) free(parts[i]);
  return st;
}

cov_status cov_run_models(const char *target, const cov_model *const *models, const char *const *names, size_t n,
                          const cov_tensor *const *inputs, const size_t *n_inputs, cov_tensor *const *outputs,
                          const size_t *n_outputs, char **report) {
  if (report) *report = NULL;
  if (!models || !inputs || !n_inputs || !outputs || !n_outputs || n < 2 || n > 16)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_run_models"),
                     "2 to 16 models, with their inputs and outputs (got %zu)", n);
  backend_target bt;
  COV_RETURN_IF_ERROR(backend_target_open(target, &bt));
  const backend_info *b = bt.backend;
  backend_model_io io[16];
  backend_report *each[16] = {0}, *joint = NULL;
  for (size_t i = 0; i < n; i++)
    io[i] = (backend_model_io){models[i], names ? names[i] : NULL, inputs[i], n_inputs[i], outputs[i], n_outputs[i]};
  cov_status st = b->run_models ? b->run_models(&bt, io, n, 0, each, &joint)
                                : backend_lacks(&bt, "cov_run_models", "run_models");
  if (!st && report && b->report_json && joint) st = joint_json(b, joint, each, n, report);
  if (st && b->run_models)
    for (size_t i = 0; joint && i < n; i++)
      for (size_t k = 0; k < n_outputs[i]; k++) cov_tensor_release(&outputs[i][k]);
  for (size_t i = 0; i < n; i++)
    if (each[i]) b->report_free(each[i]);
  if (joint) b->report_free(joint);
  backend_target_close(&bt);
  return st;
}

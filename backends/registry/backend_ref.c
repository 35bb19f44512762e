/* backends/registry/backend_ref.c: the ref row, the CPU reference
 * interpreter (the oracle every backend is checked against). */
#include "backends/registry/backend_rows.h"

cov_status backend_ref_run_model(const backend_target *t, const backend_options *o, const cov_model *m,
                                 const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                 size_t n_outputs, backend_report **report) {
  (void)t, (void)o, (void)name;
  if (report) *report = NULL;
  return cov_model_run_ref(m, inputs, n_inputs, outputs, n_outputs);
}

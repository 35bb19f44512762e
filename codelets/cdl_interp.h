/* codelets/cdl_interp.h: the reference interpreter with an explicit work
 * limit (cov_codelet_run uses CDL_MAX_STEPS; the fuzzer a small one). */
#ifndef CDL_INTERP_H
#define CDL_INTERP_H

#include "codelets/cdl_ir.h"

/* cov_codelet_run, refusing calls that would execute more than max_steps
 * statements (counted before anything runs). */
cov_status cdl_run(const cdl_codelet *c, const cov_attr *attrs, size_t n_attrs,
                   const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                   size_t n_outputs, int64_t max_steps);

#endif

/* covenant/codelet.h: codelets, target-neutral loop nests for DNN operations,
 * and the CPU reference interpreter that every backend is checked against.
 *
 * The language is documented in codelets/README.md. A library is a set of
 * parsed and verified codelets (the shipped codelets/ directory, or another
 * directory of *.cdl files). */
#ifndef COVENANT_CODELET_H
#define COVENANT_CODELET_H

#include <stddef.h>
#include <stdint.h>

#include "covenant/api.h"
#include "covenant/status.h"
#include "covenant/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cov_codelet cov_codelet;
typedef struct cov_codelet_lib cov_codelet_lib;

/* An attribute value bound at instantiation (stride=2, epsilon=1e-5, ...). */
typedef struct cov_attr {
  const char *name;
  int is_float;
  int64_t i;
  double f;
} cov_attr;

/* Loads every *.cdl file of `dir`; NULL loads the shipped codelets (looked
 * up like targets: $COVENANT_CODELET_PATH, the installed data dir, the
 * source tree). All errors of all files are returned, located. */
COV_API cov_status cov_codelet_lib_load(const char *dir, cov_codelet_lib **out);
/* Parses and verifies one file (which may define several codelets). */
COV_API cov_status cov_codelet_lib_load_file(const char *path, cov_codelet_lib **out);
/* The same from memory; `name` is the file name used in diagnostics. */
COV_API cov_status cov_codelet_lib_load_buffer(const char *data, size_t size, const char *name,
                                               cov_codelet_lib **out);
COV_API void cov_codelet_lib_free(cov_codelet_lib *lib);
COV_API size_t cov_codelet_lib_count(const cov_codelet_lib *lib);
COV_API const cov_codelet *cov_codelet_lib_at(const cov_codelet_lib *lib, size_t i);
COV_API const cov_codelet *cov_codelet_lib_find(const cov_codelet_lib *lib, const char *name);

COV_API const char *cov_codelet_name(const cov_codelet *c);
COV_API size_t cov_codelet_num_inputs(const cov_codelet *c);
COV_API size_t cov_codelet_num_outputs(const cov_codelet *c);
/* Operand names in call order ("x", "w"); NULL when i is out of range. */
COV_API const char *cov_codelet_input_name(const cov_codelet *c, size_t i);
COV_API const char *cov_codelet_output_name(const cov_codelet *c, size_t i);

/* Runs a codelet on the CPU. Input shapes bind the symbolic dims; output
 * shapes follow from them and the attributes; outputs are allocated here
 * (release with cov_tensor_release). Computation happens in f32/i32/i64 as
 * the codelet's dtypes say, rounding to f16/bf16 where an operand is stored
 * that way. Missing attributes take their declared defaults. */
COV_API cov_status cov_codelet_run(const cov_codelet *c, const cov_attr *attrs, size_t n_attrs,
                                   const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                   size_t n_outputs);

/* The dtypes and shapes a call would produce, without running it: binds the
 * codelet to the inputs' dtypes and shapes (data is not read and may be NULL)
 * and the attributes, checking every require as cov_codelet_run does.
 * outputs[i] gets dtype, rank and shape; its data is left NULL. Lets a
 * caller describe a chain of calls (a backend planning a fused layer). */
COV_API cov_status cov_codelet_output_shapes(const cov_codelet *c, const cov_attr *attrs, size_t n_attrs,
                                             const cov_tensor *inputs, size_t n_inputs,
                                             cov_tensor *outputs, size_t n_outputs);

/* Writes the codelet in the language's canonical form (parse(print(c)) == c). */
COV_API cov_status cov_codelet_print(const cov_codelet *c, FILE *out);

#ifdef __cplusplus
}
#endif
#endif

/* frontend/model_probe.c: what every artifact compiler that runs a model
 * as a program (cov_model_program_build) takes from the frontend alike:
 * the probe run that gives subgraphs their shapes and part outputs their
 * capacities (cov_model_program_build_probe), and each model input's and
 * output's buffer (cov_model_program_io). One definition, so that the
 * same model gives every backend's artifact the same values, capacities
 * and refusals. */
#include <string.h>

#include "common/loc.h"
#include "covenant/model.h"

static void store(cov_tensor *t, int64_t k, double v) {
  unsigned char *p = (unsigned char *)t->data + (size_t)k * cov_dtype_size(t->dtype);
  switch (t->dtype) {
    case COV_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case COV_F64: memcpy(p, &v, 8); break;
    case COV_F16: { uint16_t h = cov_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case COV_BF16: { uint16_t h = cov_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case COV_I64: { int64_t i = (int64_t)v; memcpy(p, &i, 8); break; }
    case COV_I32: { int32_t i = (int32_t)v; memcpy(p, &i, 4); break; }
    case COV_I8: case COV_U8: case COV_BOOL: *p = (unsigned char)(int)v; break;
    default: memset(p, 0, cov_dtype_size(t->dtype)); break;
  }
}

static cov_status symbolic_input(const char *path, const char *name, int d) {
  return cov_error(COV_UNSUPPORTED, COV_AT(path, name),
                   "dim %d of input '%s' is symbolic; give the input's shape with --shape NAME=DIMS", d, name);
}

/* Input i at its fixed shape, its values drawn from *x. */
static cov_status probe_input(const cov_model *m, const char *path, size_t i, uint64_t *x, cov_tensor *t) {
  cov_dtype dt;
  int rank;
  int64_t shape[COV_MAX_RANK], lo = 0, hi = 0;
  COV_RETURN_IF_ERROR(cov_model_input_info(m, i, &dt, &rank, shape));
  const char *name = cov_model_input_name(m, i);
  if (rank < 0) return cov_error(COV_UNSUPPORTED, COV_AT(path, name), "input '%s' has no fixed shape", name);
  for (int d = 0; d < rank; d++)
    if (shape[d] < 0) return symbolic_input(path, name, d);
  COV_RETURN_IF_ERROR(cov_tensor_alloc(t, dt, rank, shape));
  int ranged = cov_model_input_range(m, i, &lo, &hi);
  int64_t numel = cov_tensor_numel(t);
  for (int64_t k = 0; k < numel; k++) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*x >> 11) / 9007199254740992.0;
    double v = cov_dtype_is_float(dt) ? 2.0 * u - 1.0
               : dt == COV_BOOL       ? 1.0
               : ranged               ? (double)lo + (double)(int64_t)(u * (double)(hi - lo + 1))
                                      : 0.0;
    store(t, k, v);
  }
  return NULL;
}

cov_status cov_model_program_build_probe(const cov_model *m, const char *path, cov_model_program **out) {
  if (!m || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_model_program_build_probe"), "NULL");
  *out = NULL;
  enum { MAX_INPUTS = 64 };
  size_t n = cov_model_num_inputs(m);
  if (n > MAX_INPUTS)
    return cov_error(COV_UNSUPPORTED, COV_AT_FILE(path), "%zu model inputs (at most %d)", n, MAX_INPUTS);
  cov_tensor probe[MAX_INPUTS];
  memset(probe, 0, sizeof probe);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  cov_status st = NULL;
  for (size_t i = 0; i < n && !st; i++) st = probe_input(m, path, i, &x, &probe[i]);
  if (!st) st = cov_model_program_build(m, probe, n, out);
  for (size_t i = 0; i < n; i++) cov_tensor_release(&probe[i]);
  return st;
}

cov_status cov_model_program_io(const cov_model_program *p, const cov_model *m, const char *path, int output,
                                size_t i, cov_tensor *t, unsigned *dynamic) {
  memset(t, 0, sizeof *t);
  *dynamic = 0;
  const char *name = output ? cov_model_output_name(m, i) : cov_model_input_name(m, i);
  COV_RETURN_IF_ERROR(output ? cov_model_output_info(m, i, &t->dtype, &t->rank, t->shape)
                             : cov_model_input_info(m, i, &t->dtype, &t->rank, t->shape));
  cov_tensor pt = {0};
  if (output && cov_model_program_capacity(p, name, &pt, dynamic)) /* its size depends on the data */
    t->rank = pt.rank, memcpy(t->shape, pt.shape, sizeof t->shape);
  else if (cov_model_program_value(p, name, &pt) && pt.rank >= 0) /* a value a Loop or an If makes */
    t->rank = pt.rank, memcpy(t->shape, pt.shape, sizeof t->shape);
  if (t->rank < 0)
    return cov_error(COV_UNSUPPORTED, COV_AT(path, name), "%s '%s' has no fixed shape", output ? "output" : "input",
                     name);
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] < 0)
      return output ? cov_error(COV_UNSUPPORTED, COV_AT(path, name),
                                "dim %d of output '%s' is symbolic: its size depends on the data (an operator whose "
                                "output size does, a loop-carried value that changes shape) and no bound on it is "
                                "known; an artifact holds fixed-size buffers",
                                d, name)
                    : symbolic_input(path, name, d);
  return NULL;
}

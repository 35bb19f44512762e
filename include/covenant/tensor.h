/* covenant/tensor.h: dense tensors exchanged between the frontend, the
 * reference interpreter, the simulators and the runtimes, and .npy files.
 *
 * Data is dense row-major. f16 and bf16 elements are stored as their 16-bit
 * patterns (uint16_t); bool as one byte. A tensor filled by cov_tensor_alloc
 * owns its data and is released with cov_tensor_release. */
#ifndef COVENANT_TENSOR_H
#define COVENANT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "covenant/api.h"
#include "covenant/status.h"
#include "covenant/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COV_MAX_RANK 8
/* Largest tensor covenant allocates (elements x element size), 4 GiB. */
#define COV_TENSOR_MAX_BYTES ((uint64_t)1 << 32)
/* The default memory limit of a model run (cov_model_options.max_memory,
 * `--max-memory`) and of `codelet run`'s inputs, 2 GiB: a tiny input (a
 * ConstantOfShape, a shape option) must not make covenant allocate
 * gigabytes. */
#define COV_DEFAULT_MAX_MEMORY ((uint64_t)1 << 31)

typedef struct cov_tensor {
  cov_dtype dtype;
  int rank;
  int64_t shape[COV_MAX_RANK];
  void *data;
} cov_tensor;

/* Element count; 0 for a rank-0 tensor that has no data yet is never
 * returned: rank 0 means one element. Returns -1 on overflow. */
COV_API int64_t cov_tensor_numel(const cov_tensor *t);
/* Allocates zeroed data for the given shape, checking products for overflow
 * and the COV_TENSOR_MAX_BYTES limit. */
COV_API cov_status cov_tensor_alloc(cov_tensor *t, cov_dtype dtype, int rank, const int64_t *shape);
COV_API void cov_tensor_release(cov_tensor *t);

/* .npy (format versions 1.0 to 3.0, little-endian, C order; dtypes
 * <f4 <f2 <i1 |u1 <i4 <i8 |b1, and bf16 written as <u2 with a note in the
 * header's description). Errors name the file and what was expected. */
COV_API cov_status cov_npy_read(const char *path, cov_tensor *out);
COV_API cov_status cov_npy_write(const char *path, const cov_tensor *t);

/* Scalar conversions for the 16-bit float formats (round to nearest even). */
COV_API float cov_f16_to_f32(uint16_t h);
COV_API uint16_t cov_f32_to_f16(float f);
COV_API float cov_bf16_to_f32(uint16_t h);
COV_API uint16_t cov_f32_to_bf16(float f);
/* The OCP FP8 formats (OCP 8-bit Floating Point Specification, OFP8 rev.
 * 1.0): E4M3 (bias 7, no infinities, NaN S.1111.111, largest 448) and
 * E5M2 (bias 15, IEEE-like: infinities S.11111.00, largest 57344). Narrowing
 * rounds to nearest, ties to even, in the specification's saturation mode:
 * a value beyond the largest finite one (an infinity included) gives the
 * largest finite value of its sign; NaN gives 0x7f with its sign (a NaN in
 * both formats). Widening is exact (common/fp8.c). */
COV_API float cov_e4m3_to_f32(uint8_t c);
COV_API uint8_t cov_f32_to_e4m3(float f);
COV_API float cov_e5m2_to_f32(uint8_t c);
COV_API uint8_t cov_f32_to_e5m2(float f);
/* f rounded to the nearest value of dtype dt and widened back: what a unit
 * computing in dt sees of an f32 operand. f16, bf16, e4m3 and e5m2 round
 * (as above); every other dtype returns f unchanged. */
COV_API float cov_f32_round_to(cov_dtype dt, float f);

#ifdef __cplusplus
}
#endif
#endif

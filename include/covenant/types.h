/* covenant/types.h: element types shared by ACGs, codelets and graphs. */
#ifndef COVENANT_TYPES_H
#define COVENANT_TYPES_H

#include <stdbool.h>
#include <stddef.h>

#include "covenant/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cov_dtype {
  COV_DTYPE_INVALID = 0,
  COV_F32, COV_F16, COV_BF16, COV_I8, COV_U8, COV_I32, COV_I64, COV_BOOL,
  COV_F64, /* ONNX DOUBLE: the reference target only */
  COV_E4M3, COV_E5M2, /* OCP FP8 (E4M3 "fn": no infinities; E5M2): datapath dtypes of an ACG */
  COV_DTYPE_COUNT
} cov_dtype;

/* "f32" -> COV_F32; COV_DTYPE_INVALID for an unknown name. */
COV_API cov_dtype cov_dtype_from_name(const char *name);
COV_API const char *cov_dtype_name(cov_dtype t);
COV_API size_t cov_dtype_size(cov_dtype t);
COV_API bool cov_dtype_is_float(cov_dtype t);
/* Bits of precision a value of this type carries (mantissa+1 for floats,
 * value bits for integers); used to check that accumulators do not narrow. */
COV_API int cov_dtype_precision_bits(cov_dtype t);
/* A comma-separated list of the tensor element types' names, for error
 * messages (e4m3 and e5m2 are datapath dtypes only: an ACG's capabilities). */
COV_API const char *cov_dtype_names(void);

#ifdef __cplusplus
}
#endif
#endif

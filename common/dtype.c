/* common/dtype.c: the element-type table. */
#include "covenant/types.h"

#include <string.h>

static const struct {
  const char *name;
  size_t size;
  bool is_float;
  int precision;
} k_dtypes[COV_DTYPE_COUNT] = {
    [COV_DTYPE_INVALID] = {"<invalid>", 0, false, 0},
    [COV_F32] = {"f32", 4, true, 24},
    [COV_F16] = {"f16", 2, true, 11},
    [COV_BF16] = {"bf16", 2, true, 8},
    [COV_I8] = {"i8", 1, false, 7},
    [COV_U8] = {"u8", 1, false, 8},
    [COV_I32] = {"i32", 4, false, 31},
    [COV_I64] = {"i64", 8, false, 63},
    [COV_BOOL] = {"bool", 1, false, 1},
    [COV_F64] = {"f64", 8, true, 53},
    [COV_E4M3] = {"e4m3", 1, true, 4},
    [COV_E5M2] = {"e5m2", 1, true, 3},
};

cov_dtype cov_dtype_from_name(const char *name) {
  if (!name) return COV_DTYPE_INVALID;
  for (int i = 1; i < COV_DTYPE_COUNT; i++)
    if (strcmp(k_dtypes[i].name, name) == 0) return (cov_dtype)i;
  return COV_DTYPE_INVALID;
}

const char *cov_dtype_name(cov_dtype t) {
  return (t > 0 && t < COV_DTYPE_COUNT) ? k_dtypes[t].name : k_dtypes[0].name;
}

size_t cov_dtype_size(cov_dtype t) { return (t > 0 && t < COV_DTYPE_COUNT) ? k_dtypes[t].size : 0; }

bool cov_dtype_is_float(cov_dtype t) {
  return (t > 0 && t < COV_DTYPE_COUNT) ? k_dtypes[t].is_float : false;
}

int cov_dtype_precision_bits(cov_dtype t) {
  return (t > 0 && t < COV_DTYPE_COUNT) ? k_dtypes[t].precision : 0;
}

const char *cov_dtype_names(void) { return "f32, f16, bf16, i8, u8, i32, i64, bool, f64"; }

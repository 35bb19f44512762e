/* common/tensor.c: dense tensor allocation with checked sizes.
 *
 * Every size that reaches malloc here was multiplied with overflow checks
 * and compared with COV_TENSOR_MAX_BYTES, so a hostile shape (from a .npy
 * header, an ONNX model or a codelet's output dims) is an error, never a
 * wrapped-around small allocation. */
#include <stdlib.h>
#include <string.h>

#include "covenant/tensor.h"
#include "common/loc.h"

int64_t cov_tensor_numel(const cov_tensor *t) {
  if (!t || t->rank < 0 || t->rank > COV_MAX_RANK) return -1;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] < 0 || __builtin_mul_overflow(n, t->shape[i], &n)) return -1;
  }
  return n;
}

cov_status cov_tensor_alloc(cov_tensor *t, cov_dtype dtype, int rank, const int64_t *shape) {
  if (!t) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_tensor_alloc"), "NULL tensor");
  memset(t, 0, sizeof *t);
  size_t esize = cov_dtype_size(dtype);
  if (!esize) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_tensor_alloc"), "invalid dtype");
  if (rank < 0 || rank > COV_MAX_RANK)
    return cov_error(COV_OUT_OF_RANGE, COV_AT_CALL("cov_tensor_alloc"), "tensor rank %d is outside 0..%d", rank,
                     COV_MAX_RANK);
  if (rank > 0 && !shape)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_tensor_alloc"), "NULL shape");
  uint64_t bytes = esize;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_tensor_alloc"), "negative dimension %lld in tensor shape",
                       (long long)shape[i]);
    if (__builtin_mul_overflow(bytes, (uint64_t)shape[i], &bytes) ||
        bytes > COV_TENSOR_MAX_BYTES)
      return cov_error(COV_OUT_OF_RANGE, COV_AT_CALL("cov_tensor_alloc"),
                       "tensor of this shape is larger than the limit of %llu bytes",
                       (unsigned long long)COV_TENSOR_MAX_BYTES);
  }
  /* calloc(0) may return NULL; an empty tensor still gets a valid pointer. */
  void *data = calloc(bytes ? (size_t)bytes : 1, 1);
  if (!data)
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory allocating %llu bytes",
                     (unsigned long long)bytes);
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
  t->data = data;
  return NULL;
}

void cov_tensor_release(cov_tensor *t) {
  if (!t) return;
  free(t->data);
  memset(t, 0, sizeof *t);
}

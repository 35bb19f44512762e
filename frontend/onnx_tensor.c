/* frontend/onnx_tensor.c: decoding ONNX TensorProtos (initializers, Constant
 * values, the conformance suite's .pb inputs).
 *
 * Every size is checked before anything is allocated: each dim must be
 * non-negative, their product must not overflow and must stay under
 * COV_TENSOR_MAX_BYTES, raw_data and typed fields must hold exactly that many
 * elements, and external data must lie inside the model's folder and inside
 * its file. Data are little-endian in the file and on every host covenant
 * supports. */
/* realpath() is an X/Open interface. */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "covenant/model.h"
#include "frontend/onnx_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX reader assumes a little-endian host (raw_data is little-endian)"
#endif

cov_dtype onnx_dtype(int32_t t) {
  switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return COV_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return COV_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return COV_BF16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return COV_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return COV_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return COV_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return COV_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return COV_BOOL;
    default: return COV_DTYPE_INVALID;
  }
}

const char *onnx_dtype_name(int32_t t) {
  static const char *const k[] = {"UNDEFINED",  "FLOAT",   "UINT8",  "INT8",   "UINT16",
                                  "INT16",      "INT32",   "INT64",  "STRING", "BOOL",
                                  "FLOAT16",    "DOUBLE",  "UINT32", "UINT64", "COMPLEX64",
                                  "COMPLEX128", "BFLOAT16"};
  if (t >= 0 && (size_t)t < sizeof k / sizeof *k) return k[t];
  return "an unknown type";
}

static cov_status terr(const char *file, const char *what, cov_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static cov_status terr(const char *file, const char *what, cov_code code, const char *fmt, ...) {
  cov_loc loc = {.file = file, .path = what};
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(code, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return st;
}

/* A non-negative decimal integer string, as external_data writes offsets. */
static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return 0;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return 0;
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 1;
}

/* Joins dir and location, refusing anything that could leave dir: absolute
 * paths, '..' components, and (after resolving symlinks) any path whose real
 * location is not under the real dir. */
static cov_status resolve_external(const char *file, const char *what, const char *dir,
                                   const char *location, cov_arena *arena, const char **out) {
  if (!dir)
    return terr(file, what, COV_INVALID_INPUT,
                "external data '%s' cannot be used: the model was not read from a file, so it "
                "has no folder to resolve it in",
                location);
  if (!*location) return terr(file, what, COV_INVALID_INPUT, "external data location is empty");
  if (location[0] == '/')
    return terr(file, what, COV_INVALID_INPUT,
                "external data location '%s' is an absolute path; it must be relative to the "
                "model's folder",
                location);
  for (const char *p = location; *p;) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return terr(file, what, COV_INVALID_INPUT,
                  "external data location '%s' leaves the model's folder ('..' is refused)",
                  location);
    p += len + (slash ? 1 : 0);
  }
  char *joined = cov_arena_printf(arena, "%s/%s", dir, location);
  if (!joined) return terr(file, what, COV_OUT_OF_MEMORY, "out of memory");
  char real_dir[PATH_MAX], real_file[PATH_MAX];
  if (!realpath(dir, real_dir))
    return terr(file, what, COV_IO_ERROR, "cannot resolve the model's folder '%s': %s", dir,
                strerror(errno));
  if (!realpath(joined, real_file))
    return terr(file, what, errno == ENOENT ? COV_NOT_FOUND : COV_IO_ERROR,
                "external data file '%s' cannot be opened: %s", joined, strerror(errno));
  size_t nd = strlen(real_dir);
  int inside = strncmp(real_file, real_dir, nd) == 0 &&
               (real_file[nd] == '/' || (nd == 1 && real_dir[0] == '/'));
  if (!inside)
    return terr(file, what, COV_INVALID_INPUT,
                "external data location '%s' resolves to '%s', outside the model's folder '%s'",
                location, real_file, real_dir);
  *out = joined;
  return NULL;
}

static cov_status check_external(const Onnx__TensorProto *tp, const char *file, const char *what,
                                 const char *dir, cov_arena *arena, onnx_tensor_info *info) {
  const char *location = NULL, *offset_s = NULL, *length_s = NULL;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[i];
    if (!e || !e->key) continue;
    if (strcmp(e->key, "location") == 0)
      location = e->value ? e->value : "";
    else if (strcmp(e->key, "offset") == 0)
      offset_s = e->value ? e->value : "";
    else if (strcmp(e->key, "length") == 0)
      length_s = e->value ? e->value : "";
  }
  if (!location)
    return terr(file, what, COV_INVALID_INPUT,
                "tensor is stored externally but external_data has no 'location'");
  uint64_t offset = 0, length = 0;
  if (offset_s && !parse_u64(offset_s, &offset))
    return terr(file, what, COV_INVALID_INPUT,
                "external data offset '%s' is not a non-negative integer", offset_s);
  if (length_s && !parse_u64(length_s, &length))
    return terr(file, what, COV_INVALID_INPUT,
                "external data length '%s' is not a non-negative integer", length_s);
  const char *path;
  COV_RETURN_IF_ERROR(resolve_external(file, what, dir, location, arena, &path));
  struct stat sb;
  if (stat(path, &sb) != 0)
    return terr(file, what, COV_IO_ERROR, "external data file '%s': %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    return terr(file, what, COV_INVALID_INPUT, "external data '%s' is not a regular file", path);
  uint64_t fsize = (uint64_t)sb.st_size;
  if (offset > fsize)
    return terr(file, what, COV_INVALID_INPUT,
                "external data offset %llu is past the end of '%s' (%llu bytes)",
                (unsigned long long)offset, path, (unsigned long long)fsize);
  if (!length_s) length = fsize - offset;
  if (length > fsize - offset)
    return terr(file, what, COV_INVALID_INPUT,
                "external data range %llu+%llu runs past the end of '%s' (%llu bytes)",
                (unsigned long long)offset, (unsigned long long)length, path,
                (unsigned long long)fsize);
  if (length != info->nbytes)
    return terr(file, what, COV_INVALID_INPUT,
                "external data holds %llu bytes, but the shape and dtype need %zu",
                (unsigned long long)length, info->nbytes);
  info->ext_path = path;
  info->ext_offset = offset;
  return NULL;
}

/* Which typed field holds a dtype's elements, and how many it has. */
static size_t typed_count(const Onnx__TensorProto *tp, cov_dtype t) {
  switch (t) {
    case COV_F32: return tp->n_float_data;
    case COV_I64: return tp->n_int64_data;
    default: return tp->n_int32_data;
  }
}

static size_t other_typed_count(const Onnx__TensorProto *tp, cov_dtype t) {
  size_t n = tp->n_double_data + tp->n_uint64_data + tp->n_string_data;
  if (t != COV_F32) n += tp->n_float_data;
  if (t != COV_I64) n += tp->n_int64_data;
  if (t == COV_F32 || t == COV_I64) n += tp->n_int32_data;
  return n;
}

cov_status onnx_tensor_check(const Onnx__TensorProto *tp, const char *file, const char *what,
                             const char *dir, cov_arena *arena, onnx_tensor_info *info) {
  memset(info, 0, sizeof *info);
  if (!tp->has_data_type || tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
    return terr(file, what, COV_INVALID_INPUT, "tensor has no data type");
  info->dtype = onnx_dtype(tp->data_type);
  if (info->dtype == COV_DTYPE_INVALID)
    return terr(file, what, COV_UNSUPPORTED,
                "tensor has ONNX type %s (%d), which covenant does not support (it supports "
                "FLOAT, FLOAT16, BFLOAT16, INT8, UINT8, INT32, INT64 and BOOL)",
                onnx_dtype_name(tp->data_type), (int)tp->data_type);
  if (tp->segment) return terr(file, what, COV_UNSUPPORTED, "segmented tensors are not supported");
  if (tp->n_dims > COV_MAX_RANK)
    return terr(file, what, COV_UNSUPPORTED, "tensor has rank %zu; covenant supports up to %d",
                tp->n_dims, COV_MAX_RANK);
  info->rank = (int)tp->n_dims;
  uint64_t numel = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    int64_t d = tp->dims[i];
    if (d < 0)
      return terr(file, what, COV_INVALID_INPUT, "dim %zu is negative (%lld)", i, (long long)d);
    if (__builtin_mul_overflow(numel, (uint64_t)d, &numel))
      return terr(file, what, COV_OUT_OF_RANGE, "the product of the dims overflows 64 bits");
    info->dims[i] = d;
  }
  uint64_t bytes;
  size_t esize = cov_dtype_size(info->dtype);
  if (__builtin_mul_overflow(numel, (uint64_t)esize, &bytes) || bytes > COV_TENSOR_MAX_BYTES)
    return terr(file, what, COV_OUT_OF_RANGE,
                "tensor of %llu elements is larger than the limit of %llu bytes",
                (unsigned long long)numel, (unsigned long long)COV_TENSOR_MAX_BYTES);
  info->nbytes = (size_t)bytes;

  bool external =
      tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  size_t typed = typed_count(tp, info->dtype), other = other_typed_count(tp, info->dtype);
  if (other)
    return terr(file, what, COV_INVALID_INPUT,
                "tensor of type %s has data in a field for another type",
                onnx_dtype_name(tp->data_type));
  int sources = (tp->has_raw_data ? 1 : 0) + (typed ? 1 : 0) + (external ? 1 : 0);
  if (sources > 1)
    return terr(file, what, COV_INVALID_INPUT,
                "tensor has its data in more than one place (raw_data, typed fields, external)");
  if (external) return check_external(tp, file, what, dir, arena, info);
  if (tp->has_raw_data) {
    if (tp->raw_data.len != info->nbytes)
      return terr(file, what, COV_INVALID_INPUT,
                  "raw_data holds %zu bytes, but %llu elements of %s need %zu", tp->raw_data.len,
                  (unsigned long long)numel, onnx_dtype_name(tp->data_type), info->nbytes);
    return NULL;
  }
  if (typed != numel)
    return terr(file, what, COV_INVALID_INPUT,
                "tensor has %zu elements of data, but its shape needs %llu", typed,
                (unsigned long long)numel);
  return NULL;
}

static cov_status fill_external(const onnx_tensor_info *info, const char *file, const char *what,
                                void *dst) {
  int fd = open(info->ext_path, O_RDONLY);
  if (fd < 0)
    return terr(file, what, COV_IO_ERROR, "cannot open external data '%s': %s", info->ext_path,
                strerror(errno));
  size_t done = 0;
  while (done < info->nbytes) {
    ssize_t got =
        pread(fd, (char *)dst + done, info->nbytes - done, (off_t)(info->ext_offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      int err = errno;
      close(fd);
      return terr(file, what, COV_IO_ERROR, "reading external data '%s': %s", info->ext_path,
                  got == 0 ? "the file became shorter" : strerror(err));
    }
    done += (size_t)got;
  }
  close(fd);
  return NULL;
}

cov_status onnx_tensor_fill(const Onnx__TensorProto *tp, const onnx_tensor_info *info,
                            const char *file, const char *what, void *dst) {
  if (info->ext_path) return fill_external(info, file, what, dst);
  if (tp->has_raw_data) {
    if (info->nbytes) memcpy(dst, tp->raw_data.data, info->nbytes);
    return NULL;
  }
  size_t n = info->nbytes / (cov_dtype_size(info->dtype) ? cov_dtype_size(info->dtype) : 1);
  switch (info->dtype) {
    case COV_F32:
      if (n) memcpy(dst, tp->float_data, n * sizeof(float));
      return NULL;
    case COV_I64:
      if (n) memcpy(dst, tp->int64_data, n * sizeof(int64_t));
      return NULL;
    case COV_I32:
      if (n) memcpy(dst, tp->int32_data, n * sizeof(int32_t));
      return NULL;
    default: break;
  }
  /* 8- and 16-bit types travel widened to int32; each value must fit. */
  int32_t lo = 0, hi = 0;
  switch (info->dtype) {
    case COV_I8: lo = -128, hi = 127; break;
    case COV_U8: lo = 0, hi = 255; break;
    case COV_BOOL: lo = 0, hi = 1; break;
    case COV_F16:
    case COV_BF16: lo = 0, hi = 65535; break;
    default: return terr(file, what, COV_INTERNAL, "no typed-field decoder for this dtype");
  }
  for (size_t i = 0; i < n; i++) {
    int32_t x = tp->int32_data[i];
    if (x < lo || x > hi)
      return terr(file, what, COV_INVALID_INPUT,
                  "element %zu of int32_data is %d, outside the range of %s", i, (int)x,
                  onnx_dtype_name(tp->data_type));
    if (info->dtype == COV_F16 || info->dtype == COV_BF16)
      ((uint16_t *)dst)[i] = (uint16_t)x;
    else
      ((uint8_t *)dst)[i] = (uint8_t)(int8_t)x;
  }
  return NULL;
}

/* ---- standalone TensorProto files (public API) ------------------------- */

cov_status cov_onnx_tensor_read(const char *path, cov_tensor *out, char *out_name,
                                size_t name_size) {
  if (!path || !out) return cov_error(COV_INVALID_ARGUMENT, NULL, "cov_onnx_tensor_read: NULL");
  memset(out, 0, sizeof *out);
  if (out_name && name_size) out_name[0] = '\0';
  char *data = NULL;
  size_t size = 0;
  COV_RETURN_IF_ERROR(common_read_file(path, (size_t)COV_TENSOR_MAX_BYTES + (1u << 20), &data, &size));
  cov_status st =
      onnx_wire_check((const uint8_t *)data, size, &onnx__tensor_proto__descriptor, path);
  if (st) {
    free(data);
    return st;
  }
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, (const uint8_t *)data);
  free(data);
  cov_loc loc = {.file = path};
  if (!tp)
    return cov_error(COV_PARSE_ERROR, &loc,
                     "not a valid ONNX TensorProto (truncated or corrupt protobuf)");
  cov_arena *arena = cov_arena_create();
  char *dir = arena ? cov_arena_strdup(arena, path) : NULL;
  if (!dir) {
    onnx__tensor_proto__free_unpacked(tp, NULL);
    cov_arena_destroy(arena);
    return cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
  }
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    strcpy(dir, ".");
  char what[300];
  snprintf(what, sizeof what, "tensor '%.256s'", tp->name ? tp->name : "");
  onnx_tensor_info info;
  st = onnx_tensor_check(tp, path, what, slash == dir ? "/" : dir, arena, &info);
  if (!st) st = cov_tensor_alloc(out, info.dtype, info.rank, info.dims);
  if (!st) {
    st = onnx_tensor_fill(tp, &info, path, what, out->data);
    if (st) cov_tensor_release(out);
  }
  if (!st && out_name && name_size) snprintf(out_name, name_size, "%s", tp->name ? tp->name : "");
  onnx__tensor_proto__free_unpacked(tp, NULL);
  cov_arena_destroy(arena);
  return st;
}

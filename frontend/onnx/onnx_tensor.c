/* frontend/onnx/onnx_tensor.c: decoding ONNX TensorProtos (initializers, Constant
 * values, the conformance suite's .pb inputs).
 *
 * Every size is checked before anything is allocated: each dim must be
 * non-negative, their product must not overflow and must stay under
 * COV_TENSOR_MAX_BYTES, raw_data and typed fields must hold exactly that many
 * elements, and external data must lie inside the model's folder and inside
 * its file (opened once, link by link without following symbolic links, and
 * read from that descriptor only). Data are little-endian in the file and on every host covenant
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
#include "common/loc.h"
#include "covenant/model.h"
#include "frontend/onnx/onnx_internal.h"

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
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return COV_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return COV_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return COV_U16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return COV_U32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return COV_U64;
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

/* A non-negative decimal integer string, as external_data writes offsets:
 * 1 when it is one, 0 when it is not, -1 when it is one but above 2^64-1. */
static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return 0;
  uint64_t v = 0;
  int big = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return 0;
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) big = 1;
    else v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return big ? -1 : 1;
}

/* The message for a link met while opening external data: where it leads
 * (for the reader; the file is never opened through it). */
static cov_status link_error(const char *file, const char *what, const char *dir,
                             const char *location, const char *joined) {
  char real_dir[PATH_MAX], real_file[PATH_MAX];
  if (realpath(dir, real_dir) && realpath(joined, real_file)) {
    size_t nd = strlen(real_dir);
    int inside = strncmp(real_file, real_dir, nd) == 0 &&
                 (real_file[nd] == '/' || (nd == 1 && real_dir[0] == '/'));
    if (!inside)
      return terr(file, what, COV_INVALID_INPUT,
                  "external data location '%s' resolves to '%s', outside the model's folder "
                  "'%s' (through a symbolic link, which covenant does not follow)",
                  location, real_file, real_dir);
  }
  return terr(file, what, COV_INVALID_INPUT,
              "external data location '%s' goes through a symbolic link; covenant reads "
              "external data only from files inside the model's folder reached without links",
              location);
}

/* Opens `location` inside `dir` and returns the descriptor: the one the data
 * is then read from, so what was checked is what is read. Refused: absolute
 * paths, '..' components, a location naming the folder itself, and symbolic
 * links anywhere below the folder (each component is opened with O_NOFOLLOW
 * relative to its parent's descriptor, so swapping a file for a link at any
 * moment cannot lead outside); the file must be a regular file (opened
 * O_NONBLOCK, so a FIFO cannot block the open). */
static cov_status open_external(const char *file, const char *what, const char *dir,
                                const char *location, cov_arena *arena, const char **out_path,
                                int *out_fd) {
  *out_fd = -1;
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
  int n_names = 0;
  for (const char *p = location; *p;) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return terr(file, what, COV_INVALID_INPUT,
                  "external data location '%s' leaves the model's folder ('..' is refused)",
                  location);
    if (len > NAME_MAX)
      return terr(file, what, COV_INVALID_INPUT,
                  "external data location '%.64s...' has a component longer than %d bytes",
                  location, NAME_MAX);
    if (len && !(len == 1 && p[0] == '.')) n_names++;
    p += len + (slash ? 1 : 0);
  }
  if (!n_names)
    return terr(file, what, COV_INVALID_INPUT,
                "external data location '%s' names the model's folder itself, not a file in it",
                location);
  char *joined = cov_arena_printf(arena, "%s/%s", dir, location);
  if (!joined) return terr(file, what, COV_OUT_OF_MEMORY, "out of memory");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return terr(file, what, COV_IO_ERROR, "cannot open the model's folder '%s': %s", dir,
                strerror(errno));
  for (const char *p = location; *p;) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    char name[NAME_MAX + 1];
    memcpy(name, p, len);
    name[len] = '\0';
    p += len + (slash ? 1 : 0);
    if (!len || (len == 1 && name[0] == '.')) continue;
    int last = --n_names == 0;
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
    int next = openat(fd, name, flags);
    int err = errno;
    if (next < 0) {
      struct stat lsb;
      int is_link = fstatat(fd, name, &lsb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lsb.st_mode);
      close(fd);
      if (is_link || err == ELOOP) return link_error(file, what, dir, location, joined);
      return terr(file, what, err == ENOENT ? COV_NOT_FOUND : COV_IO_ERROR,
                  "external data file '%s' cannot be opened: %s", joined, strerror(err));
    }
    close(fd);
    fd = next;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return terr(file, what, COV_INVALID_INPUT, "external data '%s' is not a regular file", joined);
  }
  *out_path = joined;
  *out_fd = fd;
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
  const char *const names[2] = {"offset", "length"};
  const char *const texts[2] = {offset_s, length_s};
  uint64_t *const vals[2] = {&offset, &length};
  for (int k = 0; k < 2; k++) {
    if (!texts[k]) continue;
    int r = parse_u64(texts[k], vals[k]);
    if (r == 0)
      return terr(file, what, COV_INVALID_INPUT,
                  "external data %s '%s' is not a non-negative integer", names[k], texts[k]);
    if (r < 0)
      return terr(file, what, COV_OUT_OF_RANGE,
                  "external data %s '%s' is too large (more than 2^64-1)", names[k], texts[k]);
  }
  const char *path = NULL;
  int fd = -1;
  COV_RETURN_IF_ERROR(open_external(file, what, dir, location, arena, &path, &fd));
  struct stat sb;
  cov_status st = NULL;
  if (fstat(fd, &sb) != 0) {
    st = terr(file, what, COV_IO_ERROR, "external data file '%s': %s", path, strerror(errno));
    close(fd);
    return st;
  }
  uint64_t fsize = (uint64_t)sb.st_size;
  if (!length_s && offset <= fsize) length = fsize - offset;
  if (offset > fsize)
    st = terr(file, what, COV_INVALID_INPUT,
              "external data offset %llu is past the end of '%s' (%llu bytes)",
              (unsigned long long)offset, path, (unsigned long long)fsize);
  else if (length > fsize - offset)
    st = terr(file, what, COV_INVALID_INPUT,
              "external data range %llu+%llu runs past the end of '%s' (%llu bytes)",
              (unsigned long long)offset, (unsigned long long)length, path,
              (unsigned long long)fsize);
  else if (length != info->nbytes)
    st = terr(file, what, COV_INVALID_INPUT,
              "external data holds %llu bytes, but the shape and dtype need %zu",
              (unsigned long long)length, info->nbytes);
  if (st) {
    close(fd);
    return st;
  }
  info->ext_path = path;
  info->ext_fd = fd;
  info->ext_offset = offset;
  return NULL;
}

void onnx_tensor_info_release(onnx_tensor_info *info) {
  if (info->ext_path && info->ext_fd >= 0) close(info->ext_fd);
  info->ext_fd = -1;
}

/* Which typed field holds a dtype's elements, and how many it has. */
static size_t typed_count(const Onnx__TensorProto *tp, cov_dtype t) {
  switch (t) {
    case COV_F32: return tp->n_float_data;
    case COV_F64: return tp->n_double_data;
    case COV_I64: return tp->n_int64_data;
    case COV_U32:
    case COV_U64: return tp->n_uint64_data;
    default: return tp->n_int32_data;
  }
}

static size_t other_typed_count(const Onnx__TensorProto *tp, cov_dtype t) {
  bool wide_u = t == COV_U32 || t == COV_U64;
  size_t n = tp->n_string_data;
  if (!wide_u) n += tp->n_uint64_data;
  if (t != COV_F64) n += tp->n_double_data;
  if (t != COV_F32) n += tp->n_float_data;
  if (t != COV_I64) n += tp->n_int64_data;
  if (t == COV_F32 || t == COV_I64 || wide_u) n += tp->n_int32_data;
  return n;
}

cov_status onnx_tensor_check(const Onnx__TensorProto *tp, const char *file, const char *what,
                             const char *dir, cov_arena *arena, onnx_tensor_info *info) {
  memset(info, 0, sizeof *info);
  info->ext_fd = -1;
  if (!tp->has_data_type || tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
    return terr(file, what, COV_INVALID_INPUT, "tensor has no data type");
  info->dtype = onnx_dtype(tp->data_type);
  if (info->dtype == COV_DTYPE_INVALID)
    return terr(file, what, COV_UNSUPPORTED,
                "tensor has ONNX type %s (%d), which covenant does not support (it supports "
                "FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8, UINT8, INT16, UINT16, INT32, UINT32, "
                "INT64, UINT64 and BOOL)",
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

/* Reads from the descriptor onnx_tensor_check opened and checked; closes it. */
static cov_status fill_external(onnx_tensor_info *info, const char *file, const char *what,
                                void *dst) {
  size_t done = 0;
  while (done < info->nbytes) {
    ssize_t got = pread(info->ext_fd, (char *)dst + done, info->nbytes - done,
                        (off_t)(info->ext_offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      int err = errno;
      onnx_tensor_info_release(info);
      return terr(file, what, COV_IO_ERROR, "reading external data '%s': %s", info->ext_path,
                  got == 0 ? "the file became shorter" : strerror(err));
    }
    done += (size_t)got;
  }
  onnx_tensor_info_release(info);
  return NULL;
}

cov_status onnx_tensor_fill(const Onnx__TensorProto *tp, onnx_tensor_info *info,
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
    case COV_F64:
      if (n) memcpy(dst, tp->double_data, n * sizeof(double));
      return NULL;
    case COV_I64:
      if (n) memcpy(dst, tp->int64_data, n * sizeof(int64_t));
      return NULL;
    case COV_I32:
      if (n) memcpy(dst, tp->int32_data, n * sizeof(int32_t));
      return NULL;
    case COV_U64:
      if (n) memcpy(dst, tp->uint64_data, n * sizeof(uint64_t));
      return NULL;
    case COV_U32:
      for (size_t i = 0; i < n; i++) {
        if (tp->uint64_data[i] > UINT32_MAX)
          return terr(file, what, COV_INVALID_INPUT,
                      "element %zu of uint64_data is %llu, outside the range of UINT32", i,
                      (unsigned long long)tp->uint64_data[i]);
        ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
      }
      return NULL;
    default: break;
  }
  /* 8- and 16-bit types travel widened to int32; each value must fit. */
  int32_t lo = 0, hi = 0;
  switch (info->dtype) {
    case COV_I8: lo = -128, hi = 127; break;
    case COV_U8: lo = 0, hi = 255; break;
    case COV_BOOL: lo = 0, hi = 1; break;
    case COV_I16: lo = -32768, hi = 32767; break;
    case COV_U16:
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
    if (cov_dtype_size(info->dtype) == 2)
      ((uint16_t *)dst)[i] = (uint16_t)x;
    else
      ((uint8_t *)dst)[i] = (uint8_t)(int8_t)x;
  }
  return NULL;
}

/* ---- standalone TensorProto files (public API) ------------------------- */

cov_status onnx_tensor_decode(const uint8_t *data, size_t size, const char *path, const char *what_in,
                              cov_tensor *out, char *out_name, size_t name_size) {
  memset(out, 0, sizeof *out);
  cov_status st = onnx_wire_check(data, size, &onnx__tensor_proto__descriptor, path);
  if (st) return st;
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
  cov_loc loc = {.file = path};
  if (!tp)
    return cov_error(COV_PARSE_ERROR, &loc, "%s%snot a valid ONNX TensorProto (truncated or corrupt protobuf)",
                     what_in ? what_in : "", what_in ? ": " : "");
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
  if (what_in)
    snprintf(what, sizeof what, "%.256s", what_in);
  else
    snprintf(what, sizeof what, "tensor '%.256s'", tp->name ? tp->name : "");
  onnx_tensor_info info;
  st = onnx_tensor_check(tp, path, what, slash == dir ? "/" : dir, arena, &info);
  if (!st) {
    st = cov_tensor_alloc(out, info.dtype, info.rank, info.dims);
    if (st) onnx_tensor_info_release(&info);
  }
  if (!st) {
    st = onnx_tensor_fill(tp, &info, path, what, out->data);
    if (st) cov_tensor_release(out);
  }
  if (!st && out_name && name_size) snprintf(out_name, name_size, "%s", tp->name ? tp->name : "");
  onnx__tensor_proto__free_unpacked(tp, NULL);
  cov_arena_destroy(arena);
  return st;
}

cov_status cov_onnx_tensor_read(const char *path, cov_tensor *out, char *out_name,
                                size_t name_size) {
  if (!path || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_onnx_tensor_read"), "NULL");
  memset(out, 0, sizeof *out);
  if (out_name && name_size) out_name[0] = '\0';
  char *data = NULL;
  size_t size = 0;
  COV_RETURN_IF_ERROR(common_read_file(path, (size_t)COV_TENSOR_MAX_BYTES + (1u << 20), &data, &size));
  cov_status st = onnx_tensor_decode((const uint8_t *)data, size, path, NULL, out, out_name, name_size);
  free(data);
  return st;
}

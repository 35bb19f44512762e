/* frontend/onnx/onnx_sequence.c: SequenceProto and OptionalProto files
 * (onnx-data.proto), the form the ONNX test data gives a sequence's or an
 * optional's value, read into a cov_sequence (covenant/model.h). An
 * optional of a sequence is an OptionalProto holding one SequenceProto
 * (or nothing: none), whose tensors are read as a sequence's are.
 *
 * The bindings are generated from onnx.proto alone, which does not define
 * these two messages, so their outer framing is walked here by hand: one
 * flat pass over the wire format (no recursion), each tensor field handed
 * to the TensorProto decoder (onnx_tensor_decode, itself preceded by the
 * wire pre-flight check). Only tensors are taken as elements: a nested
 * sequence, a map, an optional or a sparse tensor is refused by name.
 * Bounds: the element count (COV_SEQUENCE_MAX_LENGTH, counted before any
 * element is decoded) and the elements' bytes together
 * (COV_TENSOR_MAX_BYTES), so a small file cannot ask for unbounded work. */
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/loc.h"
#include "covenant/model.h"
#include "frontend/onnx/onnx_internal.h"

/* SequenceProto / OptionalProto field numbers (onnx-data.proto); both
 * messages number their fields alike. */
enum { F_NAME = 1, F_ELEM_TYPE = 2, F_TENSOR = 3, F_SPARSE = 4, F_SEQUENCE = 5, F_MAP = 6, F_OPTIONAL = 7 };
/* Their DataType enum: what the elements are. */
enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1 };

typedef struct wire_field {
  uint32_t number, type;
  uint64_t varint;
  const uint8_t *bytes; /* LEN fields */
  size_t len;
} wire_field;

/* The next field at *pos; 0 on malformed framing (or a group). */
static int next_field(const uint8_t *p, size_t size, size_t *pos, wire_field *f) {
  uint64_t key;
  if (!onnx_read_varint(p, size, pos, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX) return 0;
  memset(f, 0, sizeof *f);
  f->number = (uint32_t)(key >> 3);
  f->type = (uint32_t)(key & 7);
  switch (f->type) {
    case 0: return onnx_read_varint(p, size, pos, &f->varint);
    case 1:
    case 5: {
      size_t w = f->type == 1 ? 8 : 4;
      if (size - *pos < w) return 0;
      *pos += w;
      return 1;
    }
    case 2: {
      uint64_t len;
      if (!onnx_read_varint(p, size, pos, &len) || len > size - *pos) return 0;
      f->bytes = p + *pos;
      f->len = (size_t)len;
      *pos += (size_t)len;
      return 1;
    }
    default: return 0;
  }
}

static const char *field_what(uint32_t number) {
  switch (number) {
    case F_SPARSE: return "a sparse tensor";
    case F_SEQUENCE: return "a nested sequence";
    case F_MAP: return "a map";
    default: return "a nested optional";
  }
}

/* First pass: the framing is sound, the elements are tensors, how many. */
static cov_status scan(const uint8_t *p, size_t size, const char *path, const char *kind,
                       size_t *n_tensors) {
  cov_loc loc = {.file = path};
  size_t pos = 0;
  wire_field f;
  *n_tensors = 0;
  while (pos < size) {
    if (!next_field(p, size, &pos, &f))
      return cov_error(COV_PARSE_ERROR, &loc, "not a valid ONNX %s (truncated or corrupt protobuf)", kind);
    if (f.number == F_ELEM_TYPE && f.type == 0 && f.varint != ELEM_UNDEFINED && f.varint != ELEM_TENSOR)
      return cov_error(COV_UNSUPPORTED, &loc,
                       "the %s's elements have type %llu; covenant takes sequences and optionals of "
                       "tensors only",
                       kind, (unsigned long long)f.varint);
    if (f.number >= F_SPARSE && f.number <= F_OPTIONAL && f.type == 2)
      return cov_error(COV_UNSUPPORTED, &loc,
                       "the %s holds %s; covenant takes sequences and optionals of tensors only", kind,
                       field_what(f.number));
    if (f.number == F_TENSOR && f.type == 2 && ++*n_tensors > COV_SEQUENCE_MAX_LENGTH)
      return cov_error(COV_OUT_OF_RANGE, &loc, "the %s has more than %d tensors", kind,
                       COV_SEQUENCE_MAX_LENGTH);
  }
  return NULL;
}

static const char *optional_word(const cov_sequence *seq) {
  return cov_sequence_is_optional(seq) ? "optional" : "sequence";
}

/* Second pass: each tensor decoded and appended, their bytes bounded. */
static cov_status decode_all(const uint8_t *p, size_t size, const char *path, const char *kind,
                             cov_sequence *seq) {
  cov_loc loc = {.file = path};
  size_t pos = 0, k = 0;
  uint64_t total = 0;
  wire_field f;
  while (pos < size && next_field(p, size, &pos, &f)) {
    if (f.number != F_TENSOR || f.type != 2) continue;
    char what[64];
    snprintf(what, sizeof what, "%s element %zu", kind, k++);
    cov_tensor t;
    COV_RETURN_IF_ERROR(onnx_tensor_decode(f.bytes, f.len, path, what, &t, NULL, 0));
    total += (uint64_t)cov_tensor_numel(&t) * cov_dtype_size(t.dtype);
    cov_status st = NULL;
    if (t.dtype != cov_sequence_dtype(seq))
      st = cov_error(COV_INVALID_INPUT, &loc, "%s is a %s tensor; the %s holds %s", what,
                     cov_dtype_name(t.dtype), optional_word(seq), cov_dtype_name(cov_sequence_dtype(seq)));
    else if (total > COV_TENSOR_MAX_BYTES)
      st = cov_error(COV_OUT_OF_RANGE, &loc, "the %s's tensors hold more than %llu bytes together", kind,
                     (unsigned long long)COV_TENSOR_MAX_BYTES);
    else
      st = cov_sequence_append(seq, &t);
    cov_tensor_release(&t);
    if (st) return st;
  }
  return NULL;
}

cov_status cov_onnx_sequence_read(const char *path, cov_dtype dtype, bool optional, cov_sequence **out) {
  if (!path || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_onnx_sequence_read"), "NULL");
  *out = NULL;
  const char *kind = optional ? "OptionalProto" : "SequenceProto";
  char *data = NULL;
  size_t size = 0, n = 0;
  COV_RETURN_IF_ERROR(common_read_file(path, (size_t)COV_TENSOR_MAX_BYTES + (1u << 20), &data, &size));
  cov_sequence *seq = NULL;
  cov_status st = scan((const uint8_t *)data, size, path, kind, &n);
  if (!st && optional && n > 1) {
    cov_loc loc = {.file = path};
    st = cov_error(COV_INVALID_INPUT, &loc, "the OptionalProto has %zu tensor values", n);
  }
  if (!st) st = cov_sequence_create(dtype, optional, &seq);
  if (!st) st = decode_all((const uint8_t *)data, size, path, kind, seq);
  free(data);
  if (st) {
    cov_sequence_free(seq);
    return st;
  }
  *out = seq;
  return NULL;
}

/* OptionalProto's elem_type values (onnx-data.proto). */
enum { OPT_TENSOR = 1, OPT_SEQUENCE = 3 };

/* The outer OptionalProto of an optional sequence: its SequenceProto's
 * bytes (*seq NULL: it holds none); anything else it holds is refused. */
static cov_status optional_outer(const uint8_t *p, size_t size, const char *path,
                                 const uint8_t **seq, size_t *seq_len) {
  cov_loc loc = {.file = path};
  size_t pos = 0;
  wire_field f;
  *seq = NULL;
  *seq_len = 0;
  while (pos < size) {
    if (!next_field(p, size, &pos, &f))
      return cov_error(COV_PARSE_ERROR, &loc, "not a valid ONNX OptionalProto (truncated or corrupt protobuf)");
    if (f.number == F_ELEM_TYPE && f.type == 0 && f.varint != ELEM_UNDEFINED && f.varint != OPT_SEQUENCE)
      return cov_error(COV_INVALID_INPUT, &loc,
                       "the OptionalProto holds elements of type %llu; the input is an optional of "
                       "a sequence of tensors",
                       (unsigned long long)f.varint);
    if (f.type != 2 || f.number < F_TENSOR || f.number > F_OPTIONAL) continue;
    if (f.number != F_SEQUENCE)
      return cov_error(COV_INVALID_INPUT, &loc,
                       "the OptionalProto holds %s; the input is an optional of a sequence of "
                       "tensors",
                       f.number == F_TENSOR ? "a tensor" : field_what(f.number));
    if (*seq)
      return cov_error(COV_INVALID_INPUT, &loc, "the OptionalProto holds more than one sequence");
    *seq = f.bytes;
    *seq_len = f.len;
  }
  return NULL;
}

cov_status cov_onnx_optional_sequence_read(const char *path, cov_dtype dtype, cov_sequence **out) {
  if (!path || !out)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_onnx_optional_sequence_read"), "NULL");
  *out = NULL;
  char *data = NULL;
  size_t size = 0, n = 0, len = 0;
  const uint8_t *inner = NULL;
  COV_RETURN_IF_ERROR(common_read_file(path, (size_t)COV_TENSOR_MAX_BYTES + (1u << 20), &data, &size));
  const char *kind = "OptionalProto's SequenceProto";
  cov_sequence *seq = NULL;
  cov_status st = optional_outer((const uint8_t *)data, size, path, &inner, &len);
  if (!st && inner) st = scan(inner, len, path, kind, &n);
  if (!st) st = cov_sequence_create_optional_sequence(dtype, inner == NULL, &seq);
  if (!st && inner) st = decode_all(inner, len, path, kind, seq);
  free(data);
  if (st) {
    cov_sequence_free(seq);
    return st;
  }
  *out = seq;
  return NULL;
}

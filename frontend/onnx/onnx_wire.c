/* frontend/onnx/onnx_wire.c: a pre-flight check of protobuf framing.
 *
 * protobuf-c decodes nested messages recursively with no depth limit, and an
 * empty nested message costs two bytes of input but a whole C struct of
 * memory. A hostile file of a few megabytes could therefore overflow the stack
 * (attribute -> graph -> node -> attribute -> ...) or ask for gigabytes.
 * Before protobuf-c sees the bytes, this walks the wire format once, guided
 * by the generated descriptors (so it knows which length-delimited fields are
 * messages), without recursion, and refuses files nested too deep or whose
 * decoded form would be too large. It decodes no values: protobuf-c remains
 * the only parser. */
#include <stdint.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

#define WIRE_MAX_DEPTH 64
/* Decoded structures past this are refused (they also hold copies of every
 * bytes field, which the estimate counts). */
#define WIRE_MAX_DECODED_BYTES ((uint64_t)6 << 30)

typedef struct frame {
  const ProtobufCMessageDescriptor *desc;
  size_t end;
} frame;

int onnx_read_varint(const uint8_t *p, size_t size, size_t *pos, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= size) return 0;
    uint8_t b = p[(*pos)++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 1;
    }
  }
  return 0; /* more than 10 bytes */
}

cov_status onnx_wire_check(const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *root,
                           const char *file) {
  cov_loc loc = {.file = file};
  const char *what = root == &onnx__tensor_proto__descriptor ? "TensorProto" : "model";
  frame stack[WIRE_MAX_DEPTH + 1];
  int depth = 0;
  stack[0] = (frame){root, size};
  uint64_t decoded = root->sizeof_message;
  size_t pos = 0;
  for (;;) {
    while (depth > 0 && pos == stack[depth].end) depth--;
    if (pos == stack[depth].end) break; /* depth 0 and the whole input consumed */
    size_t end = stack[depth].end;
    size_t at = pos;
    uint64_t key;
    if (!onnx_read_varint(data, end, &pos, &key))
      return cov_error(COV_PARSE_ERROR, &loc,
                       "not a valid ONNX %s: truncated or corrupt protobuf at byte %zu", what, at);
    uint32_t field = (uint32_t)(key >> 3);
    unsigned wire = (unsigned)(key & 7);
    if (field == 0 || key >> 32)
      return cov_error(COV_PARSE_ERROR, &loc,
                       "not a valid ONNX %s: invalid protobuf field number at byte %zu", what, at);
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field(stack[depth].desc, field);
    uint64_t len = 0;
    switch (wire) {
      case 0: /* varint */
        if (!onnx_read_varint(data, end, &pos, &len))
          return cov_error(COV_PARSE_ERROR, &loc,
                           "not a valid ONNX %s: truncated or corrupt protobuf at byte %zu", what,
                           at);
        decoded += 8;
        break;
      case 1: /* fixed64 */
        if (end - pos < 8)
          return cov_error(COV_PARSE_ERROR, &loc,
                           "not a valid ONNX %s: truncated protobuf at byte %zu", what, at);
        pos += 8;
        decoded += 8;
        break;
      case 5: /* fixed32 */
        if (end - pos < 4)
          return cov_error(COV_PARSE_ERROR, &loc,
                           "not a valid ONNX %s: truncated protobuf at byte %zu", what, at);
        pos += 4;
        decoded += 8;
        break;
      case 2: /* length-delimited: bytes, string, packed array or message */
        if (!onnx_read_varint(data, end, &pos, &len) || len > end - pos)
          return cov_error(COV_PARSE_ERROR, &loc,
                           "not a valid ONNX %s: truncated or corrupt protobuf at byte %zu "
                           "(a field claims more bytes than remain)",
                           what, at);
        if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
          if (depth == WIRE_MAX_DEPTH)
            return cov_error(COV_OUT_OF_RANGE, &loc,
                             "ONNX %s nests messages more than %d deep (at byte %zu); refused",
                             what, WIRE_MAX_DEPTH, at);
          const ProtobufCMessageDescriptor *sub = fd->descriptor;
          decoded += sub->sizeof_message + 8;
          stack[++depth] = (frame){sub, pos + (size_t)len};
        } else {
          /* protobuf-c hands strings over NUL-terminated: a NUL inside one
           * would silently cut it (an external data location, a name). */
          if (fd && fd->type == PROTOBUF_C_TYPE_STRING && len && memchr(data + pos, 0, (size_t)len))
            return cov_error(COV_INVALID_INPUT, &loc,
                             "not a valid ONNX %s: the string field '%s' of %s at byte %zu holds "
                             "a NUL byte (at its byte %zu); refused rather than cut short there",
                             what, fd->name, stack[depth].desc->short_name, at,
                             (size_t)((const uint8_t *)memchr(data + pos, 0, (size_t)len) -
                                      (data + pos)));
          /* Packed scalars expand at most 8x (a one-byte varint becomes an
           * int64); bytes and strings are copied. */
          decoded += (fd && fd->label == PROTOBUF_C_LABEL_REPEATED &&
                      fd->type != PROTOBUF_C_TYPE_STRING && fd->type != PROTOBUF_C_TYPE_BYTES)
                         ? len * 8
                         : len + 16;
          pos += (size_t)len;
        }
        break;
      default: /* groups (3, 4) are not used by onnx.proto; 6, 7 do not exist */
        return cov_error(COV_PARSE_ERROR, &loc,
                         "not a valid ONNX %s: unexpected protobuf wire type %u at byte %zu", what,
                         wire, at);
    }
    if (decoded > WIRE_MAX_DECODED_BYTES)
      return cov_error(COV_OUT_OF_RANGE, &loc,
                       "ONNX %s would take more than %llu GiB to decode; refused", what,
                       (unsigned long long)(WIRE_MAX_DECODED_BYTES >> 30));
  }
  return NULL;
}

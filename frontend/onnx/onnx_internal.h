/* frontend/onnx/onnx_internal.h: the ONNX reader's pieces (onnx_*.c). */
#ifndef COV_FRONTEND_ONNX_INTERNAL_H
#define COV_FRONTEND_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "covenant/status.h"
#include "covenant/tensor.h"
#include "frontend/graph.h"
#include "onnx.pb-c.h"

/* Walks the protobuf framing of `data` (a `root` message) and refuses nesting
 * deeper than protobuf-c can safely recurse, or a decoded size past a limit. */
/* One protobuf varint at *pos (advanced past it); 0 when it runs past size
 * or is longer than 10 bytes (onnx_wire.c). */
int onnx_read_varint(const uint8_t *p, size_t size, size_t *pos, uint64_t *out);
cov_status onnx_wire_check(const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *root,
                           const char *file);

/* ONNX TensorProto.DataType -> covenant dtype (COV_DTYPE_INVALID if none). */
cov_dtype onnx_dtype(int32_t onnx_type);
/* "FLOAT", "DOUBLE", ... for messages. */
const char *onnx_dtype_name(int32_t onnx_type);

/* What a TensorProto holds, every size checked, before anything is allocated. */
typedef struct onnx_tensor_info {
  cov_dtype dtype;
  int rank;
  int64_t dims[COV_MAX_RANK];
  size_t nbytes;
  /* external data (ext_path NULL when inline): the file opened and checked
   * inside the model's folder, read by onnx_tensor_fill from ext_fd only */
  const char *ext_path;
  int ext_fd;
  uint64_t ext_offset;
} onnx_tensor_info;

/* Checks a TensorProto: dtype, dims (no negatives, no overflow, within
 * COV_TENSOR_MAX_BYTES), and that its data (raw_data, a typed field or an
 * external file resolved inside `dir`) holds exactly the elements its shape
 * says. `file` and `what` ("initializer 'w'") locate errors. ext_path is
 * allocated in `arena`. */
cov_status onnx_tensor_check(const Onnx__TensorProto *tp, const char *file, const char *what,
                             const char *dir, cov_arena *arena, onnx_tensor_info *info);
/* Copies the elements into dst (info->nbytes bytes); closes the external
 * data's descriptor. */
cov_status onnx_tensor_fill(const Onnx__TensorProto *tp, onnx_tensor_info *info,
                            const char *file, const char *what, void *dst);
/* A serialized TensorProto (a file's bytes, or a field of one) into *out;
 * external data resolves next to `path`. `what` names it in errors (NULL:
 * "tensor 'NAME'"). */
cov_status onnx_tensor_decode(const uint8_t *data, size_t size, const char *path, const char *what,
                              cov_tensor *out, char *out_name, size_t name_size);
/* Closes the external data's descriptor when onnx_tensor_fill is not called
 * after a successful onnx_tensor_check. */
void onnx_tensor_info_release(onnx_tensor_info *info);

/* The reader's state for one graph: the model's, or a subgraph's
 * (onnx_subgraph.c), whose names not defined in it resolve in its parents. */
typedef struct reader {
  graph *g;
  const Onnx__GraphProto *gp;
  const Onnx__ModelProto *mp;
  cov_status errors;
  /* name -> value, open addressing (names are unique by construction) */
  graph_value **slots;
  size_t n_slots;
  bool fatal; /* out of memory or past a limit: stop adding errors per node */
  size_t n_errors;
  uint64_t tensor_bytes; /* initializers and tensor attributes read so far */
  struct reader *parent; /* a subgraph's: its owner node's graph */
  graph_node *owner;     /* the node whose attribute the subgraph is */
  size_t *sub_nodes;     /* nodes in the model's subgraphs so far (the root's counter) */
} reader;

void onnx_add_error(reader *R, cov_status st);
/* Sorts g->nodes topologically, stable; a cycle is one error (onnx_order.c). */
void onnx_sort_nodes(reader *R);
int onnx_table_init(reader *R, size_t expected);
graph_value *onnx_table_find(const reader *R, const char *name);
void onnx_table_put(reader *R, graph_value *v);
/* Reads R->gp into R->g: initializers, inputs, nodes (and their subgraphs),
 * outputs; checks and sorts the nodes. Errors go to R->errors. */
void onnx_read_body(reader *R);

/* onnx_subgraph.c: the value `name` of an enclosing scope, captured into
 * R's graph (and every graph between) as an implicit input of the owner
 * node; NULL when no scope defines it. */
graph_value *onnx_capture(reader *R, const char *name);
/* Reads the graph attributes of node n (declared from np) into subgraphs. */
void onnx_read_subgraphs(reader *R, graph_node *n, const Onnx__NodeProto *np);

/* onnx_unroll.c: replaces each Loop with a small constant trip count by
 * copies of its body (its conditions in the file's comment). */
void onnx_unroll_loops(reader *R);

/* Reads a whole model into a graph: values, nodes (topologically sorted),
 * attributes, inputs and outputs. No inference happens here. */
cov_status onnx_read_graph(const uint8_t *data, size_t size, graph *g);

#endif

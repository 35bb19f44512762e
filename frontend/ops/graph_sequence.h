/* frontend/ops/graph_sequence.h: sequences and optionals of tensors at run time.
 *
 * A value with graph_value.seq set is a sequence of tensors of its dtype
 * (rank -1: each element has its own shape). Its data is one malloc'ed
 * block (so that it is freed, moved and copied like a tensor's): a header,
 * one entry per element (dtype, shape, offset), then the elements' bytes.
 * An optional is a sequence of at most one element (graph_value.opt). An
 * optional of a sequence (graph_value.opt_seq) is a sequence's block whose
 * header says whether the optional holds none. */
#ifndef COV_FRONTEND_GRAPH_SEQUENCE_H
#define COV_FRONTEND_GRAPH_SEQUENCE_H

#include "frontend/graph.h"

/* Elements of one sequence. */
#define GRAPH_MAX_SEQUENCE_LENGTH COV_SEQUENCE_MAX_LENGTH

typedef struct graph_seq_item {
  cov_dtype dtype;
  int rank;
  int64_t dims[COV_MAX_RANK];
  size_t offset, bytes; /* from the start of the block */
} graph_seq_item;

typedef struct graph_seq {
  size_t n, total; /* elements; bytes of the whole block */
  bool none;       /* an optional of a sequence (graph_value.opt_seq) holding none */
  graph_seq_item items[];
} graph_seq;

/* out = a sequence of the n values items[k] (data copied), within
 * GRAPH_MAX_SEQUENCE_LENGTH and the memory limit. */
cov_status graph_seq_make(const graph *g, const graph_node *n, const graph_value *const *items,
                          size_t count, graph_value *out);
/* Element k of sequence v as a value viewing its data. */
graph_value graph_seq_at(const graph_value *v, size_t k);
size_t graph_seq_length(const graph_value *v);
/* A copy of sequence src's block into dst (its type copied too). */
cov_status graph_seq_copy(const graph *g, const graph_node *n, const graph_value *src,
                          graph_value *dst);
/* The bytes a value's data holds: a tensor's numel x size, a sequence's block. */
size_t graph_value_bytes(const graph_value *v);

/* A model input's sequence or optional (model_sequence.c): `in` checked
 * against the declaration decl and copied into a block in v->data. */
cov_status graph_seq_bind_input(const graph *g, const graph_value *decl, const cov_sequence *in,
                                graph_value *v);
/* A model output's block v as a new cov_sequence. */
cov_status graph_seq_take_output(const graph *g, const graph_value *decl, const graph_value *v,
                                 cov_sequence **out);

#endif

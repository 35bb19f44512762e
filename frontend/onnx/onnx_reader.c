/* frontend/onnx/onnx_reader.c: an ONNX ModelProto -> graph IR.
 *
 * protobuf-c (bindings generated at build time from python3-onnx's
 * onnx.proto) does the decoding; this file checks what the decoded model
 * means: the opset, that every name a node reads is defined exactly once,
 * that initializers decode, that attributes are well-typed, and that the
 * nodes form an acyclic graph, which it sorts topologically. Like the ACG
 * loader it collects every error rather than stopping at the first, and all
 * unsupported operators go into one diagnostic.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"


/* Enough diagnostics to act on; a hostile file could otherwise ask for one
 * per node of a million-node graph. */
#define READER_MAX_ERRORS 100

void onnx_add_error(reader *R, cov_status st) {
  if (!st) return;
  if (R->n_errors >= READER_MAX_ERRORS) {
    cov_status_free(st);
    if (!R->fatal) {
      cov_loc loc = {.file = R->g->file};
      R->errors =
          cov_status_join(R->errors, cov_error(COV_INVALID_INPUT, &loc,
                                               "too many errors (%d); stopped reading the model",
                                               READER_MAX_ERRORS));
      R->fatal = true;
    }
    return;
  }
  R->n_errors += cov_status_count(st);
  R->errors = cov_status_join(R->errors, st);
}

static cov_status model_error(const graph *g, cov_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cov_status model_error(const graph *g, cov_code code, const char *fmt, ...) {
  cov_loc loc = {.file = g->file};
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(code, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- name table ------------------------------------------------------- */

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int onnx_table_init(reader *R, size_t expected) {
  size_t n = 64;
  while (n < expected * 2 + 16) n *= 2;
  R->slots = calloc(n, sizeof *R->slots);
  R->n_slots = n;
  return R->slots != NULL;
}

graph_value *onnx_table_find(const reader *R, const char *name) {
  size_t mask = R->n_slots - 1;
  for (size_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
    graph_value *v = R->slots[i];
    if (!v) return NULL;
    if (strcmp(v->name, name) == 0) return v;
  }
}

void onnx_table_put(reader *R, graph_value *v) {
  size_t mask = R->n_slots - 1;
  size_t i = hash_name(v->name) & mask;
  while (R->slots[i]) i = (i + 1) & mask;
  R->slots[i] = v;
}

/* ---- values ----------------------------------------------------------- */

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* A name with a NUL or control bytes would garble diagnostics and dumps. */
static bool valid_name(const char *s) {
  size_t n = 0;
  for (; *s; s++, n++)
    if ((unsigned char)*s < 0x20 || n > 4096) return false;
  return true;
}

/* Checks a TensorProto, bounds its size before a byte of it is read (the
 * memory limit per tensor, --max-memory, and GRAPH_MAX_TENSOR_DATA_BYTES
 * for all of them: external data can make a tiny file ask for gigabytes),
 * then reads it into the arena. */
static cov_status load_tensor(reader *R, const Onnx__TensorProto *tp, const char *what,
                              onnx_tensor_info *info, void **out) {
  graph *g = R->g;
  *out = NULL;
  COV_RETURN_IF_ERROR(onnx_tensor_check(tp, g->file, what, g->dir, g->arena, info));
  cov_loc loc = {.file = g->file};
  cov_status st = NULL;
  uint64_t limit = graph_memory_limit(g);
  if ((uint64_t)info->nbytes > limit)
    st = cov_error(COV_OUT_OF_RANGE, &loc,
                   "%s: holds %zu bytes, more than the memory limit of %llu bytes (--max-memory; "
                   "nothing was read)",
                   what, info->nbytes, (unsigned long long)limit);
  else if ((uint64_t)info->nbytes > GRAPH_MAX_TENSOR_DATA_BYTES - R->tensor_bytes)
    st = cov_error(COV_OUT_OF_RANGE, &loc,
                   "%s: with it the model's initializers and tensor attributes would hold more "
                   "than %llu bytes (nothing more was read)",
                   what, (unsigned long long)GRAPH_MAX_TENSOR_DATA_BYTES);
  void *data = st ? NULL : cov_arena_alloc(g->arena, info->nbytes);
  if (!st && !data) st = cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory reading %s", what);
  if (st) {
    onnx_tensor_info_release(info);
    return st;
  }
  R->tensor_bytes += info->nbytes;
  COV_RETURN_IF_ERROR(onnx_tensor_fill(tp, info, g->file, what, data));
  *out = data;
  return NULL;
}

/* The bytes a TensorProto's dims and dtype declare (0 where they are
 * invalid: onnx_tensor_check reports that), saturating at UINT64_MAX. */
static uint64_t declared_bytes(const Onnx__TensorProto *tp) {
  uint64_t b = cov_dtype_size(onnx_dtype(tp->data_type));
  for (size_t i = 0; i < tp->n_dims; i++) {
    if (tp->dims[i] < 0) return 0;
    if (__builtin_mul_overflow(b, (uint64_t)tp->dims[i], &b)) return UINT64_MAX;
  }
  return b;
}

/* Before any initializer is read: do they all fit the bound at once? (One
 * over the memory limit is never read: load_tensor names it.) */
static cov_status check_initializer_total(reader *R) {
  const Onnx__GraphProto *gp = R->gp;
  uint64_t total = 0, limit = graph_memory_limit(R->g);
  for (size_t i = 0; i < gp->n_initializer; i++) {
    uint64_t b = gp->initializer[i] ? declared_bytes(gp->initializer[i]) : 0;
    if (b > limit) continue;
    if (b > GRAPH_MAX_TENSOR_DATA_BYTES - total) {
      cov_loc loc = {.file = R->g->file};
      return cov_error(COV_OUT_OF_RANGE, &loc,
                       "the model's initializers declare more than %llu bytes in all (the limit "
                       "for a model's parameters, external data included; nothing was read)",
                       (unsigned long long)GRAPH_MAX_TENSOR_DATA_BYTES);
    }
    total += b;
  }
  return NULL;
}

static void read_initializer(reader *R, const Onnx__TensorProto *tp, size_t index) {
  graph *g = R->g;
  const char *name = str_or_empty(tp->name);
  char what[600];
  snprintf(what, sizeof what, "initializer '%.512s'", name);
  if (!*name) {
    onnx_add_error(R, model_error(g, COV_INVALID_INPUT, "initializer #%zu has no name", index));
    return;
  }
  if (!valid_name(name)) {
    onnx_add_error(R, model_error(g, COV_INVALID_INPUT,
                             "initializer #%zu has a name with control characters", index));
    return;
  }
  if (onnx_table_find(R, name)) {
    onnx_add_error(R, graph_value_error(g, onnx_table_find(R, name), COV_INVALID_INPUT,
                                   "defined twice (two initializers share the name)"));
    return;
  }
  /* The name is registered even when the tensor is bad, so that the nodes
   * reading it do not add a second, misleading "not produced" error. */
  graph_value *v = graph_add_value(g, name);
  if (!v) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_RANGE, "too many tensors (the limit is %d)",
                             GRAPH_MAX_VALUES));
    return;
  }
  v->kind = GV_INITIALIZER;
  onnx_table_put(R, v);
  onnx_tensor_info info;
  void *data;
  cov_status st = load_tensor(R, tp, what, &info, &data);
  if (st) {
    onnx_add_error(R, st);
    return;
  }
  v->dtype = info.dtype;
  graph_set_shape(v, info.rank, info.dims);
  v->data = data;
}

/* An input that shares an initializer's name. Before IR version 4 every
 * initializer was also listed as an input: it stays a constant. From IR
 * version 4 on the initializer is the input's default (onnx/IR.md, "Graphs"):
 * the value becomes an input whose default is a copy of the initializer,
 * and its type is read from the input's declaration. Returns the input, or
 * NULL where the initializer stays a constant. */
static graph_value *input_with_default(reader *R, graph_value *prev) {
  graph *g = R->g;
  if (g->ir_version < 4) return NULL;
  graph_value *d = cov_arena_alloc(g->arena, sizeof *d);
  if (!d) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
    return NULL;
  }
  *d = *prev;
  prev->kind = GV_INPUT;
  prev->data = NULL;
  prev->dtype = COV_DTYPE_INVALID;
  graph_set_shape(prev, -1, NULL);
  prev->default_value = d;
  return prev;
}

/* The default must be a value the input could be fed with. */
static void check_default(reader *R, const graph_value *v) {
  const graph_value *d = v->default_value;
  if (!d || !d->data || v->dtype == COV_DTYPE_INVALID) return;
  bool ok = d->dtype == v->dtype && (v->rank < 0 || v->rank == d->rank);
  for (int i = 0; ok && v->rank >= 0 && i < v->rank; i++)
    ok = v->dims[i] < 0 || v->dims[i] == d->dims[i];
  if (ok) return;
  char want[256], got[256];
  onnx_add_error(R, graph_value_error(R->g, v, COV_INVALID_INPUT,
                                 "is declared %s, but the initializer of its name (its default "
                                 "value) is %s",
                                 graph_type_str(v, want, sizeof want), graph_type_str(d, got, sizeof got)));
}

static void read_input_type(reader *R, const Onnx__ValueInfoProto *vi, graph_value *v);

static graph_value *read_input(reader *R, const Onnx__ValueInfoProto *vi) {
  graph *g = R->g;
  const char *name = str_or_empty(vi->name);
  if (!*name || !valid_name(name)) {
    onnx_add_error(R, model_error(g, COV_INVALID_INPUT, "a graph input has an empty or invalid name"));
    return NULL;
  }
  graph_value *v = onnx_table_find(R, name);
  if (v && v->kind == GV_INITIALIZER && !v->default_value) {
    v = input_with_default(R, v);
    if (!v) return NULL;
  } else if (v) {
    onnx_add_error(R, graph_value_error(g, v, COV_INVALID_INPUT, "graph input listed twice"));
    return NULL;
  } else {
    v = graph_add_value(g, name);
    if (!v) {
      onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
      return NULL;
    }
    v->kind = GV_INPUT;
    onnx_table_put(R, v);
  }
  read_input_type(R, vi, v);
  check_default(R, v);
  return v;
}

/* A sequence, an optional or an optional of a sequence of tensors
 * (graph_sequence.h): its flags and dtype set in v, true; else false. */
static bool container_type(const Onnx__TypeProto *tp, graph_value *v) {
  const Onnx__TypeProto *elem = !tp ? NULL
      : tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && tp->sequence_type ? tp->sequence_type->elem_type
      : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type ? tp->optional_type->elem_type
      : NULL;
  bool opt = tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
  if (opt && elem && elem->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && elem->sequence_type) {
    elem = elem->sequence_type->elem_type; /* optional(seq(tensor)) */
    if (!elem || elem->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !elem->tensor_type) return false;
    v->seq = v->opt_seq = true;
    v->opt = false;
    v->dtype = onnx_dtype(elem->tensor_type->elem_type);
    return true;
  }
  if (!elem || elem->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !elem->tensor_type) return false;
  v->seq = true;
  v->opt = opt;
  v->opt_seq = false;
  v->dtype = onnx_dtype(elem->tensor_type->elem_type);
  return true;
}

/* The input's declared dtype and shape. */
static void read_input_type(reader *R, const Onnx__ValueInfoProto *vi, graph_value *v) {
  graph *g = R->g;
  const Onnx__TypeProto *tp = vi->type;
  /* A subgraph's input may leave its type to its owner (graph_control.c). */
  if (R->parent && (!tp || (tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                            tp->tensor_type && tp->tensor_type->elem_type == 0)))
    return;
  if (container_type(tp, v)) return;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
    onnx_add_error(R, graph_value_error(g, v, COV_UNSUPPORTED,
                                   "only tensors, sequences of tensors, optional tensors and "
                                   "optional sequences of tensors are supported as inputs (this "
                                   "one is a map, a sequence of sequences, an optional of an "
                                   "optional, or has no type)"));
    return;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  v->dtype = onnx_dtype(tt->elem_type);
  if (v->dtype == COV_DTYPE_INVALID) {
    onnx_add_error(R, graph_value_error(g, v, COV_UNSUPPORTED,
                                   "has ONNX type %s, which covenant does not support (it "
                                   "supports FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8, UINT8, "
                                   "INT16, UINT16, INT32, UINT32, INT64, UINT64 and BOOL)",
                                   onnx_dtype_name(tt->elem_type)));
    return;
  }
  if (!tt->shape) return; /* rank unknown until the caller feeds it */
  if (tt->shape->n_dim > COV_MAX_RANK) {
    onnx_add_error(R,
              graph_value_error(g, v, COV_UNSUPPORTED, "has rank %zu; covenant supports up to %d",
                                tt->shape->n_dim, COV_MAX_RANK));
    return;
  }
  v->rank = (int)tt->shape->n_dim;
  for (int i = 0; i < v->rank; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    v->dims[i] = -1;
    v->symbolic |= 1u << i;
    if (!d) continue;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (d->dim_value < 0) {
        onnx_add_error(R, graph_value_error(g, v, COV_INVALID_INPUT,
                                       "dim %d is %lld; input dims must not be negative", i,
                                       (long long)d->dim_value));
        continue;
      }
      v->dims[i] = d->dim_value;
      v->symbolic &= ~(1u << i);
    } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               d->dim_param && *d->dim_param && valid_name(d->dim_param)) {
      v->sym[i] = cov_arena_strdup(g->arena, d->dim_param);
    }
  }
  if (graph_shape_known(v) && graph_numel(v) < 0)
    onnx_add_error(R, graph_value_error(g, v, COV_OUT_OF_RANGE,
                                   "its shape has more elements than covenant can hold (the "
                                   "product of the dims overflows or exceeds %llu bytes)",
                                   (unsigned long long)COV_TENSOR_MAX_BYTES));
}

/* ---- nodes ------------------------------------------------------------ */

static bool is_default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

/* A list of strings (LSTM's activations): each copied, none with a NUL. */
static void read_strings(reader *R, graph_node *n, const Onnx__AttributeProto *ap, graph_attr *a) {
  graph *g = R->g;
  a->n = ap->n_strings;
  a->strs = cov_arena_array(g->arena, a->n ? a->n : 1, sizeof *a->strs);
  for (size_t k = 0; a->strs && k < a->n; k++) {
    const ProtobufCBinaryData *b = &ap->strings[k];
    if (b->len && memchr(b->data, 0, b->len)) {
      onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT,
                                    "attribute '%s' holds a string with a NUL byte", a->name));
      a->n = 0;
      return;
    }
    a->strs[k] = cov_arena_strndup(g->arena, b->len ? (const char *)b->data : "", b->len);
    if (!a->strs[k]) a->strs = NULL;
  }
  if (!a->strs) {
    a->n = 0;
    onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory"));
  }
}

/* A type attribute as a value outside the graph that has its type and no
 * data (a->t), or NULL where the type is none covenant has (a map, a
 * sparse tensor): the operator that reads it says so. */
static void read_type_attr(reader *R, const graph_node *n, const Onnx__AttributeProto *ap,
                           graph_attr *a) {
  graph_value *v = cov_arena_alloc(R->g->arena, sizeof *v);
  if (!v) {
    onnx_add_error(R, graph_node_error(R->g, n, COV_OUT_OF_MEMORY, "out of memory"));
    return;
  }
  v->name = a->name;
  v->id = -1;
  graph_set_shape(v, -1, NULL);
  const Onnx__TypeProto *tp = ap->tp;
  if (container_type(tp, v)) {
    a->t = v;
  } else if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) {
    v->dtype = onnx_dtype(tp->tensor_type->elem_type);
    a->t = v;
  }
}

/* Models from before IR version 3 may leave an attribute's `type` out:
 * it is the one field that is set, as onnx's own checker infers it. */
static graph_attr_type untyped_attr_type(const Onnx__AttributeProto *ap) {
  if (ap->has_f) return GA_FLOAT;
  if (ap->has_i) return GA_INT;
  if (ap->has_s) return GA_STRING;
  if (ap->t) return GA_TENSOR;
  if (ap->g) return GA_GRAPH;
  if (ap->n_floats) return GA_FLOATS;
  if (ap->n_ints) return GA_INTS;
  if (ap->n_strings) return GA_STRINGS;
  return GA_UNDEFINED;
}

static void read_attr(reader *R, graph_node *n, const Onnx__AttributeProto *ap, graph_attr *a) {
  graph *g = R->g;
  a->name = cov_arena_strdup(g->arena, str_or_empty(ap->name));
  if (ap->ref_attr_name) {
    onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT,
                                  "attribute '%s' refers to a function attribute outside a "
                                  "function",
                                  a->name));
    return;
  }
  a->type = ap->has_type ? (graph_attr_type)ap->type : untyped_attr_type(ap);
  switch (a->type) {
    case GA_FLOAT: a->f = ap->f; break;
    case GA_INT: a->i = ap->i; break;
    case GA_STRING:
      if (ap->s.len && memchr(ap->s.data, 0, ap->s.len)) {
        onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT,
                                      "attribute '%s' holds a string with a NUL byte", a->name));
        return;
      }
      a->s = cov_arena_strndup(g->arena, ap->s.len ? (const char *)ap->s.data : "", ap->s.len);
      break;
    case GA_INTS:
      if (ap->n_ints > GRAPH_MAX_ATTR_ELEMS) goto too_many;
      a->n = ap->n_ints;
      a->ints = cov_arena_array(g->arena, a->n ? a->n : 1, sizeof *a->ints);
      if (a->ints && a->n) memcpy(a->ints, ap->ints, a->n * sizeof *a->ints);
      break;
    case GA_FLOATS:
      if (ap->n_floats > GRAPH_MAX_ATTR_ELEMS) goto too_many;
      a->n = ap->n_floats;
      a->floats = cov_arena_array(g->arena, a->n ? a->n : 1, sizeof *a->floats);
      if (a->floats && a->n) memcpy(a->floats, ap->floats, a->n * sizeof *a->floats);
      break;
    case GA_TENSOR: {
      if (!ap->t) {
        onnx_add_error(
            R, graph_node_error(g, n, COV_INVALID_INPUT, "attribute '%s' has no tensor", a->name));
        return;
      }
      char what[600];
      snprintf(what, sizeof what, "node '%.256s' (%.64s): attribute '%.128s'", n->name, n->op_type,
               a->name);
      onnx_tensor_info info;
      void *data;
      cov_status st = load_tensor(R, ap->t, what, &info, &data);
      if (st) {
        onnx_add_error(R, st);
        return;
      }
      graph_value *v = cov_arena_alloc(g->arena, sizeof *v);
      if (!v) {
        onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_MEMORY, "out of memory"));
        return;
      }
      v->name = a->name;
      v->kind = GV_CONSTANT;
      v->dtype = info.dtype;
      graph_set_shape(v, info.rank, info.dims);
      v->data = data;
      v->id = -1;
      a->t = v;
      break;
    }
    case GA_STRINGS:
      if (ap->n_strings > GRAPH_MAX_ATTR_ELEMS) goto too_many;
      read_strings(R, n, ap, a);
      break;
    case GA_TYPE_PROTO: /* Optional's `type`: a value typed, no data */
      read_type_attr(R, n, ap, a);
      break;
    default:
      /* Graphs, sparse tensors: no supported operator takes them, so they
       * are kept by name only; an operator that needed one is unsupported
       * anyway. */
      break;
  }
  return;
too_many:
  onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_RANGE, "attribute '%s' has more than %d elements",
                                a->name, GRAPH_MAX_ATTR_ELEMS));
}

/* A value outside the graph that fills the slot of a name that could not be
 * resolved, so that later checks do not take the slot for an omitted
 * optional input or output and report it a second time. Only ever seen when
 * reading fails. */
static graph_value *standin(graph *g) {
  graph_value *v = cov_arena_alloc(g->arena, sizeof *v);
  if (!v) return NULL;
  v->name = "?";
  v->rank = -1;
  v->id = -1;
  return v;
}

/* Creates the node with its outputs (so a later node may read them even in
 * an unsorted model); inputs are resolved once every producer is known. */
static graph_node *declare_node(reader *R, const Onnx__NodeProto *np, size_t index) {
  graph *g = R->g;
  graph_node *n = graph_add_node(g);
  if (!n) {
    onnx_add_error(
        R, model_error(g, COV_OUT_OF_RANGE, "too many nodes (the limit is %d)", GRAPH_MAX_NODES));
    R->fatal = true;
    return NULL;
  }
  n->index = (int)index;
  const char *op = str_or_empty(np->op_type);
  /* An empty op_type marks an invalid one (reported below, not again as
   * an unsupported operator). */
  bool op_ok = *op && valid_name(op);
  n->op_type = cov_arena_strdup(g->arena, op_ok ? op : "");
  n->domain = cov_arena_strdup(g->arena, str_or_empty(np->domain));
  const char *name = str_or_empty(np->name);
  if (*name && valid_name(name))
    n->name = cov_arena_strdup(g->arena, name);
  else
    n->name = cov_arena_printf(g->arena, "%s_%zu", op_ok ? n->op_type : "node", index);
  n->opset = g->opset;
  if (!n->op_type || !n->domain || !n->name) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
    return NULL;
  }
  if (!op_ok) onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT, "node has no valid op_type"));
  if (np->n_input > GRAPH_MAX_NODE_IO || np->n_output > GRAPH_MAX_NODE_IO) {
    onnx_add_error(R, graph_node_error(g, n, COV_OUT_OF_RANGE, "more than %d inputs or outputs",
                                  GRAPH_MAX_NODE_IO));
    return NULL;
  }
  n->def = graph_opdef_find_domain(np->domain, n->op_type);
  n->n_out = (int)np->n_output;
  n->out = cov_arena_array(g->arena, np->n_output ? np->n_output : 1, sizeof *n->out);
  if (!n->out) return NULL;
  for (size_t i = 0; i < np->n_output; i++) {
    const char *oname = str_or_empty(np->output[i]);
    if (!*oname) continue; /* an omitted optional output */
    if (!valid_name(oname)) {
      onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT,
                                    "output %zu has a name with control characters", i));
      n->out[i] = standin(g);
      continue;
    }
    graph_value *prev = onnx_table_find(R, oname);
    if (prev) {
      n->out[i] = standin(g); /* keeps later checks from calling it omitted */
      if (prev->producer)
        onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT,
                                      "output '%s' is also produced by node '%s' (%s); every "
                                      "tensor must have one producer",
                                      oname, prev->producer->name, prev->producer->op_type));
      else
        onnx_add_error(
            R, graph_node_error(g, n, COV_INVALID_INPUT,
                                "output '%s' has the name of a graph input or initializer", oname));
      continue;
    }
    graph_value *v = graph_add_value(g, oname);
    if (!v) {
      onnx_add_error(R, model_error(g, COV_OUT_OF_RANGE, "too many tensors (the limit is %d)",
                               GRAPH_MAX_VALUES));
      R->fatal = true;
      return NULL;
    }
    v->producer = n;
    n->out[i] = v;
    onnx_table_put(R, v);
  }
  n->n_attrs = (int)np->n_attribute;
  n->attrs = cov_arena_array(g->arena, np->n_attribute ? np->n_attribute : 1, sizeof *n->attrs);
  if (!n->attrs) return NULL;
  for (size_t i = 0; i < np->n_attribute; i++) {
    if (!np->attribute[i]) continue;
    read_attr(R, n, np->attribute[i], &n->attrs[i]);
    if (!n->attrs[i].name) n->attrs[i].name = "";
    for (size_t j = 0; j < i; j++)
      if (strcmp(n->attrs[j].name, n->attrs[i].name) == 0)
        onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT, "attribute '%s' is given twice",
                                      n->attrs[i].name));
  }
  return n;
}

static void resolve_inputs(reader *R, graph_node *n, const Onnx__NodeProto *np) {
  graph *g = R->g;
  n->n_in = (int)np->n_input;
  n->in = cov_arena_array(g->arena, np->n_input ? np->n_input : 1, sizeof *n->in);
  if (!n->in) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
    n->n_in = 0;
    return;
  }
  for (size_t i = 0; i < np->n_input; i++) {
    const char *iname = str_or_empty(np->input[i]);
    if (!*iname) continue; /* an omitted optional input */
    graph_value *v = onnx_table_find(R, iname);
    if (!v && R->parent) v = onnx_capture(R, iname);
    if (!v) {
      onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT,
                                    "input '%s' is not produced by any node, nor a graph input "
                                    "or initializer (a missing initializer?)",
                                    valid_name(iname) ? iname : "?"));
      v = standin(g);
    }
    n->in[i] = v;
  }
}


/* ---- model ------------------------------------------------------------ */

static void read_opsets(reader *R, const Onnx__ModelProto *mp) {
  graph *g = R->g;
  int64_t version = -1;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
    if (o && is_default_domain(o->domain)) version = o->has_version ? o->version : 1;
  }
  if (version < 0) {
    onnx_add_error(R, model_error(g, COV_INVALID_INPUT,
                             "the model imports no ai.onnx opset (opset_import is missing)"));
    return;
  }
  /* Older opsets are checked per node (see GRAPH_OPSET_MIN). */
  if (version < 1 || version > GRAPH_OPSET_MAX) {
    onnx_add_error(R, model_error(g, COV_UNSUPPORTED,
                             "ai.onnx opset %lld is not supported (covenant reads opsets %d to "
                             "%d)",
                             (long long)version, GRAPH_OPSET_MIN, GRAPH_OPSET_MAX));
    return;
  }
  g->opset = (int)version;
}

static int opset_of_domain(const Onnx__ModelProto *mp, const char *domain) {
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
    if (o && strcmp(str_or_empty(o->domain), domain) == 0)
      return o->has_version ? (int)o->version : 1;
  }
  return -1;
}

/* One diagnostic for every unsupported node, so a user sees the whole gap. */
static void report_unsupported(reader *R, const Onnx__ModelProto *mp) {
  graph *g = R->g;
  size_t count = 0;
  char *list = NULL;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    if (n->def || !*n->op_type) continue; /* an invalid op_type was reported already */
    count++;
    char dom[200] = "";
    int opset = g->opset;
    if (!is_default_domain(n->domain)) {
      snprintf(dom, sizeof dom, "domain '%.128s', ", n->domain);
      opset = opset_of_domain(mp, n->domain);
    }
    list = cov_arena_printf(g->arena, "%s\n  node '%s' (%s, %sopset %d)", list ? list : "", n->name,
                            n->op_type, dom, opset);
  }
  if (count)
    onnx_add_error(R, model_error(g, COV_UNSUPPORTED,
                             "%zu node%s use%s operators covenant does not support:%s", count,
                             count == 1 ? "" : "s", count == 1 ? "s" : "", list ? list : ""));
}

/* Operator versions and input/output counts. */
static void check_nodes(reader *R) {
  graph *g = R->g;
  for (size_t i = 0; i < g->n_nodes; i++) {
    graph_node *n = g->nodes[i];
    const graph_opdef *d = n->def;
    if (!d) continue;
    int v = graph_op_version(d, g->opset);
    if (v == 0) {
      onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT,
                                    "%s does not exist in opset %d (it was introduced in opset "
                                    "%d)",
                                    n->op_type, g->opset, d->versions[0]));
      continue;
    }
    if (g->opset < GRAPH_OPSET_MIN && v != graph_op_version(d, GRAPH_OPSET_MIN)) {
      onnx_add_error(R, graph_node_error(g, n, COV_UNSUPPORTED,
                                    "the opset-%d version of %s is not supported (covenant "
                                    "implements opsets %d to %d; re-export the model with a "
                                    "newer opset)",
                                    g->opset, n->op_type, GRAPH_OPSET_MIN, GRAPH_OPSET_MAX));
      continue;
    }
    n->opset = g->opset < GRAPH_OPSET_MIN ? GRAPH_OPSET_MIN : g->opset;
    int n_in = n->n_in - n->n_implicit;
    if (n_in < d->min_in || n_in > d->max_in)
      onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT, "has %d inputs; %s takes %d to %d",
                                    n_in, n->op_type, d->min_in, d->max_in));
    if (n->n_out < d->min_out || n->n_out > d->max_out)
      onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT, "has %d outputs; %s produces %d to %d",
                                    n->n_out, n->op_type, d->min_out, d->max_out));
    /* Leading inputs up to min_in and the first output are never optional
     * (an empty name there is not an omission, it is a broken node), but
     * for operators whose outputs all are (LSTM, GRU, RNN: min_out 0). */
    for (int j = 0; j < d->min_in && j < n->n_in; j++)
      if (!n->in[j])
        onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT, "required input %d has no name", j));
    if (n->n_out > 0 && !n->out[0] && d->min_out > 0)
      onnx_add_error(R, graph_node_error(g, n, COV_INVALID_INPUT, "output 0 has no name"));
  }
}

static void read_outputs(reader *R) {
  graph *g = R->g;
  const Onnx__GraphProto *gp = R->gp;
  g->outputs = cov_arena_array(g->arena, gp->n_output ? gp->n_output : 1, sizeof *g->outputs);
  g->output_names =
      cov_arena_array(g->arena, gp->n_output ? gp->n_output : 1, sizeof *g->output_names);
  if (!g->outputs || !g->output_names) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
    return;
  }
  if (gp->n_output == 0)
    onnx_add_error(R, model_error(g, COV_INVALID_INPUT, "the graph has no outputs"));
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    const char *name = vi ? str_or_empty(vi->name) : "";
    graph_value *v = *name ? onnx_table_find(R, name) : NULL;
    if (!v && *name && R->parent) v = onnx_capture(R, name);
    if (!v) {
      onnx_add_error(R, model_error(g, COV_INVALID_INPUT,
                               "graph output '%s' is not produced by any node, input or "
                               "initializer",
                               valid_name(name) ? name : "?"));
      continue;
    }
    for (size_t j = 0; j < g->n_outputs; j++)
      if (g->outputs[j] == v)
        onnx_add_error(R, graph_value_error(g, v, COV_INVALID_INPUT, "listed twice as a graph output"));
    g->output_names[g->n_outputs] = v->name;
    g->outputs[g->n_outputs++] = v;
  }
}

void onnx_read_body(reader *R) {
  graph *g = R->g;
  const Onnx__GraphProto *gp = R->gp;
  if (gp->n_sparse_initializer)
    onnx_add_error(R, model_error(g, COV_UNSUPPORTED, "sparse initializers are not supported"));
  size_t expected = gp->n_initializer + gp->n_input + gp->n_node * 2;
  if (!onnx_table_init(R, expected)) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
    return;
  }
  cov_status too_big = check_initializer_total(R);
  if (too_big) {
    onnx_add_error(R, too_big);
    return;
  }
  for (size_t i = 0; i < gp->n_initializer; i++)
    if (gp->initializer[i]) read_initializer(R, gp->initializer[i], i);
  size_t n_inputs = 0;
  g->inputs = cov_arena_array(g->arena, gp->n_input ? gp->n_input : 1, sizeof *g->inputs);
  if (!g->inputs) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
    return;
  }
  for (size_t i = 0; i < gp->n_input; i++) {
    if (!gp->input[i]) continue;
    graph_value *v = read_input(R, gp->input[i]);
    if (v) g->inputs[n_inputs++] = v;
  }
  g->n_inputs = n_inputs;
  graph_node **declared = calloc(gp->n_node ? gp->n_node : 1, sizeof *declared);
  if (!declared) {
    onnx_add_error(R, model_error(g, COV_OUT_OF_MEMORY, "out of memory"));
    return;
  }
  for (size_t i = 0; i < gp->n_node && !R->fatal; i++)
    if (gp->node[i]) declared[i] = declare_node(R, gp->node[i], i);
  for (size_t i = 0; i < gp->n_node && !R->fatal; i++)
    if (declared[i]) resolve_inputs(R, declared[i], gp->node[i]);
  for (size_t i = 0; i < gp->n_node && !R->fatal; i++)
    if (declared[i]) onnx_read_subgraphs(R, declared[i], gp->node[i]);
  free(declared);
  if (!R->errors) onnx_unroll_loops(R);
  read_outputs(R);
  report_unsupported(R, R->mp);
  check_nodes(R);
  if (!R->errors) onnx_sort_nodes(R);
  for (size_t i = 0; !R->errors && i < g->n_nodes; i++) g->nodes[i]->index = (int)i;
}

cov_status onnx_read_graph(const uint8_t *data, size_t size, graph *g) {
  COV_RETURN_IF_ERROR(onnx_wire_check(data, size, &onnx__model_proto__descriptor, g->file));
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
  if (!mp)
    return model_error(g, COV_PARSE_ERROR,
                       "not a valid ONNX model (protobuf decoding failed: a truncated or corrupt "
                       "file, or not an .onnx file)");
  size_t sub_nodes = 0;
  reader R = {.g = g, .sub_nodes = &sub_nodes};
  g->ir_version = mp->has_ir_version ? mp->ir_version : 0;
  g->producer = cov_arena_strdup(g->arena, str_or_empty(mp->producer_name));
  g->producer_version = cov_arena_strdup(g->arena, str_or_empty(mp->producer_version));
  const Onnx__GraphProto *gp = mp->graph;
  R.gp = gp;
  if (!gp) {
    onnx_add_error(&R, model_error(g, COV_INVALID_INPUT, "the model has no graph"));
    goto out;
  }
  if (g->ir_version < 3)
    onnx_add_error(&R, model_error(g, COV_UNSUPPORTED,
                              "ONNX IR version %lld is not supported (covenant reads 3 and later)",
                              (long long)g->ir_version));
  read_opsets(&R, mp);
  if (R.errors) goto out;
  g->name =
      cov_arena_strdup(g->arena, valid_name(str_or_empty(gp->name)) ? str_or_empty(gp->name) : "");
  R.mp = mp;
  onnx_read_body(&R);
out:
  free(R.slots);
  onnx__model_proto__free_unpacked(mp, NULL);
  return R.errors;
}

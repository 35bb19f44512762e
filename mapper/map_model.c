/* mapper/map_model.c: a layer from an ONNX model's layer group.
 *
 * The frontend describes a compute group as its chain of codelet calls
 * (cov_model_group, covenant/model.h). A mapper layer is such a chain of a
 * particular shape: call 0's inputs are all layer inputs, and every later
 * call takes the previous result as its input 0 (seen through a view) plus
 * layer inputs of its own (a bias). This file checks that shape and copies
 * the calls over; whether the mapper can then fuse them (a main loop nest
 * it extracts, epilogue codelets it lowers) is cov_map's to say. Every
 * refusal names the group, the call and the node, so that a caller can
 * report why it runs the calls one by one instead. */
#include <string.h>

#include "mapper/map_internal.h"
#include "common/loc.h"

/* gemm_bias(a, b, c) with beta 1 and c one row [1, N] is gemm(a, b) then
 * bias_add_2d(., c as [N]): the form the mapper fuses (a main loop nest, a
 * per-column vector in the epilogue); its main-nest extraction does not take
 * gemm_bias's statements after the reduction. The layer's inputs keep the
 * group's order (a, b, then c). Returns 1 when it split the call. */
static int split_gemm_bias(cov_layer *l, const cov_model_group_call *gc) {
  if (strcmp(gc->codelet, "gemm_bias") != 0 || gc->n_args != 3 || gc->out.rank != 2) return 0;
  const cov_tensor *c = &gc->args[2].t;
  if (c->rank != 2 || c->shape[0] != 1 || c->shape[1] != gc->out.shape[1]) return 0;
  for (size_t a = 0; a < gc->n_attrs; a++)
    if (!strcmp(gc->attrs[a].name, "beta") &&
        (gc->attrs[a].is_float ? gc->attrs[a].f != 1.0 : gc->attrs[a].i != 1))
      return 0;
  const cov_codelet *gemm = cov_codelet_lib_find(l->lib, "gemm");
  const cov_codelet *bias = cov_codelet_lib_find(l->lib, "bias_add_2d");
  if (!gemm || !bias || l->n_calls + 2 > MAP_MAX_CALLS) return 0;
  map_call *mc = &l->calls[l->n_calls++];
  memset(mc, 0, sizeof *mc);
  mc->c = gemm;
  for (size_t a = 0; a < gc->n_attrs; a++) {
    if (!strcmp(gc->attrs[a].name, "beta")) continue;
    mc->attrs[mc->n_attrs] = gc->attrs[a];
    mc->attrs[mc->n_attrs].name = cov_arena_strdup(l->arena, gc->attrs[a].name);
    mc->n_attrs++;
  }
  for (int k = 0; k < 2; k++) {
    mc->in[k] = gc->args[k].t;
    mc->in[k].data = NULL;
  }
  mc->n_inputs = 2;
  map_call *bc = &l->calls[l->n_calls++];
  memset(bc, 0, sizeof *bc);
  bc->c = bias;
  bc->view_rank = 2;
  memcpy(bc->view, gc->out.shape, 2 * sizeof(int64_t));
  bc->in[0] = gc->out;
  bc->in[1] = (cov_tensor){.dtype = COV_F32, .rank = 1, .shape = {gc->out.shape[1]}};
  bc->n_inputs = 2;
  return 1;
}

/* "layer group 3 (conv+bias+relu, node 'conv2'): " */
#define GROUP_FMT "layer group %zu (%s, node '%s'): "
#define GROUP_ARGS(g, node) cov_model_group_index(g), cov_model_group_kind(g), (node)

/* A layer of a quantized model, which keeps its calls' dtypes: an
 * accumulator-typed codelet (conv2d_acc, matmul_acc) on i8 operands, i8 x
 * i8 -> i32 as an int8 array computes it, whose later calls (the i32 bias,
 * the requantisation to i8/u8) become the epilogue; or any other first call
 * on 8-bit or i32 integers and f32 (quantize, dequantize, max pooling of i8
 * values). The binding then needs SIMD capabilities in those dtypes and
 * says which one the ACG lacks. */
static bool is_integer_layer(const cov_model_group_call *gc) {
  bool any_int = false;
  for (size_t k = 0; k < gc->n_args; k++) {
    cov_dtype t = gc->args[k].t.dtype;
    if (t != COV_F32 && t != COV_I8 && t != COV_U8 && t != COV_I32) return false;
    any_int |= t != COV_F32;
  }
  return any_int;
}

cov_status cov_layer_from_model_group(const cov_model_group *grp, cov_layer **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_layer_from_model_group"), "NULL");
  *out = NULL;
  if (!grp) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_layer_from_model_group"), "NULL");
  return cov_layer_from_model_group_prefix(grp, cov_model_group_num_calls(grp), out);
}

cov_status cov_layer_from_model_group_prefix(const cov_model_group *grp, size_t n, cov_layer **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_layer_from_model_group_prefix"), "NULL");
  *out = NULL;
  if (!grp || n > cov_model_group_num_calls(grp))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_layer_from_model_group_prefix"), "%s",
                     grp ? "more calls than the group has" : "NULL group");
  const char *name = cov_model_group_name(grp);
  if (n == 0 || n > MAP_MAX_CALLS)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, name), GROUP_FMT "%zu codelet calls; a layer has 1 to %d",
                     GROUP_ARGS(grp, name), n, MAP_MAX_CALLS);
  cov_layer *l;
  /* the model's library, loaded once with it: loading the shipped one per
   * layer would take about 2.5 ms a group (most of compile's time on a
   * model of many small groups) */
  COV_RETURN_IF_ERROR(map_layer_new(name, cov_model_group_codelets(grp), &l));
  l->n_calls = 0;
  cov_status st = NULL;
  bool integer = is_integer_layer(cov_model_group_call_at(grp, 0));
  for (size_t c = 0; c < n && !st; c++) {
    const cov_model_group_call *gc = cov_model_group_call_at(grp, c);
    bool all_f32 = true;
    for (size_t k = 0; k < gc->n_args; k++) all_f32 &= gc->args[k].t.dtype == COV_F32;
    if (c == 0 && all_f32 && split_gemm_bias(l, gc)) continue;
    if (l->n_calls >= MAP_MAX_CALLS) {
      st = cov_error(COV_UNSUPPORTED, COV_AT(NULL, gc->node), GROUP_FMT "more than %d codelet calls",
                     GROUP_ARGS(grp, gc->node), MAP_MAX_CALLS);
      break;
    }
    map_call *mc = &l->calls[l->n_calls];
    memset(mc, 0, sizeof *mc);
    mc->c = cov_codelet_lib_find(l->lib, gc->codelet);
    if (!mc->c) {
      st = cov_error(COV_NOT_FOUND, COV_AT(NULL, gc->node), GROUP_FMT "no codelet '%s' in the model's codelet library",
                     GROUP_ARGS(grp, gc->node), gc->codelet);
      break;
    }
    if (gc->n_attrs > MAP_MAX_ATTRS || gc->n_args > 4 || gc->n_args < 1) {
      st = cov_error(COV_UNSUPPORTED, COV_AT(NULL, gc->node),
                     GROUP_FMT "call %zu (%s) has %zu attributes and %zu inputs; a layer call "
                     "takes at most %d and 1 to 4",
                     GROUP_ARGS(grp, gc->node), c, gc->codelet, gc->n_attrs, gc->n_args,
                     MAP_MAX_ATTRS);
      break;
    }
    for (size_t a = 0; a < gc->n_attrs; a++) {
      mc->attrs[a] = gc->attrs[a];
      mc->attrs[a].name = cov_arena_strdup(l->arena, gc->attrs[a].name);
    }
    mc->n_attrs = (int)gc->n_attrs;
    for (size_t k = 0; k < gc->n_args && !st; k++) {
      const cov_model_arg *arg = &gc->args[k];
      /* Layers are f32 (map_layer.c): the mapper narrows on chip itself;
       * or integer (see is_integer_layer), in the codelets' own dtypes. */
      if (arg->t.dtype != COV_F32 && !integer)
        st = cov_error(COV_UNSUPPORTED, COV_AT(NULL, gc->node),
                       GROUP_FMT "call %zu (%s) input %zu is %s; mapper layers are f32, or an "
                       "integer multiply-accumulate (i8 x i8 -> i32) and its epilogue",
                       GROUP_ARGS(grp, gc->node), c, gc->codelet, k, cov_dtype_name(arg->t.dtype));
      else if ((arg->kind == COV_MODEL_ARG_PREV) != (c > 0 && k == 0))
        st = cov_error(COV_UNSUPPORTED, COV_AT(NULL, gc->node),
                       GROUP_FMT "call %zu (%s) %s; a layer chains each result into the next "
                       "call's first input",
                       GROUP_ARGS(grp, gc->node), c, gc->codelet,
                       arg->kind == COV_MODEL_ARG_PREV ? "reads the previous result as a later input"
                                                       : "does not read the previous result first");
      if (st) break;
      cov_tensor *t = &mc->in[mc->n_inputs++];
      memset(t, 0, sizeof *t);
      t->dtype = integer ? arg->t.dtype : COV_F32;
      t->rank = arg->t.rank;
      memcpy(t->shape, arg->t.shape, sizeof t->shape);
      if (k == 0 && c > 0) {
        mc->view_rank = arg->t.rank;
        memcpy(mc->view, arg->t.shape, sizeof(int64_t) * (size_t)arg->t.rank);
      }
    }
    if (!st) l->n_calls++;
  }
  /* The calls' shapes bind (cdl_bind checks every require). */
  for (int c = 0; c < l->n_calls && !st; c++) {
    int rank;
    int64_t shape[COV_MAX_RANK];
    st = map_call_output(l, c, &rank, shape);
    if (st) st = cov_status_annotate(st, GROUP_FMT, GROUP_ARGS(grp, name));
  }
  st = map_layer_done(l, st);
  if (st) {
    cov_layer_free(l);
    return st;
  }
  *out = l;
  return NULL;
}

cov_status cov_layer_model_input(const cov_model_group *grp, int i, const cov_model_arg **arg) {
  *arg = NULL;
  const int want = i;
  size_t n = cov_model_group_num_calls(grp);
  for (size_t c = 0; c < n; c++) {
    const cov_model_group_call *gc = cov_model_group_call_at(grp, c);
    size_t first = c == 0 ? 0 : 1;
    if (gc->n_args < first) continue;
    if ((size_t)i < gc->n_args - first) {
      *arg = &gc->args[first + (size_t)i];
      return NULL;
    }
    i -= (int)(gc->n_args - first);
  }
  return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_layer_model_input"), "layer group %zu has no layer input %d",
                   cov_model_group_index(grp), want);
}

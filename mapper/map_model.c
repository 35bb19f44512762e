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

/* "layer group 3 (conv+bias+relu, node 'conv2'): " */
#define GROUP_FMT "layer group %zu (%s, node '%s'): "
#define GROUP_ARGS(g, node) cov_model_group_index(g), cov_model_group_kind(g), (node)

cov_status cov_layer_from_model_group(const cov_model_group *grp, cov_layer **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, NULL, "cov_layer_from_model_group: NULL");
  *out = NULL;
  if (!grp) return cov_error(COV_INVALID_ARGUMENT, NULL, "cov_layer_from_model_group: NULL");
  size_t n = cov_model_group_num_calls(grp);
  const char *name = cov_model_group_name(grp);
  if (n == 0 || n > MAP_MAX_CALLS)
    return cov_error(COV_UNSUPPORTED, NULL, GROUP_FMT "%zu codelet calls; a layer has 1 to %d",
                     GROUP_ARGS(grp, name), n, MAP_MAX_CALLS);
  cov_layer *l;
  COV_RETURN_IF_ERROR(map_layer_new(name, &l));
  l->n_calls = 0;
  cov_status st = NULL;
  for (size_t c = 0; c < n && !st; c++) {
    const cov_model_group_call *gc = cov_model_group_call_at(grp, c);
    map_call *mc = &l->calls[l->n_calls];
    memset(mc, 0, sizeof *mc);
    mc->c = cov_codelet_lib_find(l->lib, gc->codelet);
    if (!mc->c) {
      st = cov_error(COV_NOT_FOUND, NULL, GROUP_FMT "no codelet '%s' in the mapper's library",
                     GROUP_ARGS(grp, gc->node), gc->codelet);
      break;
    }
    if (gc->n_attrs > MAP_MAX_ATTRS || gc->n_args > 4 || gc->n_args < 1) {
      st = cov_error(COV_UNSUPPORTED, NULL,
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
      /* Layers are f32 (map_layer.c): the mapper narrows on chip itself. */
      if (arg->t.dtype != COV_F32)
        st = cov_error(COV_UNSUPPORTED, NULL,
                       GROUP_FMT "call %zu (%s) input %zu is %s; mapper layers are f32",
                       GROUP_ARGS(grp, gc->node), c, gc->codelet, k, cov_dtype_name(arg->t.dtype));
      else if ((arg->kind == COV_MODEL_ARG_PREV) != (c > 0 && k == 0))
        st = cov_error(COV_UNSUPPORTED, NULL,
                       GROUP_FMT "call %zu (%s) %s; a layer chains each result into the next "
                       "call's first input",
                       GROUP_ARGS(grp, gc->node), c, gc->codelet,
                       arg->kind == COV_MODEL_ARG_PREV ? "reads the previous result as a later input"
                                                       : "does not read the previous result first");
      if (st) break;
      cov_tensor *t = &mc->in[mc->n_inputs++];
      memset(t, 0, sizeof *t);
      t->dtype = COV_F32;
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
    if (st) {
      const cov_model_group_call *gc = cov_model_group_call_at(grp, (size_t)c);
      st = cov_status_annotate(st, GROUP_FMT, GROUP_ARGS(grp, gc->node));
    }
  }
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
  return cov_error(COV_INVALID_ARGUMENT, NULL, "layer group %zu has no layer input %d",
                   cov_model_group_index(grp), want);
}

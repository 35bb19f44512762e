/* mapper/map_layer.c: layers (chains of codelet calls) from the suite file,
 * from one codelet call, and their reference result by the codelet
 * interpreter. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/edit_distance.h"
#include "common/loc.h"
#include "common/search_path.h"
#include "mapper/map_internal.h"
#include "mapper/map_suite.h"

#ifndef COV_SOURCEDIR
#define COV_SOURCEDIR "."
#endif

const char *cov_suite_default_path(void) {
  const char *e = getenv("COVENANT_SUITE");
  return e && *e ? e : COV_SOURCEDIR "/bench/suite/layers.json";
}

cov_status cov_suite_find(char *out, size_t size) {
  const char *e = getenv("COVENANT_SUITE");
  if (e && *e) {
    if (strlen(e) >= size) return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, "$COVENANT_SUITE"), "$COVENANT_SUITE is too long");
    strcpy(out, e);
    return NULL;
  }
  char dir[4096], tried[2048] = "";
  size_t k = 0;
  for (int i = 0; i < COV_SHIPPED_DIRS; i++) {
    if (!common_shipped_dir(i, "suite", dir, sizeof dir)) continue;
    int n = snprintf(out, size, "%s/layers.json", dir);
    if (n > 0 && (size_t)n < size && access(out, R_OK) == 0) return NULL;
    for (const char *p = k ? ", " : ""; *p && k + 1 < sizeof tried; p++) tried[k++] = *p;
    for (const char *p = dir; *p && k + 1 < sizeof tried; p++) tried[k++] = *p;
    tried[k] = '\0';
  }
  return cov_error(COV_NOT_FOUND, COV_AT(NULL, "$COVENANT_SUITE"),
                   "no layer suite found (looked for layers.json in %s); set COVENANT_SUITE or "
                   "pass --suite FILE", tried);
}

/* suite_path, or the shipped suite's path into buf when it is NULL. */
static cov_status suite_or_default(const char *suite_path, char *buf, size_t size,
                                   const char **out) {
  *out = suite_path;
  if (suite_path) return NULL;
  COV_RETURN_IF_ERROR(cov_suite_find(buf, size));
  *out = buf;
  return NULL;
}

cov_status map_layer_new(const char *name, const cov_codelet_lib *lib, cov_layer **out) {
  *out = NULL;
  cov_layer *l = calloc(1, sizeof *l);
  if (!l) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  l->arena = cov_arena_create();
  if (!l->arena) {
    free(l);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  l->lib = lib;
  if (!lib) {
    cov_status st = cov_codelet_lib_load(NULL, &l->owned_lib);
    if (st) {
      cov_arena_destroy(l->arena);
      free(l);
      return st;
    }
    l->lib = l->owned_lib;
  }
  l->name = cov_arena_strdup(l->arena, name);
  *out = l;
  return NULL;
}

/* The end of every layer constructor: a layer some of whose arena
 * allocations failed (a name, an attribute) is not returned half built. */
cov_status map_layer_done(cov_layer *l, cov_status st) {
  if (!st && cov_arena_failed(l->arena))
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory building a layer");
  return st;
}

void cov_layer_free(cov_layer *layer) {
  if (!layer) return;
  cov_codelet_lib_free(layer->owned_lib);
  cov_arena_destroy(layer->arena);
  free(layer);
}

const char *cov_layer_name(const cov_layer *layer) { return layer->name; }

static void set_attr(map_call *c, const char *name, int64_t v) {
  c->attrs[c->n_attrs].name = name;
  c->attrs[c->n_attrs].is_float = 0;
  c->attrs[c->n_attrs].i = v;
  c->n_attrs++;
}

static void set_in(map_call *c, int rank, const int64_t *shape) {
  cov_tensor *t = &c->in[c->n_inputs++];
  memset(t, 0, sizeof *t);
  t->dtype = COV_F32;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
}

/* Output shape of call i (binding it). */
cov_status map_call_output(const cov_layer *l, int i, int *rank, int64_t *shape) {
  const map_call *c = &l->calls[i];
  cdl_binding b;
  cov_arena *a = cov_arena_create();
  if (!a) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = cdl_bind(c->c, c->attrs, (size_t)c->n_attrs, c->in, (size_t)c->n_inputs, a, &b);
  if (!st) {
    int o = c->c->n_inputs;
    *rank = c->c->operands[o].rank;
    for (int d = 0; d < *rank; d++) shape[d] = b.shape[o][d];
  }
  cov_arena_destroy(a);
  return st;
}

/* Appends a call whose input 0 is the previous output viewed as view[]. */
static cov_status add_post(cov_layer *l, const char *codelet, int view_rank, const int64_t *view,
                           map_call **out) {
  if (l->n_calls >= MAP_MAX_CALLS)
    return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, l->name), "layer %s: more than %d codelet calls", l->name,
                     MAP_MAX_CALLS);
  const cov_codelet *c = cov_codelet_lib_find(l->lib, codelet);
  if (!c) return cov_error(COV_NOT_FOUND, COV_AT(NULL, l->name), "layer %s: no codelet '%s'", l->name, codelet);
  map_call *mc = &l->calls[l->n_calls++];
  memset(mc, 0, sizeof *mc);
  mc->c = c;
  mc->view_rank = view_rank;
  memcpy(mc->view, view, sizeof(int64_t) * (size_t)view_rank);
  set_in(mc, view_rank, view);
  *out = mc;
  return NULL;
}

static cov_status add_posts(cov_layer *l, const char *const *post, int n_post, cov_loc *loc) {
  /* the logical shape of the running result: elementwise codelets see it
   * flat, but it keeps the main output's shape */
  int rank;
  int64_t shape[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(map_call_output(l, 0, &rank, shape));
  for (int p = 0; p < n_post; p++) {
    if (p > 0 && !strcmp(post[p - 1], "maxpool2x2"))
      COV_RETURN_IF_ERROR(map_call_output(l, l->n_calls - 1, &rank, shape));
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) numel *= shape[d];
    map_call *mc;
    const char *name = post[p];
    if (!strcmp(name, "bias")) {
      int64_t b[1];
      if (rank == 4) {
        COV_RETURN_IF_ERROR(add_post(l, "bias_add", rank, shape, &mc));
        b[0] = shape[1];
      } else if (rank == 2) {
        COV_RETURN_IF_ERROR(add_post(l, "bias_add_2d", rank, shape, &mc));
        b[0] = shape[1];
      } else {
        return cov_error(COV_UNSUPPORTED, loc, "layer %s: bias after a rank-%d output", l->name,
                         rank);
      }
      set_in(mc, 1, b);
    } else if (!strcmp(name, "relu") || !strcmp(name, "relu6") || !strcmp(name, "gelu") ||
               !strcmp(name, "sigmoid") || !strcmp(name, "tanh")) {
      int64_t v[1] = {numel};
      COV_RETURN_IF_ERROR(add_post(l, name, 1, v, &mc));
    } else if (!strcmp(name, "softmax")) {
      int64_t v[2] = {numel / shape[rank - 1], shape[rank - 1]};
      COV_RETURN_IF_ERROR(add_post(l, "softmax", 2, v, &mc));
    } else if (!strcmp(name, "maxpool2x2")) {
      if (rank != 4)
        return cov_error(COV_UNSUPPORTED, loc, "layer %s: maxpool2x2 after a rank-%d output",
                         l->name, rank);
      COV_RETURN_IF_ERROR(add_post(l, "maxpool", 4, shape, &mc));
      set_attr(mc, "kernel_h", 2);
      set_attr(mc, "kernel_w", 2);
      set_attr(mc, "stride_h", 2);
      set_attr(mc, "stride_w", 2);
    } else {
      return cov_error(COV_INVALID_INPUT, loc,
                       "layer %s: unknown post operation '%s' (expected bias, relu, relu6, "
                       "gelu, sigmoid, tanh, softmax or maxpool2x2)",
                       l->name, name);
    }
  }
  return NULL;
}

static int64_t shrink(int64_t v, int scale) {
  int64_t r = v / scale;
  return r < 1 ? 1 : r;
}

static cov_status build_from_entry(cov_layer *l, json_t *e, int scale, cov_loc *loc) {
  map_suite_entry se;
  COV_RETURN_IF_ERROR(map_suite_entry_read(e, loc, &se));
  const char *op = se.op, *post[MAP_SUITE_MAX_POST];
  int n_post = se.n_post;
  for (int i = 0; i < n_post; i++) post[i] = cov_arena_strdup(l->arena, se.post[i]);
  bool pool_after = false;
  for (int i = 0; i < n_post; i++)
    if (!strcmp(post[i], "maxpool2x2")) pool_after = true;
  map_call *mc = &l->calls[0];
  memset(mc, 0, sizeof *mc);
  l->n_calls = 1;
  if (!strcmp(op, "conv2d") || !strcmp(op, "maxpool")) {
    int64_t N = se.N, C = se.C, H = se.H, W = se.W, K = se.K, R = se.R, S = se.S, stride = se.stride,
            pad = se.pad, dil = se.dilation, groups = se.groups;
    if (scale > 1) {
      bool depthwise = groups == C && groups > 1;
      C = shrink(C, scale);
      K = shrink(K, scale);
      if (depthwise) groups = C, K = C;
      H = shrink(H, scale);
      W = shrink(W, scale);
      /* the dilated window must still fit */
      if (H < dil * (R - 1) + 1) H = dil * (R - 1) + 1;
      if (W < dil * (S - 1) + 1) W = dil * (S - 1) + 1;
      if (pool_after) { /* the fused 2x2 pool needs an even conv output */
        if (map_suite_out_dim(H, R, stride, pad, dil) % 2) H++;
        if (map_suite_out_dim(W, S, stride, pad, dil) % 2) W++;
      }
    }
    int64_t xs[4] = {N, C, H, W};
    if (!strcmp(op, "conv2d")) {
      mc->c = cov_codelet_lib_find(l->lib, "conv2d");
      int64_t ws[4] = {K, groups ? C / groups : C, R, S};
      set_in(mc, 4, xs);
      set_in(mc, 4, ws);
      set_attr(mc, "groups", groups);
      if (dil != 1) {
        set_attr(mc, "dilation_h", dil);
        set_attr(mc, "dilation_w", dil);
      }
    } else {
      mc->c = cov_codelet_lib_find(l->lib, "maxpool");
      set_in(mc, 4, xs);
      set_attr(mc, "kernel_h", R);
      set_attr(mc, "kernel_w", S);
    }
    set_attr(mc, "stride_h", stride);
    set_attr(mc, "stride_w", stride);
    set_attr(mc, "pad_top", pad);
    set_attr(mc, "pad_left", pad);
    set_attr(mc, "pad_bottom", pad);
    set_attr(mc, "pad_right", pad);
  } else if (!strcmp(op, "gemm") || !strcmp(op, "matmul") || !strcmp(op, "batch_matmul")) {
    int64_t B = se.B, M = se.M, N = se.N, K = se.K;
    if (scale > 1) B = shrink(B, scale), M = shrink(M, scale), N = shrink(N, scale), K = shrink(K, scale);
    mc->c = cov_codelet_lib_find(l->lib, op);
    if (!strcmp(op, "batch_matmul")) {
      int64_t a[3] = {B, M, K}, b[3] = {B, K, N};
      set_in(mc, 3, a);
      set_in(mc, 3, b);
    } else {
      int64_t a[2] = {M, K}, b[2] = {K, N};
      set_in(mc, 2, a);
      set_in(mc, 2, b);
    }
  } else {
    return cov_error(COV_UNSUPPORTED, loc,
                     "layer %s: op '%s' is not one the suite format knows (conv2d, maxpool, gemm, "
                     "matmul, batch_matmul)",
                     l->name, op);
  }
  if (!mc->c) return cov_error(COV_NOT_FOUND, loc, "layer %s: codelet for '%s' missing", l->name, op);
  int rank;
  int64_t shape[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(cov_status_annotate(map_call_output(l, 0, &rank, shape), "layer %s: ", l->name));
  return add_posts(l, post, n_post, loc);
}

static cov_status load_suite(const char *path, json_t **root, json_t **layers) {
  json_error_t err;
  *root = json_load_file(path, 0, &err);
  if (!*root) {
    cov_loc loc = {path, (unsigned)(err.line > 0 ? err.line : 0),
                   (unsigned)(err.column > 0 ? err.column : 0), NULL};
    return cov_error(COV_PARSE_ERROR, &loc, "cannot read the layer suite: %s", err.text);
  }
  *layers = json_object_get(*root, "layers");
  if (!json_is_array(*layers)) {
    json_decref(*root);
    cov_loc loc = {path, 0, 0, "$.layers"};
    return cov_error(COV_INVALID_INPUT, &loc, "expected an array of layers");
  }
  return NULL;
}

cov_status cov_suite_layer_names(const char *suite_path, char ***names, int *count) {
  char buf[4096];
  COV_RETURN_IF_ERROR(suite_or_default(suite_path, buf, sizeof buf, &suite_path));
  json_t *root, *layers;
  COV_RETURN_IF_ERROR(load_suite(suite_path, &root, &layers));
  size_t n = json_array_size(layers);
  char **v = calloc(n + 1, sizeof *v);
  for (size_t i = 0; v && i < n; i++) {
    const char *s = json_string_value(json_object_get(json_array_get(layers, i), "name"));
    v[i] = strdup(s ? s : "?");
  }
  json_decref(root);
  if (!v) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  *names = v;
  *count = (int)n;
  return NULL;
}

cov_status cov_layer_from_suite(const char *suite_path, const char *name, int scale,
                                cov_layer **out) {
  *out = NULL;
  if (scale < 1) return cov_error(COV_INVALID_ARGUMENT, COV_AT(suite_path, name), "scale must be >= 1 (got %d)", scale);
  char buf[4096];
  COV_RETURN_IF_ERROR(suite_or_default(suite_path, buf, sizeof buf, &suite_path));
  json_t *root, *layers;
  COV_RETURN_IF_ERROR(load_suite(suite_path, &root, &layers));
  json_t *entry = NULL;
  size_t idx = 0;
  for (size_t i = 0; i < json_array_size(layers); i++) {
    const char *s = json_string_value(json_object_get(json_array_get(layers, i), "name"));
    if (s && !strcmp(s, name)) entry = json_array_get(layers, i), idx = i;
  }
  if (!entry) {
    /* The closest name when it looks like a typo ("did you mean"). */
    const char *near = NULL;
    size_t best = COV_EDIT_FAR, len = strlen(name);
    for (size_t i = 0; i < json_array_size(layers); i++) {
      const char *s = json_string_value(json_object_get(json_array_get(layers, i), "name"));
      size_t d = s ? common_edit_distance(name, s) : COV_EDIT_FAR;
      if (d < best) best = d, near = s;
    }
    if (near && !common_is_near_miss(len, best)) near = NULL;
    cov_loc loc = {suite_path, 0, 0, "$.layers"};
    cov_status st = near ? cov_error(COV_NOT_FOUND, &loc,
                                     "no layer named '%s' in the suite (did you mean '%s'?); "
                                     "'covenant layers' lists them", name, near)
                         : cov_error(COV_NOT_FOUND, &loc,
                                     "no layer named '%s' in the suite; 'covenant layers' lists them",
                                     name);
    json_decref(root);
    return st;
  }
  /* NULL, not indeterminate: map_layer_new leaves it unset when it fails
   * (a codelet library that does not load), and *out is the caller's to free. */
  cov_layer *l = NULL;
  cov_status st = map_layer_new(name, NULL, &l);
  if (!st) {
    char path[64];
    snprintf(path, sizeof path, "$.layers[%zu]", idx);
    cov_loc loc = {suite_path, 0, 0, cov_arena_strdup(l->arena, path)};
    st = map_layer_done(l, build_from_entry(l, entry, scale, &loc));
    if (st) cov_layer_free(l), l = NULL;
  }
  json_decref(root);
  *out = l;
  return st;
}

static cov_status layer_from_codelet(const char *codelet, const cov_attr *attrs, size_t n_attrs,
                                     const int64_t (*shapes)[COV_MAX_RANK], const int *ranks,
                                     const cov_dtype *dtypes, size_t n_inputs, cov_layer **out);

cov_status cov_layer_from_codelet(const char *codelet, const cov_attr *attrs, size_t n_attrs,
                                  const int64_t (*shapes)[COV_MAX_RANK], const int *ranks,
                                  size_t n_inputs, cov_layer **out) {
  return layer_from_codelet(codelet, attrs, n_attrs, shapes, ranks, NULL, n_inputs, out);
}

cov_status cov_layer_from_call(const char *codelet, const cov_attr *attrs, size_t n_attrs,
                               const cov_tensor *inputs, size_t n_inputs, cov_layer **out) {
  *out = NULL;
  if (n_inputs > 4)
    return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, codelet), "too many inputs for '%s'", codelet);
  int64_t shapes[4][COV_MAX_RANK];
  int ranks[4];
  cov_dtype dt[4];
  for (size_t i = 0; i < n_inputs; i++) {
    ranks[i] = inputs[i].rank;
    dt[i] = inputs[i].dtype;
    for (int d = 0; d < inputs[i].rank && d < COV_MAX_RANK; d++) shapes[i][d] = inputs[i].shape[d];
  }
  return layer_from_codelet(codelet, attrs, n_attrs, (const int64_t(*)[COV_MAX_RANK])shapes, ranks,
                            dt, n_inputs, out);
}

static cov_status layer_from_codelet(const char *codelet, const cov_attr *attrs, size_t n_attrs,
                                     const int64_t (*shapes)[COV_MAX_RANK], const int *ranks,
                                     const cov_dtype *dtypes, size_t n_inputs, cov_layer **out) {
  *out = NULL;
  cov_layer *l;
  COV_RETURN_IF_ERROR(map_layer_new(codelet, NULL, &l));
  map_call *mc = &l->calls[0];
  l->n_calls = 1;
  cov_status st = NULL;
  mc->c = cov_codelet_lib_find(l->lib, codelet);
  if (!mc->c) st = cov_error(COV_NOT_FOUND, COV_AT(NULL, codelet), "no codelet named '%s'", codelet);
  else if (n_attrs > MAP_MAX_ATTRS || n_inputs > 4)
    st = cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, codelet), "too many attributes or inputs for '%s'", codelet);
  else if (n_inputs != cov_codelet_num_inputs(mc->c))
    st = cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, codelet), "codelet %s takes %zu inputs, %zu shapes given",
                   codelet, cov_codelet_num_inputs(mc->c), n_inputs);
  if (!st) {
    for (size_t i = 0; i < n_attrs; i++) {
      mc->attrs[i] = attrs[i];
      mc->attrs[i].name = cov_arena_strdup(l->arena, attrs[i].name);
    }
    mc->n_attrs = (int)n_attrs;
    for (size_t i = 0; i < n_inputs; i++) {
      if (ranks[i] < 0 || ranks[i] > COV_MAX_RANK) {
        st = cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, codelet), "input %zu: bad rank %d", i, ranks[i]);
        break;
      }
      set_in(mc, ranks[i], shapes[i]);
      if (dtypes) mc->in[mc->n_inputs - 1].dtype = dtypes[i];
    }
  }
  if (!st) {
    int rank;
    int64_t shape[COV_MAX_RANK];
    st = map_call_output(l, 0, &rank, shape);
  }
  st = map_layer_done(l, st);
  if (st) {
    cov_layer_free(l);
    return st;
  }
  *out = l;
  return NULL;
}

int cov_layer_num_inputs(const cov_layer *l) {
  int n = l->calls[0].n_inputs;
  for (int i = 1; i < l->n_calls; i++) n += l->calls[i].n_inputs - 1;
  return n;
}

cov_status cov_layer_input(const cov_layer *l, int i, cov_tensor *t) {
  for (int c = 0; c < l->n_calls; c++) {
    int first = c == 0 ? 0 : 1;
    int n = l->calls[c].n_inputs - first;
    if (i < n) {
      *t = l->calls[c].in[first + i];
      t->data = NULL;
      return NULL;
    }
    i -= n;
  }
  return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_layer_input"), "layer %s has no input %d", l->name, i);
}

cov_status cov_layer_reference(const cov_layer *l, const cov_tensor *inputs, cov_tensor *out) {
  cov_tensor cur = {0};
  int next = 0;
  for (int c = 0; c < l->n_calls; c++) {
    const map_call *mc = &l->calls[c];
    cov_tensor in[4];
    memset(in, 0, sizeof in);
    if (c == 0) {
      for (int i = 0; i < mc->n_inputs; i++) in[i] = inputs[next++];
    } else {
      in[0] = cur;
      in[0].rank = mc->view_rank;
      for (int d = 0; d < mc->view_rank; d++) in[0].shape[d] = mc->view[d];
      for (int i = 1; i < mc->n_inputs; i++) in[i] = inputs[next++];
    }
    cov_tensor res = {0};
    cov_status st = cov_codelet_run(mc->c, mc->attrs, (size_t)mc->n_attrs, in,
                                    (size_t)mc->n_inputs, &res, 1);
    if (c > 0) cov_tensor_release(&cur);
    if (st) return st;
    cur = res;
  }
  *out = cur;
  return NULL;
}

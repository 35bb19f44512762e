/* backends/gpu/gpu_layer.c: layer specifications from the suite file. */
#include "backends/gpu/gpu_layer.h"
#include "common/edit_distance.h"
#include "mapper/map_suite.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cov_status load_suite(const char *path, json_t **out) {
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  if (!root) {
    /* jansson's -1 is "no position" (a file that cannot be opened). */
    cov_loc loc = {path, err.line > 0 ? (unsigned)err.line : 0,
                   err.line > 0 && err.column > 0 ? (unsigned)err.column : 0, NULL};
    return cov_error(COV_PARSE_ERROR, &loc, "cannot read the layer suite: %s", err.text);
  }
  if (!json_is_array(json_object_get(root, "layers"))) {
    json_decref(root);
    cov_loc loc = {path, 0, 0, "$.layers"};
    return cov_error(COV_INVALID_INPUT, &loc, "expected an object with a \"layers\" array");
  }
  *out = root;
  return NULL;
}

cov_status gpu_layer_suite_names(const char *suite_path, char (*names)[96], int max, int *count) {
  json_t *root;
  COV_RETURN_IF_ERROR(load_suite(suite_path, &root));
  json_t *layers = json_object_get(root, "layers");
  *count = 0;
  for (size_t i = 0; i < json_array_size(layers) && *count < max; i++) {
    const char *n = json_string_value(json_object_get(json_array_get(layers, i), "name"));
    if (n) snprintf(names[(*count)++], 96, "%s", n);
  }
  json_decref(root);
  return NULL;
}

static cov_status from_entry(const char *path, const json_t *e, size_t index, int64_t batch, gpu_layer *out) {
  char jpath[48];
  snprintf(jpath, sizeof jpath, "$.layers[%zu]", index);
  cov_loc loc = {path, 0, 0, jpath};
  map_suite_entry se; /* the fields as every suite reader sees them */
  COV_RETURN_IF_ERROR(map_suite_entry_read(e, &loc, &se));
  const char *op = se.op, *name = se.name;
  gpu_problem *q = &out->prob;
  q->file = path;
  snprintf(q->node, sizeof q->node, "%s", name);
  if (!strcmp(op, "conv2d") || !strcmp(op, "maxpool")) {
    q->kind = !strcmp(op, "conv2d") ? GPU_OP_CONV2D : GPU_OP_MAXPOOL;
    q->cn = batch > 0 ? batch : se.N, q->cc = se.C, q->ch = se.H, q->cw = se.W, q->cr = se.R, q->cs = se.S;
    q->stride = se.stride, q->pad = se.pad;
    if (q->kind == GPU_OP_CONV2D) q->ck = se.K, q->dilation = se.dilation, q->groups = se.groups;
  } else if (!strcmp(op, "gemm") || !strcmp(op, "batch_matmul")) {
    q->kind = GPU_OP_MATMUL;
    q->m = se.M, q->n = se.N, q->k = se.K, q->batch = se.B;
    if (batch > 0) {
      if (!strcmp(op, "gemm"))
        q->m *= batch;
      else
        q->batch = batch;
    }
  } else {
    return cov_error(COV_UNSUPPORTED, &loc,
                     "layer %s is a %s (the GPU lowering builds conv2d, gemm, batch_matmul and maxpool)", name, op);
  }
  for (int i = 0; i < se.n_post; i++) {
    const char *p = se.post[i];
    gpu_epilogue *ep = &q->epi;
    int after_pool = ep->maxpool2x2 || ep->softmax || q->kind == GPU_OP_MAXPOOL;
    if (!strcmp(p, "bias") && !ep->bias && ep->act == GPU_ACT_NONE && !after_pool) {
      ep->bias = true;
    } else if (!strcmp(p, "relu") && ep->act == GPU_ACT_NONE && !after_pool) {
      ep->act = GPU_ACT_RELU;
    } else if (!strcmp(p, "relu6") && ep->act == GPU_ACT_NONE && !after_pool) {
      ep->act = GPU_ACT_CLIP, ep->clip_lo = 0, ep->clip_hi = 6;
    } else if (!strcmp(p, "gelu") && ep->act == GPU_ACT_NONE && !after_pool) {
      ep->act = GPU_ACT_GELU;
    } else if (!strcmp(p, "maxpool2x2") && q->kind == GPU_OP_CONV2D && !after_pool) {
      ep->maxpool2x2 = true;
    } else if (!strcmp(p, "softmax") && q->kind == GPU_OP_MATMUL && !after_pool) {
      ep->softmax = true;
    } else {
      /* everything from here on runs after the kernel */
      for (int j = i; j < se.n_post; j++) {
        const char *r = se.post[j];
        size_t len = strlen(out->unfused);
        snprintf(out->unfused + len, sizeof out->unfused - len, "%s%s", len ? "," : "", r ? r : "?");
      }
      break;
    }
  }
  return NULL;
}

cov_status gpu_layer_from_spec(const char *suite_path, const char *spec, cov_dtype in_dtype,
                               gpu_layer *out) {
  memset(out, 0, sizeof *out);
  out->prob.in_dtype = in_dtype;
  out->prob.batch = 1, out->prob.stride = 1, out->prob.dilation = 1, out->prob.groups = 1;
  long long m, n, k;
  char tail;
  if (!strncmp(spec, "gemm_", 5)) {
    if (sscanf(spec + 5, "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 || k < 1)
      return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(suite_path, spec), "layer '%s': expected gemm_MxNxK with positive sizes", spec);
    snprintf(out->name, sizeof out->name, "gemm_%lldx%lldx%lld", m, n, k);
    snprintf(out->prob.node, sizeof out->prob.node, "%s", out->name);
    out->prob.kind = GPU_OP_MATMUL;
    out->prob.m = m, out->prob.n = n, out->prob.k = k;
    return NULL;
  }
  char base[96];
  int64_t batch = 0;
  const char *at = strchr(spec, '@');
  size_t len = at ? (size_t)(at - spec) : strlen(spec);
  if (len == 0 || len >= sizeof base)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(suite_path, spec), "layer '%s': expected NAME, NAME@bN or gemm_MxNxK", spec);
  memcpy(base, spec, len);
  base[len] = '\0';
  /* suffixes: @bN (the batch), @cl (channels-last tensors as cuDNN takes
   * them: NHWC input, NHWC f16 output; prob.nhwc_io), each at most once, in
   * that order */
  bool nhwc_io = false;
  if (at) {
    long long bn;
    int used = 0;
    if (!strncmp(at, "@b", 2)) {
      if (sscanf(at, "@b%lld%n", &bn, &used) != 1 || bn < 1 || (at[used] && strcmp(at + used, "@cl")))
        return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(suite_path, spec),
                         "layer '%s': the batch suffix must be @bN with N >= 1, optionally followed by @cl", spec);
      batch = bn;
    } else if (strcmp(at, "@cl")) {
      return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(suite_path, spec),
                       "layer '%s': expected the suffixes @bN (batch N >= 1) and/or @cl (channels-last tensors)", spec);
    }
    nhwc_io = strstr(at, "@cl") != NULL;
  }
  json_t *root;
  COV_RETURN_IF_ERROR(load_suite(suite_path, &root));
  json_t *layers = json_object_get(root, "layers");
  cov_status st = NULL;
  size_t i;
  for (i = 0; i < json_array_size(layers); i++) {
    json_t *e = json_array_get(layers, i);
    const char *nm = json_string_value(json_object_get(e, "name"));
    if (nm && !strcmp(nm, base)) {
      snprintf(out->name, sizeof out->name, "%s", spec);
      for (char *c = out->name; *c; c++)
        if (*c == '@') *c = '_';
      st = from_entry(suite_path, e, i, batch, out);
      out->prob.nhwc_io = nhwc_io;
      break;
    }
  }
  if (i == json_array_size(layers)) {
    const char *near = NULL;
    size_t best = COV_EDIT_FAR;
    for (i = 0; i < json_array_size(layers); i++) {
      const char *nm = json_string_value(json_object_get(json_array_get(layers, i), "name"));
      size_t d = nm ? common_edit_distance(base, nm) : COV_EDIT_FAR;
      if (d < best) best = d, near = nm;
    }
    cov_loc loc = {suite_path, 0, 0, "$.layers"};
    if (near && common_is_near_miss(strlen(base), best))
      st = cov_error(COV_NOT_FOUND, &loc, "no layer named '%s' in the suite (did you mean '%s'?), "
                     "nor of the form gemm_MxNxK", base, near);
    else
      st = cov_error(COV_NOT_FOUND, &loc, "no layer named '%s' in the suite, nor of the form "
                     "gemm_MxNxK; 'covenant layers' lists them", base);
  }
  json_decref(root);
  return st;
}

/* One default for every command: $COVENANT_SUITE, else the shipped suite. */
const char *gpu_default_suite(void) { return cov_suite_default_path(); }

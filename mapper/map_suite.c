/* mapper/map_suite.c: the fields of one layer-suite entry (map_suite.h). */
#include "mapper/map_suite.h"

#include <string.h>

static cov_status field(const json_t *e, const char *key, int64_t def, int64_t *out, const cov_loc *loc,
                        const char *name) {
  json_t *v = json_object_get(e, key);
  if (!v) {
    if (def < 0)
      return cov_error(COV_INVALID_INPUT, loc, "layer %s: missing integer field \"%s\"", name, key);
    *out = def;
    return NULL;
  }
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 24))
    return cov_error(COV_INVALID_INPUT, loc, "layer %s: field \"%s\" must be an integer in [0, 2^24]", name, key);
  *out = json_integer_value(v);
  return NULL;
}

cov_status map_suite_entry_read(const json_t *e, const cov_loc *loc, map_suite_entry *out) {
  memset(out, 0, sizeof *out);
  out->name = json_string_value(json_object_get(e, "name"));
  const char *name = out->name ? out->name : "?";
  out->op = json_string_value(json_object_get(e, "op"));
  const char *op = out->op;
  if (!op) return cov_error(COV_INVALID_INPUT, loc, "layer %s: missing string field \"op\"", name);
  json_t *pj = json_object_get(e, "post");
  if (pj) {
    if (!json_is_array(pj) || json_array_size(pj) > MAP_SUITE_MAX_POST)
      return cov_error(COV_INVALID_INPUT, loc, "layer %s: \"post\" must be an array of at most %d names", name,
                       MAP_SUITE_MAX_POST);
    for (size_t i = 0; i < json_array_size(pj); i++) {
      out->post[out->n_post] = json_string_value(json_array_get(pj, i));
      if (!out->post[out->n_post])
        return cov_error(COV_INVALID_INPUT, loc, "layer %s: \"post\"[%zu] must be a string", name, i);
      out->n_post++;
    }
  }
  int conv = !strcmp(op, "conv2d"), pool = !strcmp(op, "maxpool");
  out->B = 1;
  if (conv || pool) {
    COV_RETURN_IF_ERROR(field(e, "N", 1, &out->N, loc, name));
    COV_RETURN_IF_ERROR(field(e, "C", -1, &out->C, loc, name));
    COV_RETURN_IF_ERROR(field(e, "H", -1, &out->H, loc, name));
    COV_RETURN_IF_ERROR(field(e, "W", -1, &out->W, loc, name));
    if (conv) COV_RETURN_IF_ERROR(field(e, "K", -1, &out->K, loc, name));
    else out->K = out->C;
    COV_RETURN_IF_ERROR(field(e, "R", -1, &out->R, loc, name));
    COV_RETURN_IF_ERROR(field(e, "S", -1, &out->S, loc, name));
    COV_RETURN_IF_ERROR(field(e, "stride", 1, &out->stride, loc, name));
    COV_RETURN_IF_ERROR(field(e, "pad", 0, &out->pad, loc, name));
    COV_RETURN_IF_ERROR(field(e, "dilation", 1, &out->dilation, loc, name));
    COV_RETURN_IF_ERROR(field(e, "groups", 1, &out->groups, loc, name));
    if (pool && out->dilation != 1)
      return cov_error(COV_UNSUPPORTED, loc, "layer %s: dilation applies to conv2d only", name);
  } else if (!strcmp(op, "gemm") || !strcmp(op, "matmul") || !strcmp(op, "batch_matmul")) {
    out->stride = out->dilation = out->groups = 1;
    if (!strcmp(op, "batch_matmul")) COV_RETURN_IF_ERROR(field(e, "B", 1, &out->B, loc, name));
    COV_RETURN_IF_ERROR(field(e, "M", -1, &out->M, loc, name));
    COV_RETURN_IF_ERROR(field(e, "N", -1, &out->N, loc, name));
    COV_RETURN_IF_ERROR(field(e, "K", -1, &out->K, loc, name));
  }
  /* another op: no fields; each reader says which ops it builds */
  return NULL;
}

int64_t map_suite_out_dim(int64_t h, int64_t r, int64_t stride, int64_t pad, int64_t dilation) {
  int64_t span = h + 2 * pad - dilation * (r - 1) - 1;
  return span < 0 || stride < 1 ? 0 : span / stride + 1;
}

/* explore/explore_layers.c: the layers a study evaluates, reduced to the work
 * they do (MACs) and the data they must move (elements read and written).
 *
 * Suite layers (bench/suite/layers.json) are described by shape; their
 * counts follow the layer definitions below. ONNX models contribute their
 * compute layer groups through the frontend (cov_model_group_get_info). */
#include <string.h>

#include "covenant/model.h"
#include "common/edit_distance.h"
#include "explore/explore.h"
#include "mapper/map_suite.h"

static cov_status add(cov_arena *a, explore_layers *ls, explore_layer l) {
  if (ls->n == ls->cap) {
    int cap = ls->cap ? ls->cap * 2 : 32;
    ls->items = cov_arena_grow(a, ls->items, (size_t)ls->cap, (size_t)cap, sizeof *ls->items);
    if (!ls->items) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    ls->cap = cap;
  }
  for (int i = 0; i < ls->n; i++)
    if (strcmp(ls->items[i].name, l.name) == 0)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT(l.suite_file, l.name), "layer '%s' is given twice", l.name);
  ls->items[ls->n++] = l;
  return NULL;
}

static int has_post(const map_suite_entry *se, const char *what) {
  for (int i = 0; i < se->n_post; i++)
    if (strcmp(se->post[i], what) == 0) return 1;
  return 0;
}

/* conv2d: out[N,K,P,Q] += in[N,C,H,W] * w[K,C/g,R,S] (dilated windows);
 * maxpool: out[N,C,P,Q]; gemm: out[M,N] += a[M,K] b[K,N]; batch_matmul: B
 * independent gemms whose both operands are activations. A "bias" post-op
 * reads one constant per output channel; "maxpool2x2" quarters what is
 * written. The fields are the suite reader's (mapper/map_suite.h), the
 * same the mapper and the GPU lowering see. */
static cov_status suite_layer(cov_arena *a, const char *file, const json_t *o, size_t index, explore_layer *l) {
  const char *name = json_string_value(json_object_get(o, "name"));
  const char *op = json_string_value(json_object_get(o, "op"));
  if (!name || !op)
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = file), "a layer lacks 'name' or 'op'");
  char jpath[48];
  snprintf(jpath, sizeof jpath, "$.layers[%zu]", index);
  map_suite_entry se;
  COV_RETURN_IF_ERROR(map_suite_entry_read(o, EXPLORE_AT(.file = file, .path = jpath), &se));
  memset(l, 0, sizeof *l);
  l->name = cov_arena_strdup(a, name);
  l->op = cov_arena_strdup(a, op);
  if (strcmp(op, "conv2d") == 0 || strcmp(op, "maxpool") == 0) {
    double N = (double)se.N, C = (double)se.C, H = (double)se.H, W = (double)se.W, K = (double)se.K,
           R = (double)se.R, S = (double)se.S, groups = (double)se.groups;
    int64_t P = map_suite_out_dim(se.H, se.R, se.stride, se.pad, se.dilation);
    int64_t Q = map_suite_out_dim(se.W, se.S, se.stride, se.pad, se.dilation);
    if (se.stride < 1 || se.groups < 1 || P < 1 || Q < 1 || se.C % se.groups)
      return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = file, .path = name),
                       "inconsistent shape (stride, groups, or a window larger than the input)");
    l->in_elems = N * C * H * W;
    if (strcmp(op, "conv2d") == 0) {
      l->macs = N * K * (double)P * (double)Q * (C / groups) * R * S;
      l->w_elems = K * (C / groups) * R * S + (has_post(&se, "bias") ? K : 0);
      l->out_elems = has_post(&se, "maxpool2x2") ? N * K * (double)(P / 2) * (double)(Q / 2)
                                                 : N * K * (double)P * (double)Q;
    } else {
      l->out_elems = N * C * (double)P * (double)Q;
    }
  } else if (strcmp(op, "gemm") == 0 || strcmp(op, "batch_matmul") == 0) {
    double B = (double)se.B, M = (double)se.M, N = (double)se.N, K = (double)se.K;
    l->macs = B * M * N * K;
    l->out_elems = B * M * N;
    if (strcmp(op, "gemm") == 0) {
      l->in_elems = M * K;
      l->w_elems = K * N + (has_post(&se, "bias") ? N : 0);
    } else {
      l->in_elems = B * (M * K + K * N);
    }
  } else {
    return cov_error(COV_UNSUPPORTED, EXPLORE_AT(.file = file, .path = name),
                     "op '%s' is not one explore knows (conv2d, maxpool, gemm, batch_matmul)", op);
  }
  return NULL;
}

cov_status explore_layers_add_suite(cov_arena *a, const char *path, const char *names,
                                    explore_layers *out) {
  json_error_t jerr;
  json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!doc)
    /* jansson reports -1 for a position it does not know (a file that
     * cannot be opened): no position then, rather than 4294967295. */
    return cov_error(COV_PARSE_ERROR, EXPLORE_AT(.file = path, .line = jerr.line > 0 ? (unsigned)jerr.line : 0,
                                                 .col = jerr.line > 0 && jerr.column > 0 ? (unsigned)jerr.column : 0),
                     "%s", jerr.text);
  cov_status st = NULL;
  json_t *layers = json_object_get(doc, "layers");
  if (!json_is_array(layers)) {
    st = cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path), "expected a 'layers' array");
    goto done;
  }
  /* Every requested name must exist: a typo should not shrink the study. */
  if (names && *names) {
    const char *p = names;
    for (;;) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      int found = 0;
      size_t i;
      json_t *o;
      json_array_foreach(layers, i, o) {
        const char *nm = json_string_value(json_object_get(o, "name"));
        if (nm && strlen(nm) == n && strncmp(nm, p, n) == 0) {
          explore_layer l;
          if ((st = suite_layer(a, path, o, i, &l))) goto done;
          l.suite_file = cov_arena_strdup(a, path);
          l.suite_name = l.name;
          if ((st = add(a, out, l))) goto done;
          found = 1;
        }
      }
      if (!found) {
        char want[COV_EDIT_MAX_NAME + 1];
        snprintf(want, sizeof want, "%.*s", (int)(n < sizeof want ? n : sizeof want - 1), p);
        const char *near = NULL;
        size_t best = COV_EDIT_FAR;
        json_array_foreach(layers, i, o) {
          const char *nm = json_string_value(json_object_get(o, "name"));
          size_t d = nm ? common_edit_distance(want, nm) : COV_EDIT_FAR;
          if (d < best) best = d, near = nm;
        }
        if (near && common_is_near_miss(n, best))
          st = cov_error(COV_NOT_FOUND, EXPLORE_AT(.file = path),
                         "--suite: no layer named '%.*s' (did you mean '%s'?)", (int)n, p, near);
        else
          st = cov_error(COV_NOT_FOUND, EXPLORE_AT(.file = path),
                         "--suite: no layer named '%.*s'; 'covenant layers' lists them", (int)n, p);
        goto done;
      }
      if (!comma) break;
      p = comma + 1;
    }
  } else {
    size_t i;
    json_t *o;
    json_array_foreach(layers, i, o) {
      explore_layer l;
      if ((st = suite_layer(a, path, o, i, &l))) goto done;
      l.suite_file = cov_arena_strdup(a, path);
      l.suite_name = l.name;
      if ((st = add(a, out, l))) goto done;
    }
  }
done:
  json_decref(doc);
  return st;
}

cov_status explore_layers_add_model(cov_arena *a, const char *path, explore_layers *out) {
  cov_model *m = NULL;
  COV_RETURN_IF_ERROR(cov_model_load_file(path, NULL, &m));
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t stem = strlen(base);
  if (stem > 5 && strcmp(base + stem - 5, ".onnx") == 0) stem -= 5;
  cov_status st = NULL;
  for (size_t i = 0; i < cov_model_num_groups(m) && !st; i++) {
    cov_model_group_info gi;
    if ((st = cov_model_group_get_info(m, i, &gi))) break;
    if (gi.layout) continue;
    if (gi.macs < 0) {
      st = cov_error(COV_UNSUPPORTED, EXPLORE_AT(.file = path),
                     "layer group #%zu (%s) has shapes the frontend could not infer", i, gi.kind);
      break;
    }
    explore_layer l = {
        .name = cov_arena_printf(a, "%.*s#%zu", (int)stem, base, i),
        .op = cov_arena_strdup(a, gi.kind),
        .macs = (double)gi.macs,
        .in_elems = (double)gi.in_elems,
        .w_elems = (double)gi.const_elems,
        .out_elems = (double)gi.out_elems,
    };
    st = add(a, out, l);
  }
  cov_model_free(m);
  return st;
}

/* frontend/ops/graph_geom.c: window geometry shared by convolutions and pools
 * (graph_geom.h). */
#include "frontend/ops/graph_geom.h"

#include <string.h>

cov_status graph_geom_read_spatial(const graph *g, const graph_node *n, const char *name, int sp,
                                   int64_t def, int64_t lo, int64_t *v) {
  const int64_t *a;
  size_t na;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, name, &a, &na));
  for (int i = 0; i < 3; i++) v[i] = def;
  if (!a) return NULL;
  if ((int)na != sp)
    return graph_node_error(g, n, COV_INVALID_INPUT, "'%s' has %zu values for %d spatial dims",
                            name, na, sp);
  for (int i = 0; i < sp; i++) {
    if (a[i] < lo || a[i] > GEOM_MAX)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "'%s' value %lld is out of range (%lld to %lld)", name,
                              (long long)a[i], (long long)lo, (long long)GEOM_MAX);
    v[3 - sp + i] = a[i];
  }
  return NULL;
}

/* Strides, dilations, pads and auto_pad; kernel and input sizes already in
 * c->k and c->in (an input dim of -1 leaves the output dim unknown). */
cov_status graph_geom_window(const graph *g, const graph_node *n, geom *c, bool ceil_mode,
                             bool has_dilations) {
  int sp = c->sp;
  COV_RETURN_IF_ERROR(graph_geom_read_spatial(g, n, "strides", sp, 1, 1, c->s));
  if (has_dilations)
    COV_RETURN_IF_ERROR(graph_geom_read_spatial(g, n, "dilations", sp, 1, 1, c->d));
  else
    c->d[0] = c->d[1] = c->d[2] = 1;
  const int64_t *pads;
  size_t np;
  COV_RETURN_IF_ERROR(graph_attr_ints(g, n, "pads", &pads, &np));
  const char *auto_pad;
  COV_RETURN_IF_ERROR(graph_attr_string(g, n, "auto_pad", "NOTSET", &auto_pad));
  bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0,
       same_lower = strcmp(auto_pad, "SAME_LOWER") == 0, valid = strcmp(auto_pad, "VALID") == 0;
  if (!same_upper && !same_lower && !valid && strcmp(auto_pad, "NOTSET") != 0)
    return graph_node_error(g, n, COV_INVALID_INPUT,
                            "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                            auto_pad);
  if (pads && (same_upper || same_lower || valid))
    return graph_node_error(g, n, COV_INVALID_INPUT, "has both 'pads' and auto_pad %s", auto_pad);
  for (int i = 0; i < 3; i++) c->pb[i] = c->pe[i] = c->extra[i] = 0;
  if (pads) {
    if ((int)np != 2 * sp)
      return graph_node_error(g, n, COV_INVALID_INPUT, "'pads' has %zu values; expected %d", np,
                              2 * sp);
    for (int i = 0; i < sp; i++) {
      if (pads[i] < 0 || pads[sp + i] < 0 || pads[i] > GEOM_MAX || pads[sp + i] > GEOM_MAX)
        return graph_node_error(g, n, COV_INVALID_INPUT, "pads must be from 0 to %lld",
                                (long long)GEOM_MAX);
      c->pb[3 - sp + i] = pads[i];
      c->pe[3 - sp + i] = pads[sp + i];
    }
  }
  for (int i = 0; i < 3; i++) {
    int64_t span = (c->k[i] - 1) * c->d[i] + 1;
    if (c->in[i] < 0) {
      c->out[i] = -1;
      continue;
    }
    if (same_upper || same_lower) {
      int64_t out = (c->in[i] + c->s[i] - 1) / c->s[i];
      int64_t total = (out - 1) * c->s[i] + span - c->in[i];
      if (total < 0) total = 0;
      c->pb[i] = same_upper ? total / 2 : total - total / 2;
      c->pe[i] = total - c->pb[i];
    }
    int64_t room = c->in[i] + c->pb[i] + c->pe[i] - span;
    if (room < 0)
      return graph_node_error(g, n, COV_INVALID_INPUT,
                              "the window (%lld with dilation %lld) is larger than the padded "
                              "input (%lld)",
                              (long long)c->k[i], (long long)c->d[i],
                              (long long)(c->in[i] + c->pb[i] + c->pe[i]));
    c->out[i] = room / c->s[i] + 1;
    if (ceil_mode && room % c->s[i]) {
      c->out[i]++;
      /* The last window must start inside the input or its left padding
       * (PyTorch's rule, which onnxruntime follows). */
      if ((c->out[i] - 1) * c->s[i] >= c->in[i] + c->pb[i]) c->out[i]--;
      int64_t need = (c->out[i] - 1) * c->s[i] + span - (c->in[i] + c->pb[i] + c->pe[i]);
      c->extra[i] = need > 0 ? need : 0;
    }
  }
  return NULL;
}

cov_status graph_geom_spatial_rank(const graph *g, const graph_node *n, const graph_value *x,
                                   int max_sp, int *sp) {
  if (x->rank >= 3 && x->rank - 2 <= max_sp) {
    *sp = x->rank - 2;
    return NULL;
  }
  if (x->rank > 2)
    return graph_node_error(g, n, COV_UNSUPPORTED,
                            "%d-D %s is not supported (covenant has %d-D codelets at most)",
                            x->rank - 2, n->op_type, max_sp);
  return graph_node_error(g, n, COV_INVALID_INPUT,
                          "input '%s' has rank %d; expected [N, C, spatial...] (rank 3 to %d)",
                          x->name, x->rank, max_sp + 2);
}

void graph_geom_set_in(geom *c, const graph_value *x) {
  c->in[0] = c->sp == 3 ? x->dims[2] : 1;
  c->in[1] = c->sp >= 2 ? x->dims[x->rank - 2] : 1;
  c->in[2] = x->dims[x->rank - 1];
}

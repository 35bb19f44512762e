/* frontend/graph_print.c: the graph's printers.
 *
 * graph_print_summary is `covenant inspect`: the model's interface, the
 * operators left after the passes, parameters, and each layer group with its
 * nodes, shapes, bound codelets and multiply-accumulates. graph_print dumps
 * every node with its attributes (`covenant inspect --graph`). Both are
 * deterministic: the same model prints the same bytes. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/graph.h"

/* 1234567 -> "1,234,567" */
static const char *fmt_count(int64_t v, char *buf, size_t size) {
  if (v < 0) {
    snprintf(buf, size, "?");
    return buf;
  }
  char digits[32];
  int n = snprintf(digits, sizeof digits, "%" PRId64, v);
  size_t k = 0;
  for (int i = 0; i < n && k + 2 < size; i++) {
    if (i && (n - i) % 3 == 0) buf[k++] = ',';
    buf[k++] = digits[i];
  }
  buf[k] = '\0';
  return buf;
}

static const char *fmt_bytes(double b, char *buf, size_t size) {
  if (b < 1024)
    snprintf(buf, size, "%.0f B", b);
  else if (b < 1024.0 * 1024)
    snprintf(buf, size, "%.1f KiB", b / 1024);
  else if (b < 1024.0 * 1024 * 1024)
    snprintf(buf, size, "%.1f MiB", b / (1024.0 * 1024));
  else
    snprintf(buf, size, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}

static int64_t tail_product(const graph_value *v, int from) {
  if (!graph_shape_known(v)) return -1;
  int64_t p = 1;
  for (int i = from; i < v->rank; i++) p *= v->dims[i];
  return p;
}

int64_t graph_node_macs(const graph_node *n) {
  const graph_value *o = n->out[0];
  int64_t out = o ? graph_numel(o) : -1;
  /* LSTM, GRU, RNN: unknown here; they are unrolled into nodes that count */
  if (strcmp(n->op_type, "LSTM") == 0 || strcmp(n->op_type, "GRU") == 0 ||
      strcmp(n->op_type, "RNN") == 0)
    return -1;
  if (strcmp(n->op_type, "Conv") == 0) {
    int64_t per = tail_product(n->in[1], 1);
    return out < 0 || per < 0 ? -1 : out * per;
  }
  if (strcmp(n->op_type, "QLinearConv") == 0 || strcmp(n->op_type, "ConvInteger") == 0 ||
      strcmp(n->op_type, "IntegerConv") == 0) {
    int64_t per = tail_product(n->in[strcmp(n->op_type, "QLinearConv") == 0 ? 3 : 1], 1);
    return out < 0 || per < 0 ? -1 : out * per;
  }
  if (strcmp(n->op_type, "QLinearMatMul") == 0 || strcmp(n->op_type, "MatMulInteger") == 0 ||
      strcmp(n->op_type, "QGemm") == 0 || strcmp(n->op_type, "IntegerMatMul") == 0) {
    const graph_value *a = n->in[0];
    if (a->rank < 1 || out < 0) return -1;
    int64_t k = a->dims[a->rank - 1];
    if (strcmp(n->op_type, "QGemm") == 0) {
      const graph_attr *t = graph_attr_find(n, "transA");
      if (t && t->type == GA_INT && t->i && a->rank == 2) k = a->dims[0];
    }
    return k < 0 ? -1 : out * k;
  }
  if (strcmp(n->op_type, "ConvTranspose") == 0) {
    int64_t in = graph_numel(n->in[0]), per = tail_product(n->in[1], 1);
    return in < 0 || per < 0 ? -1 : in * per;
  }
  if (strcmp(n->op_type, "Gemm") == 0 || strcmp(n->op_type, "MatMul") == 0) {
    const graph_value *a = n->in[0];
    if (a->rank < 1 || out < 0) return -1;
    int64_t k = a->dims[a->rank - 1];
    if (strcmp(n->op_type, "Gemm") == 0) {
      const graph_attr *t = graph_attr_find(n, "transA");
      if (t && t->type == GA_INT && t->i && a->rank == 2) k = a->dims[0];
    }
    return k < 0 ? -1 : out * k;
  }
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void print_value(FILE *out, const graph_value *v) {
  char t[256];
  fprintf(out, "%s %s", v->name, graph_type_str(v, t, sizeof t));
}

/* Parameters: constant inputs of compute nodes (weights, biases, scales). */
static int64_t group_params(const graph_group *grp) {
  int64_t total = 0;
  for (int i = 0; i < grp->n_nodes; i++) {
    const graph_node *n = grp->nodes[i];
    if (n->def->layout) continue;
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j] && n->in[j]->data && graph_numel(n->in[j]) > 0) total += graph_numel(n->in[j]);
  }
  return total;
}

static void print_node_line(FILE *out, const graph_node *n, const char *indent) {
  fprintf(out, "%s%s (%s):", indent, n->name, n->op_type);
  bool first = true;
  for (int j = 0; j < n->n_in; j++) {
    if (!n->in[j]) continue;
    fprintf(out, "%s", first ? " " : ", ");
    first = false;
    print_value(out, n->in[j]);
    if (n->in[j]->data) fprintf(out, " (const)");
  }
  fprintf(out, " ->");
  first = true;
  for (int j = 0; j < n->n_out; j++) {
    if (!n->out[j]) continue;
    fprintf(out, "%s", first ? " " : ", ");
    first = false;
    print_value(out, n->out[j]);
  }
  fprintf(out, "\n");
}

cov_status graph_print_summary(const graph *g, FILE *out) {
  char a[64], b[64];
  fprintf(out, "model: %s\n", g->file);
  fprintf(out, "  ir_version %" PRId64 ", opset %d", g->ir_version, g->opset);
  if (g->producer && *g->producer)
    fprintf(out, ", producer %s%s%s", g->producer,
            g->producer_version && *g->producer_version ? " " : "",
            g->producer_version ? g->producer_version : "");
  fprintf(out, "\ninputs:\n");
  for (size_t i = 0; i < g->n_inputs; i++) {
    fprintf(out, "  ");
    print_value(out, g->inputs[i]);
    if (g->inputs[i]->default_value) fprintf(out, " (default: the initializer of its name)");
    fprintf(out, "\n");
  }
  fprintf(out, "outputs:\n");
  for (size_t i = 0; i < g->n_outputs; i++) {
    char t[256];
    fprintf(out, "  %s %s", g->output_names[i], graph_type_str(g->outputs[i], t, sizeof t));
    if (strcmp(g->output_names[i], g->outputs[i]->name) != 0)
      fprintf(out, " (= %s)", g->outputs[i]->name);
    fprintf(out, "\n");
  }
  /* Operator histogram, sorted by name for a stable order. */
  const char **ops = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *ops);
  if (!ops) return graph_node_error(g, NULL, COV_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < g->n_nodes; i++) ops[i] = g->nodes[i]->op_type;
  if (g->n_nodes) qsort(ops, g->n_nodes, sizeof *ops, cmp_str);
  fprintf(out, "operators: %zu nodes", g->n_nodes);
  for (size_t i = 0; i < g->n_nodes;) {
    size_t j = i;
    while (j < g->n_nodes && strcmp(ops[j], ops[i]) == 0) j++;
    fprintf(out, "%s %s x%zu", i ? "," : ":", ops[i], j - i);
    i = j;
  }
  fprintf(out, "\n");
  free(ops);
  int64_t n_params = 0, n_tensors = 0;
  double bytes = 0;
  for (size_t i = 0; i < g->n_values; i++) {
    const graph_value *v = g->values[i];
    if (!v->data || graph_numel(v) <= 0) continue;
    n_tensors++;
    n_params += graph_numel(v);
    bytes += (double)graph_numel(v) * (double)cov_dtype_size(v->dtype);
  }
  fprintf(out, "parameters: %s elements in %" PRId64 " constant tensors (%s)\n",
          fmt_count(n_params, a, sizeof a), n_tensors, fmt_bytes(bytes, b, sizeof b));
  int64_t total = 0;
  for (size_t i = 0; i < g->n_groups && total >= 0; i++)
    for (int k = 0; k < g->groups[i].n_nodes; k++) {
      int64_t m = graph_node_macs(g->groups[i].nodes[k]);
      if (m < 0) {
        total = -1;
        break;
      }
      total += m;
    }
  fprintf(out, "layer groups: %zu, %s MACs in all\n", g->n_groups, fmt_count(total, a, sizeof a));
  for (size_t i = 0; i < g->n_groups; i++) {
    const graph_group *grp = &g->groups[i];
    int64_t macs = 0;
    for (int k = 0; k < grp->n_nodes && macs >= 0; k++) {
      int64_t m = graph_node_macs(grp->nodes[k]);
      macs = m < 0 ? -1 : macs + m;
    }
    fprintf(out, "  #%zu %s", i, grp->kind);
    if (macs != 0) fprintf(out, "  MACs %s", fmt_count(macs, a, sizeof a));
    int64_t params = group_params(grp);
    if (params) fprintf(out, "  params %s", fmt_count(params, b, sizeof b));
    fprintf(out, "\n");
    for (int k = 0; k < grp->n_nodes; k++) print_node_line(out, grp->nodes[k], "      ");
    if (grp->layout) {
      fprintf(out, "      runs in: frontend (data movement)\n");
    } else {
      fprintf(out, "      codelets:");
      for (int k = 0; k < grp->n_codelets; k++) {
        bool have = g->lib && cov_codelet_lib_find(g->lib, grp->codelets[k]);
        fprintf(out, "%s %s%s", k ? "," : "", grp->codelets[k], have ? "" : " (missing)");
      }
      fprintf(out, "\n");
    }
  }
  return ferror(out) ? graph_node_error(g, NULL, COV_IO_ERROR, "write error") : NULL;
}

static void print_attr(FILE *out, const graph_attr *a) {
  fprintf(out, "%s=", a->name);
  switch (a->type) {
    case GA_INT: fprintf(out, "%" PRId64, a->i); break;
    case GA_FLOAT: fprintf(out, "%.9g", (double)a->f); break;
    case GA_STRING: fprintf(out, "\"%s\"", a->s ? a->s : ""); break;
    case GA_INTS:
      fprintf(out, "[");
      for (size_t i = 0; i < a->n; i++) fprintf(out, "%s%" PRId64, i ? ", " : "", a->ints[i]);
      fprintf(out, "]");
      break;
    case GA_FLOATS:
      fprintf(out, "[");
      for (size_t i = 0; i < a->n; i++) fprintf(out, "%s%.9g", i ? ", " : "", (double)a->floats[i]);
      fprintf(out, "]");
      break;
    case GA_TENSOR: {
      char t[256];
      fprintf(out, "tensor %s", a->t ? graph_type_str(a->t, t, sizeof t) : "?");
      break;
    }
    default: fprintf(out, "<%d>", (int)a->type); break;
  }
}

cov_status graph_print(const graph *g, FILE *out) {
  fprintf(out, "graph %s: opset %d, %zu nodes, %zu layer groups\n",
          g->name && *g->name ? g->name : "(unnamed)", g->opset, g->n_nodes, g->n_groups);
  for (size_t i = 0; i < g->n_inputs; i++) {
    fprintf(out, "input ");
    print_value(out, g->inputs[i]);
    fprintf(out, "\n");
  }
  for (size_t i = 0; i < g->n_values; i++) {
    const graph_value *v = g->values[i];
    if (!v->data) continue;
    fprintf(out, "const ");
    print_value(out, v);
    fprintf(out, " (%s)\n", v->kind == GV_INITIALIZER ? "initializer" : "folded");
  }
  for (size_t i = 0; i < g->n_nodes; i++) {
    const graph_node *n = g->nodes[i];
    fprintf(out, "node #%zu [group %d] ", i, n->group);
    print_node_line(out, n, "");
    for (int j = 0; j < n->n_attrs; j++) {
      fprintf(out, "    ");
      print_attr(out, &n->attrs[j]);
      fprintf(out, "\n");
    }
  }
  for (size_t i = 0; i < g->n_outputs; i++) {
    fprintf(out, "output %s = %s\n", g->output_names[i], g->outputs[i]->name);
  }
  return ferror(out) ? graph_node_error(g, NULL, COV_IO_ERROR, "write error") : NULL;
}

/* cli/cmd_ops.c: `covenant ops`: every ONNX operator the frontend reads
 * (cov_onnx_op_at: domain, opsets, layout or compute, the codelets it
 * lowers to) and, per target, where it runs, as the target's backend
 * answers through the registry (backend_op_support): on the accelerator,
 * falling back to the CPU, as GPU kernels, on the reference interpreter,
 * or refused. As a table, Markdown (docs/OPS.md is this output, checked by
 * ctest cli_ops) or CSV. Deterministic. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_ops.h"
#include "backends/registry/backend_registry.h"
#include "cli/cli.h"
#include "common/search_path.h"
#include "covenant/model.h"

#define OPS_MAX_TARGETS 32
#define OPS_MAX_SELECTED 64

enum { FMT_TABLE, FMT_MD, FMT_CSV };

static void ops_help(FILE *out) {
  fprintf(out,
          "usage: covenant ops [--format table|md|csv] [-t TARGET]... [--op OP]...\n"
          "\n"
          "Lists every ONNX operator the frontend reads, with the opsets it reads it at,\n"
          "whether it is layout work (data movement the frontend runs) or compute (lowered\n"
          "to codelets, which it names), and where it runs on each target:\n"
          "  npu      on the accelerator (every codelet maps and compiles to an NPU program)\n"
          "  cpu      falls back to the CPU (an NPU target: layout work in the frontend, or\n"
          "           calls the NPU path does not take, in the reference interpreter)\n"
          "  gpu      compiles to GPU kernels (compute) or copies (layout)\n"
          "  ref      the CPU reference interpreter (target 'ref')\n"
          "  refused  a model with it is refused on that target\n"
          "  depends  its codelets follow the node's attributes (Einsum's equation)\n"
          "Each target's backend answers: an NPU maps and compiles a representative call of\n"
          "each codelet (8 per dim) on its ACG, a GPU target checks its model compiler's\n"
          "kernels. Columns: every target 'covenant targets' lists and ref, or those given.\n"
          "\n"
          "options:\n"
          "  -t, --target T      a target column (repeatable; a name or an ACG path)\n"
          "      --op OP         this operator's row only (repeatable; an ONNX op type, Conv)\n"
          "      --format F      table (default), md (Markdown, as docs/OPS.md), csv (with\n"
          "                      a reason column per target)\n"
          "  -h, --help          show this help\n");
}

typedef struct ops_target {
  const char *name;
  backend_target bt;
} ops_target;

/* The rows --op asks for (n 0: every operator). */
typedef struct ops_selection {
  const char *op[OPS_MAX_SELECTED];
  int n;
} ops_selection;

static int parse(int argc, char **argv, int *fmt, const char **names, int *n, ops_selection *sel) {
  static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"op", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
    switch (c) {
      case 't':
        if (*n == OPS_MAX_TARGETS) return cli_usage_error("ops", "at most %d targets", OPS_MAX_TARGETS);
        names[(*n)++] = optarg;
        break;
      case 'o':
        if (sel->n == OPS_MAX_SELECTED) return cli_usage_error("ops", "at most %d --op", OPS_MAX_SELECTED);
        sel->op[sel->n++] = optarg;
        break;
      case 'f':
        if (!strcmp(optarg, "table")) *fmt = FMT_TABLE;
        else if (!strcmp(optarg, "md")) *fmt = FMT_MD;
        else if (!strcmp(optarg, "csv")) *fmt = FMT_CSV;
        else return cli_usage_error("ops", "--format takes table, md or csv (got '%s')", optarg);
        break;
      case 'h': ops_help(stdout); return CLI_EXIT_OK;
      default: return cli_bad_option("ops", argv, "t:h", opts);
    }
  }
  if (optind < argc) return cli_usage_error("ops", "takes no arguments (got '%s')", argv[optind]);
  return -1;
}

/* The targets by name (as `covenant targets` lists them), then ref. */
static int default_targets(const char **names, common_data_names *found) {
  common_list_data_names("targets", ".json", "COVENANT_TARGET_PATH", found);
  int n = 0;
  for (int i = 0; i < found->n && n < OPS_MAX_TARGETS - 1; i++) names[n++] = found->name[i];
  names[n++] = BACKEND_REF;
  return n;
}

static void opsets(const cov_onnx_op *op, char *buf, size_t size) {
  if (op->since == op->until) snprintf(buf, size, "%d", op->since);
  else snprintf(buf, size, "%d-%d", op->since, op->until);
}

static void codelets(const cov_onnx_op *op, char *buf, size_t size) {
  buf[0] = '\0';
  for (int i = 0; i < op->n_codelets; i++)
    snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "+" : "", op->codelets[i]);
  if (op->layout) snprintf(buf, size, "-");
}

static void csv_cell(const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, stdout);
    return;
  }
  putchar('"');
  for (; *s; s++) {
    if (*s == '"') putchar('"');
    putchar(*s == '\n' ? ' ' : *s);
  }
  putchar('"');
}

static void header(int fmt, const ops_target *t, int nt) {
  if (fmt == FMT_CSV) {
    printf("op,domain,opsets,kind,codelets");
    for (int i = 0; i < nt; i++) printf(",%s,%s why", t[i].name, t[i].name);
    putchar('\n');
  } else if (fmt == FMT_MD) {
    printf("| op | domain | opsets | kind | codelets |");
    for (int i = 0; i < nt; i++) printf(" %s |", t[i].name);
    printf("\n|---|---|---|---|---|");
    for (int i = 0; i < nt; i++) printf("---|");
    putchar('\n');
  } else {
    printf("%-26s %-13s %-6s %-7s %-34s", "op", "domain", "opsets", "kind", "codelets");
    for (int i = 0; i < nt; i++) printf(" %-*s", (int)(strlen(t[i].name) > 7 ? strlen(t[i].name) : 7), t[i].name);
    putchar('\n');
  }
}

/* One operator's row. */
static void row(int fmt, const cov_onnx_op *op, const ops_target *t, int nt, char (*why)[512],
                backend_op_where *where) {
  char os[32], cd[256];
  opsets(op, os, sizeof os);
  codelets(op, cd, sizeof cd);
  const char *kind = op->layout ? "layout" : "compute";
  if (fmt == FMT_CSV) {
    printf("%s,%s,%s,%s,", op->op_type, op->domain, os, kind);
    csv_cell(cd);
    for (int i = 0; i < nt; i++) {
      printf(",%s,", backend_op_where_name(where[i]));
      csv_cell(why[i]);
    }
  } else if (fmt == FMT_MD) {
    printf("| %s | %s | %s | %s | %s |", op->op_type, op->domain, os, kind, cd);
    for (int i = 0; i < nt; i++) printf(" %s |", backend_op_where_name(where[i]));
  } else {
    printf("%-26s %-13s %-6s %-7s %-34s", op->op_type, op->domain, os, kind, cd);
    for (int i = 0; i < nt; i++)
      printf(" %-*s", (int)(strlen(t[i].name) > 7 ? strlen(t[i].name) : 7), backend_op_where_name(where[i]));
  }
  putchar('\n');
}

/* Asks every target about every operator first, then prints: an error
 * (out of memory) leaves no partial table. */
/* Whether sel asks for op (every operator when it names none). */
static int selected(const ops_selection *sel, const cov_onnx_op *op) {
  for (int j = 0; j < sel->n; j++)
    if (!strcmp(sel->op[j], op->op_type)) return 1;
  return sel->n == 0;
}

/* The first --op that names no operator, or NULL. */
static const char *unknown_op(const ops_selection *sel, const cov_onnx_op *ops, size_t n) {
  for (int j = 0; j < sel->n; j++) {
    size_t i = 0;
    while (i < n && strcmp(sel->op[j], ops[i].op_type)) i++;
    if (i == n) return sel->op[j];
  }
  return NULL;
}

static int print_all(int fmt, ops_target *t, int nt, const ops_selection *sel) {
  size_t n = cov_onnx_op_count();
  char(*why)[512] = calloc((size_t)nt * n, sizeof *why);
  backend_op_where *where = calloc((size_t)nt * n, sizeof *where);
  cov_onnx_op *ops = calloc(n, sizeof *ops);
  cov_status st = why && where && ops ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "covenant ops: out of memory");
  for (size_t i = 0; i < n && !st; i++) st = cov_onnx_op_at(i, &ops[i]);
  const char *unknown = st ? NULL : unknown_op(sel, ops, n);
  if (unknown) {
    free(why), free(where), free(ops);
    return cli_usage_error("ops", "--op '%s': no such operator ('covenant ops' lists them)", unknown);
  }
  for (size_t i = 0; i < n && !st; i++)
    for (int k = 0; k < nt && !st && selected(sel, &ops[i]); k++)
      st = backend_op_support(&t[k].bt, &ops[i], &where[i * nt + k], why[i * nt + k], 512);
  if (!st) {
    header(fmt, t, nt);
    for (size_t i = 0; i < n; i++)
      if (selected(sel, &ops[i])) row(fmt, &ops[i], t, nt, &why[i * nt], &where[i * nt]);
  }
  if (!st && fmt == FMT_MD) { /* why each compute operator is not on the accelerator */
    printf("\nWhy a compute operator falls back or is refused (layout operators move data in the frontend on "
           "an NPU target and become copies on a GPU target):\n\n");
    for (size_t i = 0; i < n; i++)
      for (int k = 0; k < nt && !ops[i].layout && selected(sel, &ops[i]); k++)
        if (why[i * nt + k][0]) printf("- %s on %s: %s\n", ops[i].op_type, t[k].name, why[i * nt + k]);
  }
  free(why);
  free(where);
  free(ops);
  return st ? cli_report(st) : CLI_EXIT_OK;
}

int cli_cmd_ops(int argc, char **argv) {
  int fmt = FMT_TABLE, nt = 0;
  const char *names[OPS_MAX_TARGETS];
  ops_selection sel = {.n = 0};
  int rc = parse(argc, argv, &fmt, names, &nt, &sel);
  if (rc >= 0) return rc;
  common_data_names found;
  if (nt == 0) nt = default_targets(names, &found);
  ops_target t[OPS_MAX_TARGETS];
  memset(t, 0, sizeof t);
  for (int i = 0; i < nt; i++) {
    t[i].name = names[i];
    cov_status st = backend_target_open(names[i], &t[i].bt);
    if (st) {
      for (int k = 0; k < i; k++) backend_target_close(&t[k].bt);
      return cli_report(st);
    }
  }
  rc = print_all(fmt, t, nt, &sel);
  for (int i = 0; i < nt; i++) backend_target_close(&t[i].bt);
  return rc;
}

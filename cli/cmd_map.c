/* cli/cmd_map.c: `covenant map`, the mapper from the command line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_map.h"
#include "common/loc.h"
#include "covenant/mapper.h"
#include "backends/registry/backend_registry.h"


static void help(FILE *out) {
  fprintf(out,
          "usage: covenant map LAYER --target T [options]\n"
          "       covenant map MODEL.onnx --target T [--group N | --node NAME] [options]\n"
          "       covenant map --codelet NAME --shape AxBx.. [--shape ..] [--attr k=v ..] --target T\n"
          "\n"
          "Maps a layer group onto the target described by an ACG: binds its main statement to\n"
          "a compute capability, places operands along the storage, tiles, orders and binds\n"
          "loops, and searches for the cheapest schedule under the ACG-driven cost model.\n"
          "LAYER is a name from the layer suite (covenant layers lists them). With an ONNX\n"
          "model, every compute layer group (conv+bias+relu+maxpool, gemm+bias, ...) is\n"
          "mapped as one layer and its predicted cost printed; groups the mapper cannot\n"
          "take are listed with the reason (exit 0: they run call by call; exit 1 when\n"
          "the group was asked for with --group or --node).\n"
          "\n"
          "options:\n"
          "  --target T        ACG file or shipped target name (required)\n"
          "  --suite FILE      layer suite file (default: the shipped one; covenant layers)\n"
          "  --group N         (MODEL) map only layer group N (covenant inspect lists them)\n"
          "  --node NAME       (MODEL) map only the group of the node NAME\n"
          "  --scale N         divide the layer's channel/spatial/matrix sizes by N (default 1)\n"
          "  --explain         print the schedule, its cost breakdown and the next best alternatives\n"
          "  --dump=schedule   print the scheduled IR\n"
          "  --budget N        at most N cost-model evaluations\n"
          "  --exhaustive      evaluate every candidate (the optimum under the cost model)\n"
          "  --check           run the schedule on the CPU through capacity-sized buffers and\n"
          "                    compare with the reference interpreter (random inputs, seed 1)\n"
          "  -o FILE           write the result to FILE\n");
}

static int parse_shape(const char *s, int64_t *shape, int *rank) {
  *rank = 0;
  while (*s) {
    if (*rank >= COV_MAX_RANK) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 1 || v > (1 << 24)) return -1;
    shape[(*rank)++] = v;
    s = end;
    if (*s == 'x') s++;
    else if (*s) return -1;
  }
  return *rank > 0 ? 0 : -1;
}

/* xorshift: deterministic inputs */
static float rnd(uint64_t *st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return (float)((double)(*st >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static int check(const cov_layer *layer, const cov_schedule *s, FILE *out) {
  int n = cov_layer_num_inputs(layer);
  cov_tensor in[8];
  memset(in, 0, sizeof in);
  uint64_t seed = 1;
  cov_status st = NULL;
  for (int i = 0; i < n && i < 8 && !st; i++) {
    cov_tensor shp;
    st = cov_layer_input(layer, i, &shp);
    if (!st) st = cov_tensor_alloc(&in[i], COV_F32, shp.rank, shp.shape);
    if (!st) {
      int64_t k = cov_tensor_numel(&in[i]);
      float *d = in[i].data;
      for (int64_t j = 0; j < k; j++) {
        float v = rnd(&seed);
        /* the schedule's multiplicands may be narrower (f16, bf16): give the
         * reference the same values */
        d[j] = cov_f32_round_to(cov_schedule_input_dtype(s, i), v);
      }
    }
  }
  cov_tensor ref = {0}, got = {0};
  if (!st) st = cov_layer_reference(layer, in, &ref);
  if (!st) st = cov_schedule_interpret(s, in, n, &got);
  int rc = 0;
  if (!st) {
    int64_t nr = cov_tensor_numel(&ref), ng = cov_tensor_numel(&got);
    if (nr != ng) {
      fprintf(out, "check: FAILED: %lld elements, the reference has %lld\n", (long long)ng,
              (long long)nr);
      rc = 1;
    } else {
      double maxerr = 0, maxref = 0;
      const float *a = ref.data, *b = got.data;
      for (int64_t j = 0; j < nr; j++) {
        double e = fabs((double)a[j] - (double)b[j]);
        if (!(e <= maxerr)) maxerr = e;
        if (fabs(a[j]) > maxref) maxref = fabs(a[j]);
      }
      double rel = maxerr / (maxref > 0 ? maxref : 1);
      rc = !(rel <= 1e-4);
      fprintf(out, "check: %lld elements, max abs error %.3g, relative to max |ref| %.3g: %s\n",
              (long long)nr, maxerr, rel, rc ? "FAILED" : "ok");
    }
  }
  for (int i = 0; i < n && i < 8; i++) cov_tensor_release(&in[i]);
  cov_tensor_release(&ref);
  cov_tensor_release(&got);
  if (st) return cli_report(st);
  return rc;
}

/* The command line of `covenant map`. */
typedef struct map_args {
  const char *target, *suite, *outp; /* suite NULL: the shipped one */
  const char *layer_name, *codelet, *node;
  int scale, explain, dump, do_check;
  long long group;
  cov_map_options opt;
  int64_t shapes[4][COV_MAX_RANK];
  int ranks[4], n_shapes;
  cov_attr attrs[16];
  int n_attrs;
} map_args;

static void map_args_free(map_args *m) {
  for (int i = 0; i < m->n_attrs; i++) free((char *)m->attrs[i].name);
  m->n_attrs = 0;
}

/* One option with its value (val, NULL at the end); *used: val was taken.
 * Returns -1, or the exit code of a usage error. */
static int map_option(map_args *m, const char *a, const char *val, int *used) {
  static const char *const names[] = {"target", "suite", "codelet", "node", "group", "scale",
                                      "budget", "shape", "attr", "explain", "exhaustive",
                                      "check", "dump=schedule", "help", NULL};
  static const char *const with_value[] = {"--target", "-t", "--suite", "-o", "--codelet", "--node", "--group",
                                           "--scale", "--budget", "--shape", "--attr", NULL};
  *used = 0;
  for (int k = 0; with_value[k]; k++)
    if (!strcmp(a, with_value[k])) {
      if (!val) return cli_usage_error("map", "option '%s' needs an argument", a);
      *used = 1;
    }
  if (!strcmp(a, "--target") || !strcmp(a, "-t")) m->target = val;
  else if (!strcmp(a, "--suite")) m->suite = val;
  else if (!strcmp(a, "-o")) m->outp = val;
  else if (!strcmp(a, "--codelet")) m->codelet = val;
  else if (!strcmp(a, "--node")) m->node = val;
  else if (!strcmp(a, "--group")) {
    char *end;
    errno = 0;
    m->group = strtoll(val, &end, 10);
    if (!*val || *end || errno || m->group < 0 || m->group > (1 << 30))
      return cli_usage_error("map", "--group needs a group number >= 0, got '%s'", val);
  } else if (!strcmp(a, "--scale") || !strcmp(a, "--budget")) {
    char *end;
    errno = 0;
    long long v = strtoll(val, &end, 10);
    if (*end || errno || v < 1 || v > (1ll << 40))
      return cli_usage_error("map", "%s needs a positive integer, got '%s'", a, val);
    if (!strcmp(a, "--scale")) {
      if (v > 4096) return cli_usage_error("map", "--scale %lld is too large", v);
      m->scale = (int)v;
    } else {
      m->opt.budget = v;
    }
  } else if (!strcmp(a, "--shape")) {
    if (m->n_shapes >= 4 || parse_shape(val, m->shapes[m->n_shapes], &m->ranks[m->n_shapes]))
      return cli_usage_error("map", "--shape wants up to 4 shapes like 64x32, got '%s'", val);
    m->n_shapes++;
  } else if (!strcmp(a, "--attr")) {
    const char *eq = strchr(val, '=');
    if (!eq || eq == val || m->n_attrs >= 16)
      return cli_usage_error("map", "--attr wants name=integer, got '%s'", val);
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (*end || errno || end == eq + 1) return cli_usage_error("map", "--attr wants name=integer, got '%s'", val);
    cov_attr *at = &m->attrs[m->n_attrs++];
    at->name = strndup(val, (size_t)(eq - val));
    at->is_float = 0;
    at->i = v;
  } else if (!strcmp(a, "--explain")) m->explain = 1;
  else if (!strcmp(a, "--exhaustive")) m->opt.exhaustive = 1;
  else if (!strcmp(a, "--check")) m->do_check = 1;
  else if (!strcmp(a, "--dump=schedule")) m->dump = 1;
  else if (!strncmp(a, "--dump", 6)) return cli_usage_error("map", "unknown dump '%s' (expected --dump=schedule)", a);
  else if (a[0] == '-') return cli_unknown_option("map", a, names);
  else if (!m->layer_name) m->layer_name = a;
  else return cli_usage_error("map", "unexpected argument '%s'", a);
  return -1;
}

/* Parses and checks the command line; -1 or the exit code of a usage error. */
static int map_parse(int argc, char **argv, map_args *m) {
  for (int i = 1; i < argc; i++) {
    int used, rc = map_option(m, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used);
    if (rc >= 0) return rc;
    i += used;
  }
  const char *ln = m->layer_name;
  bool model = ln && strlen(ln) > 5 && !strcmp(ln + strlen(ln) - 5, ".onnx");
  if (!m->target) return cli_usage_error("map", "--target is required");
  if (!m->layer_name == !m->codelet)
    return cli_usage_error("map", "give either a LAYER name or --codelet NAME with --shape");
  if ((m->group >= 0 || m->node) && !model)
    return cli_usage_error("map", "--group and --node select a group of an ONNX model (MODEL.onnx)");
  if (m->group >= 0 && m->node) return cli_usage_error("map", "give --group or --node, not both");
  if (model && (m->do_check || m->scale != 1))
    return cli_usage_error("map", "--check and --scale take a suite layer or --codelet, not a model");
  return -1;
}

/* The backend's own planner on a layer (a GPU target's search). */
static int map_with_backend(const backend_target *t, const cov_layer *layer, int explain, const char *outp) {
  common_out out_file;
  FILE *out = cli_open_output(outp, &out_file);
  if (!out) return CLI_EXIT_INPUT;
  int rc = cli_report(t->backend->map_layer(t, layer, explain, out));
  if (cli_close_output(&out_file) && !rc) rc = CLI_EXIT_INPUT;
  return rc;
}

/* A suite layer or a codelet call mapped, reported (and checked). */
static int map_layer(map_args *m) {
  int rc = CLI_EXIT_OK;
  backend_target bt = {0};
  cov_layer *layer = NULL;
  cov_schedule *s = NULL;
  cov_status st = backend_target_open(m->target, &bt);
  const cov_acg *acg = bt.acg;
  if (!st && !acg) st = cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("covenant map"),
                                  "'%s' has no ACG to map onto (covenant targets lists them)", m->target);
  if (!st) {
    if (m->layer_name) st = cov_layer_from_suite(m->suite, m->layer_name, m->scale, &layer);
    else {
      const int64_t(*sh)[COV_MAX_RANK] = (const int64_t(*)[COV_MAX_RANK])m->shapes;
      st = cov_layer_from_codelet(m->codelet, m->attrs, (size_t)m->n_attrs, sh, m->ranks, (size_t)m->n_shapes,
                                  &layer);
    }
  }
  map_args_free(m);
  /* A backend with its own planner (GPU targets: the GPU search) plans
   * the layer; --dump and --check keep the generic schedule, which the CPU
   * interpreter runs. */
  if (!st && bt.backend->map_layer && !m->dump && !m->do_check) {
    rc = map_with_backend(&bt, layer, m->explain, m->outp);
    cov_layer_free(layer);
    backend_target_close(&bt);
    return rc;
  }
  if (!st) st = cov_map(layer, acg, &m->opt, &s);
  if (st) {
    rc = cli_report(st);
  } else {
    common_out out_file;
    FILE *out = cli_open_output(m->outp, &out_file);
    if (!out) {
      rc = CLI_EXIT_INPUT;
    } else {
      if (m->explain) st = cov_schedule_explain(s, out);
      else if (m->dump) st = cov_schedule_dump(s, out);
      else
        fprintf(out, "%s on %s: %.0f cycles (%lld evaluations)\n", cov_layer_name(layer),
                cov_acg_name(acg), cov_schedule_cycles(s), (long long)cov_schedule_evaluations(s));
      if (st) rc = cli_report(st);
      if (!rc && m->do_check) rc = check(layer, s, out);
      if (cli_close_output(&out_file) && !rc) rc = CLI_EXIT_INPUT;
    }
  }
  cov_schedule_free(s);
  cov_layer_free(layer);
  backend_target_close(&bt);
  return rc;
}

int cli_cmd_map(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    help(stdout);
    return CLI_EXIT_OK;
  }
  map_args m = {.scale = 1, .group = -1};
  int rc = map_parse(argc, argv, &m);
  if (rc >= 0) {
    map_args_free(&m);
    return rc;
  }
  const char *ln = m.layer_name;
  if (ln && strlen(ln) > 5 && !strcmp(ln + strlen(ln) - 5, ".onnx")) {
    map_args_free(&m);
    cli_map_model_opts mo = {m.group, m.node, m.explain, m.dump, m.opt};
    return cli_map_model(m.layer_name, m.target, &mo, m.outp);
  }
  return map_layer(&m);
}

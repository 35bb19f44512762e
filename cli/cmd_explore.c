/* cli/cmd_explore.c: `covenant explore` (run or resume a study), `explore
 * merge` (combine shards) and `explore plot` (render a study's plots). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "covenant/explore.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: covenant explore --base ACG --vary PATH=V1,V2,... [--vary ...]\n"
          "                        (--suite [NAME,...] | --model FILE.onnx)... -o DIR [options]\n"
          "       covenant explore merge SHARD_DIR... -o DIR\n"
          "       covenant explore plot DIR\n"
          "\n"
          "Derives one design per combination of --vary values from the base ACG, validates\n"
          "it, evaluates every layer on it and writes DIR/results.csv (design x layer),\n"
          "DIR/summary.csv (per design, Pareto flags), DIR/designs/<id>.json. Running the\n"
          "same command again resumes: finished designs are kept, the rest are run.\n"
          "\n"
          "PATH is <node>.<field> (pe_array.dims, ibuf.capacity, dram.bandwidth_bytes_per_cycle),\n"
          "<from>-><to>.<field> (dram->ibuf.bandwidth_bytes_per_cycle), acg.clock_mhz, or a JSON\n"
          "pointer (/storage/1/capacity). Values: numbers, NxM dims, sizes (64KiB), true/false.\n"
          "Derived rules (dims rescale mac tiles/throughput and area, capacity rescales area, ...)\n"
          "are listed in explore/README.md and in each design's 'derived' column.\n"
          "\n"
          "options:\n"
          "  --base ACG          base target (path or shipped name, e.g. npu-16x16)\n"
          "  --vary SPEC         a swept parameter (repeatable; the first changes slowest)\n"
          "  --suite [NAMES]     the benchmark suite layers (all, or a comma-separated list)\n"
          "  --suite-file FILE   suite file (default: the shipped one; covenant layers)\n"
          "  --model FILE        an ONNX model's compute layer groups (repeatable)\n"
          "  --eval NAME         evaluator: roofline (default: the best this build has)\n"
          "  --dtype T[:ACC]     datapath precision the layers run at (default f16:f32)\n"
          "  -j N                worker processes (default: the machine's cores)\n"
          "  --shard I/N         run only designs with index %% N == I (merge shards afterwards)\n"
          "  --plot              render plots into DIR/plots when done\n"
          "  -q, --quiet         no progress on stderr\n"
          "  -o DIR              output folder (required)\n");
}

static int parse_int(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < 0 || v > 1000000) return -1;
  *out = (int)v;
  return 0;
}

/* --dtype T[:ACC] into dtype and acc (16 bytes each), set in *o; -1 when
 * malformed. */
static int parse_dtype(const char *val, char *dtype, char *acc, cov_explore_options *o) {
  const char *colon = strchr(val, ':');
  if (strlen(val) >= 16 || (colon && strlen(colon + 1) >= 16)) return -1;
  snprintf(dtype, 16, "%.*s", colon ? (int)(colon - val) : (int)strlen(val), val);
  if (colon) snprintf(acc, 16, "%s", colon + 1);
  o->dtype = dtype;
  o->acc_dtype = colon ? acc : NULL;
  return 0;
}

/* --shard I/N into *o; -1 unless 0 <= I < N. */
static int parse_shard(const char *val, cov_explore_options *o) {
  char i_s[16], n_s[16];
  const char *slash = strchr(val, '/');
  if (!slash || slash - val >= (long)sizeof i_s || strlen(slash + 1) >= sizeof n_s) return -1;
  snprintf(i_s, sizeof i_s, "%.*s", (int)(slash - val), val);
  snprintf(n_s, sizeof n_s, "%s", slash + 1);
  if (parse_int(i_s, &o->shard) || parse_int(n_s, &o->n_shards)) return -1;
  return o->n_shards < 1 || o->shard >= o->n_shards ? -1 : 0;
}

/* What a study's options lack, or NULL. */
static const char *missing(const cov_explore_options *o) {
  if (!o->base) return "--base ACG is required";
  if (!o->out_dir) return "-o DIR is required";
  if (!o->use_suite && o->n_models == 0) return "no layers: give --suite and/or --model";
  return NULL;
}

/* Renders a study's events on stderr: warnings always; notes and progress
 * unless quiet (user points at the quiet flag), progress as one live line
 * on a TTY. */
static void render_event(void *user, const cov_explore_event *ev) {
  int quiet = user && *(const int *)user;
  if (ev->kind == COV_EXPLORE_WARNING) {
    if (ev->status) cov_status_print(stderr, ev->status, 0);
    else fprintf(stderr, "explore: %s\n", ev->text);
  } else if (quiet) {
    return;
  } else if (ev->kind == COV_EXPLORE_NOTE) {
    fprintf(stderr, "explore: %s\n", ev->text);
  } else {
    char eta[32] = "?";
    if (!isnan(ev->left_s)) snprintf(eta, sizeof eta, "%.0fs", ev->left_s);
    if (isatty(STDERR_FILENO))
      fprintf(stderr, "\rexplore: %d/%d designs, %.0fs elapsed, ~%s left   %s", ev->done, ev->total,
              ev->elapsed_s, eta, ev->final ? "\n" : "");
    else if (!ev->final)
      fprintf(stderr, "explore: %d/%d designs done (%.1fs elapsed, ~%s left)\n", ev->done, ev->total,
              ev->elapsed_s, eta);
  }
  fflush(stderr);
}

static int cmd_merge(int argc, char **argv) {
  const char *out = NULL;
  const char **dirs = calloc((size_t)argc, sizeof *dirs);
  int n = 0;
  if (!dirs) return CLI_EXIT_INPUT;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
    else if (argv[i][0] == '-') {
      free(dirs);
      return cli_usage_error("explore merge", "unknown option '%s'", argv[i]);
    } else dirs[n++] = argv[i];
  }
  if (!out || n == 0) {
    free(dirs);
    return cli_usage_error("explore merge", "expected SHARD_DIR... -o DIR");
  }
  int rc = cli_report(cov_explore_merge(dirs, n, out, render_event, NULL));
  free(dirs);
  if (rc == CLI_EXIT_OK) printf("%s/results.csv\n%s/summary.csv\n", out, out);
  return rc;
}

static int cmd_plot(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') return cli_usage_error("explore plot", "expected one study folder");
  return cli_report(cov_explore_plot(argv[1], NULL));
}

int cli_cmd_explore(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  if (argc >= 2 && strcmp(argv[1], "merge") == 0) return cmd_merge(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "plot") == 0) return cmd_plot(argc - 1, argv + 1);

  int quiet = 0;
  cov_explore_options o = {.on_event = render_event, .event_user = &quiet};
  const char **vary = calloc((size_t)argc, sizeof *vary);
  const char **models = calloc((size_t)argc, sizeof *models);
  int plot = 0, rc = CLI_EXIT_OK;
  char dtype[16] = "", acc[16] = "";
  if (!vary || !models) {
    fprintf(stderr, "covenant explore: out of memory\n");
    rc = CLI_EXIT_INPUT;
    goto done;
  }
  o.vary = vary;
  o.models = models;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                           \
  do {                                                                         \
    if (!val) {                                                                \
      rc = cli_usage_error("explore", "option '%s' needs an argument", a);      \
      goto done;                                                               \
    }                                                                          \
    i++;                                                                       \
  } while (0)
    if (strcmp(a, "--base") == 0) {
      NEED_VALUE();
      o.base = val;
    } else if (strcmp(a, "--vary") == 0) {
      NEED_VALUE();
      vary[o.n_vary++] = val;
    } else if (strcmp(a, "--model") == 0) {
      NEED_VALUE();
      models[o.n_models++] = val;
    } else if (strcmp(a, "--suite-file") == 0) {
      NEED_VALUE();
      o.suite = val;
      o.use_suite = 1;
    } else if (strcmp(a, "--eval") == 0) {
      NEED_VALUE();
      o.evaluator = val;
    } else if (strcmp(a, "-o") == 0) {
      NEED_VALUE();
      o.out_dir = val;
    } else if (strcmp(a, "--suite") == 0) {
      o.use_suite = 1;
      if (val && val[0] != '-') o.suite_names = val, i++;
    } else if (strcmp(a, "--dtype") == 0) {
      NEED_VALUE();
      if (parse_dtype(val, dtype, acc, &o)) {
        rc = cli_usage_error("explore", "--dtype '%s': expected T or T:ACC (f16:f32)", val);
        goto done;
      }
    } else if (strncmp(a, "-j", 2) == 0) {
      if (a[2]) val = a + 2; /* -j4 as well as -j 4 */
      else NEED_VALUE();
      if (parse_int(val, &o.jobs) || o.jobs < 1) {
        rc = cli_usage_error("explore", "-j '%s': expected a positive integer", val);
        goto done;
      }
    } else if (strcmp(a, "--shard") == 0) {
      NEED_VALUE();
      if (parse_shard(val, &o)) {
        rc = cli_usage_error("explore", "--shard '%s': expected I/N with 0 <= I < N", val);
        goto done;
      }
    } else if (strcmp(a, "--plot") == 0) plot = 1;
    else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) quiet = 1;
    else {
      static const char *const names[] = {"base", "vary", "model", "suite", "suite-file", "eval",
                                          "dtype", "shard", "plot", "quiet", "help", NULL};
      rc = cli_unknown_option("explore", a, names);
      goto done;
    }
#undef NEED_VALUE
  }
  const char *lacking = missing(&o);
  if (lacking) {
    rc = cli_usage_error("explore", "%s", lacking);
    goto done;
  }
  rc = cli_report(cov_explore_run(&o));
  if (rc == CLI_EXIT_OK && plot) rc = cli_report(cov_explore_plot(o.out_dir, NULL));
  if (rc == CLI_EXIT_OK) printf("%s/results.csv\n%s/summary.csv\n", o.out_dir, o.out_dir);
done:
  free(vary);
  free(models);
  return rc;
}

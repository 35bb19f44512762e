/* cli/cmd_acg.c: `covenant acg check|show|dot|fmt`. */
#include <getopt.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"
#include "covenant/acg.h"

static void acg_help(FILE *out) {
  fprintf(out,
          "usage: covenant acg check TARGET...\n"
          "       covenant acg show TARGET [-o FILE]\n"
          "       covenant acg dot TARGET [-o FILE]\n"
          "       covenant acg fmt TARGET [-o FILE]\n"
          "\n"
          "TARGET is an ACG file or the name of a shipped target (npu-16x16, ...).\n"
          "\n"
          "  check   validate; exit 0 when every file is valid, 1 with located errors\n"
          "  show    storage levels, capacities, peak MACs/cycle per dtype, bandwidths and\n"
          "          the roofline ridge point\n"
          "  dot     Graphviz DOT of units and data paths (pipe into 'dot -Tsvg')\n"
          "  fmt     canonical JSON with every default written out\n"
          "\n"
          "options:\n"
          "  -o, --output FILE   write to FILE instead of stdout\n"
          "  -h, --help          show this help\n");
}

typedef cov_status (*acg_printer)(const cov_acg *, FILE *);

static int run_printer(const char *sub, int argc, char **argv, acg_printer print) {
  static const struct option opts[] = {
      {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
  const char *output = NULL;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
      case 'o': output = optarg; break;
      case 'h': acg_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_bad_option("acg", argv, "o:h", opts);
    }
  }
  if (argc - optind != 1)
    return cli_usage_error("acg", "%s takes exactly one TARGET (got %d)", sub, argc - optind);
  cov_acg *g = NULL;
  cov_status st = backend_acg_load(argv[optind], &g);
  if (st) return cli_report(st);
  common_out out_file;
  FILE *out = cli_open_output(output, &out_file);
  if (!out) {
    cov_acg_free(g);
    return CLI_EXIT_INPUT;
  }
  st = print(g, out);
  cov_acg_free(g);
  int rc = cli_close_output(&out_file);
  return st ? cli_report(st) : rc;
}

static int run_check(int argc, char **argv) {
  if (argc < 2) return cli_usage_error("acg", "check needs at least one TARGET");
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      acg_help(stdout);
      return CLI_EXIT_OK;
    }
  }
  for (int i = 1; i < argc; i++) {
    cov_acg *g = NULL;
    cov_status st = backend_acg_load(argv[i], &g);
    if (st) {
      cli_report(st);
      bad = 1;
      continue;
    }
    printf("%s: ok (%s)\n", argv[i], cov_acg_name(g));
    cov_acg_free(g);
  }
  return bad ? CLI_EXIT_INPUT : CLI_EXIT_OK;
}

int cli_cmd_acg(int argc, char **argv) {
  if (argc < 2) {
    acg_help(stderr);
    return CLI_EXIT_USAGE;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
    acg_help(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(sub, "check") == 0) return run_check(argc - 1, argv + 1);
  if (strcmp(sub, "show") == 0) return run_printer(sub, argc - 1, argv + 1, cov_acg_print_summary);
  if (strcmp(sub, "dot") == 0) return run_printer(sub, argc - 1, argv + 1, cov_acg_print_dot);
  if (strcmp(sub, "fmt") == 0) return run_printer(sub, argc - 1, argv + 1, cov_acg_write_json);
  return cli_usage_error("acg", "unknown subcommand '%s' (expected check, show, dot or fmt)", sub);
}

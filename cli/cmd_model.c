/* cli/cmd_model.c: `covenant inspect MODEL.onnx`: what the frontend made of
 * a model (its interface, operators, parameters, layer groups with their
 * codelets and MACs). `covenant run` is in cmd_run.c. */
#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "covenant/model.h"

/* ---- inspect ---------------------------------------------------------- */

static void inspect_help(FILE *out) {
  fprintf(out,
          "usage: covenant inspect MODEL.onnx [--graph] [--no-fold] [--no-fuse] [-o FILE]\n"
          "       covenant inspect --ops\n"
          "\n"
          "Reads an ONNX model and prints what covenant made of it: inputs and outputs,\n"
          "the operators left after constant folding, Identity/Dropout elimination and\n"
          "BatchNorm folding, the parameters, and the layer groups (conv+bias+relu+maxpool,\n"
          "gemm+bias+activation, ...) with their shapes, codelets and multiply-accumulates.\n"
          "\n"
          "options:\n"
          "      --graph        also print every node with its attributes\n"
          "      --no-fold      keep constant subgraphs as operations\n"
          "      --no-fuse      one layer group per operation\n"
          "      --max-memory SIZE  largest tensor the model may make (default 2GiB)\n"
          "      --ops          list the supported ONNX operators and exit\n"
          "  -o, --output FILE  write to FILE instead of stdout\n"
          "  -h, --help         show this help\n");
}

int cli_cmd_inspect(int argc, char **argv) {
  static const struct option opts[] = {{"graph", no_argument, NULL, 'g'},
                                       {"no-fold", no_argument, NULL, 'F'},
                                       {"no-fuse", no_argument, NULL, 'U'},
                                       {"ops", no_argument, NULL, 'O'},
                                       {"max-memory", required_argument, NULL, 'M'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  const char *output = NULL;
  int graph = 0, list_ops = 0;
  cov_model_options mo = {0};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
      case 'g': graph = 1; break;
      case 'F': mo.no_fold = 1; break;
      case 'U': mo.no_fuse = 1; break;
      case 'O': list_ops = 1; break;
      case 'M':
        if (cli_parse_memory("inspect", optarg, &mo.max_memory)) return CLI_EXIT_USAGE;
        break;
      case 'o': output = optarg; break;
      case 'h': inspect_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_bad_option("inspect", argv, "o:h", opts);
    }
  }
  if (list_ops) {
    if (argc - optind != 0) return cli_usage_error("inspect", "--ops takes no MODEL");
    cov_model_print_supported_ops(stdout);
    return CLI_EXIT_OK;
  }
  if (argc - optind != 1)
    return cli_usage_error("inspect", "takes exactly one MODEL (got %d)", argc - optind);
  cov_model *m = NULL;
  cov_status st = cov_model_load_file(argv[optind], &mo, &m);
  if (st) return cli_report(st);
  common_out out_file;
  FILE *out = cli_open_output(output, &out_file);
  if (!out) {
    cov_model_free(m);
    return CLI_EXIT_INPUT;
  }
  st = cov_model_print_summary(m, out);
  if (!st && graph) {
    fprintf(out, "\n");
    st = cov_model_print_graph(m, out);
  }
  cov_model_free(m);
  int rc = cli_close_output(&out_file);
  return st ? cli_report(st) : rc;
}

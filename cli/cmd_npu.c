/* cli/cmd_npu.c: `covenant disasm PROGRAM` and `covenant sim PROGRAM`, the
 * tools of program files, through the backend interface: the registry
 * opens the file with the row that reads it (--target's backend's, or the
 * one whose program it is), and the row's program_* entries find its ACG
 * (--target, or the name the program records), print it and run it.
 */
#include <errno.h>
#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"

static void disasm_help(FILE *out) {
  fprintf(out,
          "usage: covenant disasm PROGRAM [--target T] [-o FILE]\n"
          "\n"
          "Prints an NPU program (backends/npu-sim/ISA.md): the ACG it was compiled for,\n"
          "its DRAM tensors and one line per instruction, loop bodies indented. Buffers\n"
          "and units are named from the ACG (the program's own, found by name, or T);\n"
          "with --raw, by number and without loading any ACG.\n"
          "\n"
          "options:\n"
          "  -t, --target T      name units and buffers from this ACG\n"
          "      --raw           do not load an ACG\n"
          "  -o, --output FILE   write to FILE instead of stdout\n"
          "  -h, --help          show this help\n");
}

int cli_cmd_disasm(int argc, char **argv) {
  static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                       {"raw", no_argument, NULL, 'r'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  const char *output = NULL, *target = NULL;
  int raw = 0;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': target = optarg; break;
      case 'r': raw = 1; break;
      case 'o': output = optarg; break;
      case 'h': disasm_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_bad_option("disasm", argv, "t:o:h", opts);
    }
  }
  if (argc - optind != 1)
    return cli_usage_error("disasm", "takes exactly one PROGRAM (got %d)", argc - optind);
  const backend_info *b = NULL;
  backend_program *p = NULL;
  /* --raw loads no ACG, so --target does not pick the row either */
  cov_status st = backend_program_open(argv[optind], raw ? NULL : target, "covenant disasm", &b, &p);
  if (st) return cli_report(st);
  if (!raw) {
    st = b->program_acg(p, target);
    if (st) {
      b->program_close(p);
      cli_report(st);
      fprintf(stderr, "hint: pass --target ACG, or --raw to disassemble without an ACG\n");
      return CLI_EXIT_INPUT;
    }
  }
  common_out out_file;
  FILE *out = cli_open_output(output, &out_file);
  int rc = CLI_EXIT_INPUT;
  if (out) {
    st = b->program_disasm(p, out);
    rc = cli_close_output(&out_file);
    if (st) rc = cli_report(st);
  }
  b->program_close(p);
  return rc;
}

static void sim_help(FILE *out) {
  fprintf(out,
          "usage: covenant sim PROGRAM [--target T] [--seed N] [--trace FILE] [--max-insns N]\n"
          "                    [--max-work N] [-o FILE]\n"
          "\n"
          "Verifies an NPU program against its ACG and runs it in the cycle simulator.\n"
          "Inputs, and weights the program does not carry, get deterministic pseudo-\n"
          "random values in [-1, 1) (seed printed). Prints cycles, per-unit utilisation and\n"
          "stalls, bytes per storage level, and each output's shape, sum and first values.\n"
          "\n"
          "options:\n"
          "  -t, --target T      simulate on this ACG (default: the program's own)\n"
          "      --seed N        seed for the random inputs (default 1)\n"
          "      --trace FILE    write a Chrome/Perfetto trace (1 us = 1 cycle)\n"
          "      --max-insns N   refuse a program whose loop nest runs more than N\n"
          "                      instructions (default 2^24 = 16777216), before it runs\n"
          "      --max-work N    likewise for its element work: gemm multiply-adds, DMA and\n"
          "                      vector elements (default 2^34 = 17179869184)\n"
          "  -o, --output FILE   write the report to FILE instead of stdout\n"
          "  -h, --help          show this help\n");
}

int cli_cmd_sim(int argc, char **argv) {
  static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                       {"seed", required_argument, NULL, 's'},
                                       {"trace", required_argument, NULL, 'T'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"max-insns", required_argument, NULL, 'M'},
                                       {"max-work", required_argument, NULL, 'W'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  const char *output = NULL, *target = NULL, *trace = NULL;
  unsigned long long seed = 1, max_insns = 0, max_work = 0;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': target = optarg; break;
      case 's':
        if (cli_parse_seed("sim", optarg, &seed)) return CLI_EXIT_USAGE;
        break;
      case 'T': trace = optarg; break;
      case 'o': output = optarg; break;
      case 'M':
      case 'W': {
        char *end = NULL;
        unsigned long long *v = c == 'M' ? &max_insns : &max_work;
        errno = 0;
        *v = strtoull(optarg, &end, 10);
        if (!isdigit((unsigned char)optarg[0]) || *end || errno || *v == 0)
          return cli_usage_error("sim", "%s takes an integer >= 1, not '%s'", c == 'M' ? "--max-insns" : "--max-work",
                                 optarg);
        break;
      }
      case 'h': sim_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_bad_option("sim", argv, "t:o:h", opts);
    }
  }
  if (argc - optind != 1)
    return cli_usage_error("sim", "takes exactly one PROGRAM (got %d)", argc - optind);
  const char *path = argv[optind];
  const backend_info *b = NULL;
  backend_program *p = NULL;
  int rc = CLI_EXIT_INPUT;
  cov_status st = backend_program_open(path, target, "covenant sim", &b, &p);
  if (st) goto done; /* located at path already */
  st = b->program_acg(p, target);
  if (st) {
    st = cov_status_annotate(st, "%s: ", path);
    goto done;
  }
  backend_sim_options so = {.seed = seed, .max_insns = max_insns, .max_work = max_work, .trace = trace};
  if ((st = b->program_sim(p, &so))) goto done;
  common_out out_file;
  FILE *out = cli_open_output(output, &out_file);
  if (!out) goto done;
  st = b->program_sim_report(p, out);
  rc = cli_close_output(&out_file);
done:
  if (st) rc = cli_report(st);
  if (p) b->program_close(p);
  return rc;
}

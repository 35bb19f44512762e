/* cli/cmd_npu.c: `covenant disasm PROGRAM` and `covenant sim PROGRAM`, the
 * npu-sim program tools. A program records the name of the ACG it was
 * compiled for, so the target is found by that name unless --target names
 * another (which the simulator then refuses if its digest differs).
 */
#include <errno.h>
#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/loc.h"
#include "common/text.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include <sys/stat.h>

/* A compile manifest (DIR/manifest.json) or a compiled-model artifact passed
 * where a program is wanted: what to pass instead. NULL when path is
 * neither. */
static cov_status manifest_instead(const char *path) {
  /* regular files only: a FIFO or a device would block the read (the
   * loader's own error already says what the path is) */
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cov_loc loc = {path, 0, 0, NULL};
  if (n >= 7 && memcmp(buf, "\x7f" "COVART", 7) == 0)
    return cov_error(COV_INVALID_ARGUMENT, &loc,
                     "this is a compiled-model artifact, not an NPU program; run it with "
                     "'covenant-run %s' ('--info' lists its programs)", path);
  const char *p = buf;
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  if (*p != '{') return NULL;
  /* The programs it names: "program": "NAME" (a layer's program.npu or a
   * model's group_<i>.npu), beside the manifest. */
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
  char list[1024] = "";
  size_t k = 0;
  int count = 0;
  for (const char *q = strstr(buf, "\"program\": \""); q; q = strstr(q + 1, "\"program\": \"")) {
    const char *name = q + strlen("\"program\": \"");
    size_t len = strcspn(name, "\"");
    /* "DIR/NAME, " appended by hand, cut at the buffer's end. */
    const char *parts[3] = {count ? ", " : "", path, name};
    size_t lens[3] = {count ? 2 : 0, dir_len, len};
    for (int j = 0; j < 3 && count < 4; j++)
      for (size_t c = 0; c < lens[j] && k + 1 < sizeof list; c++) list[k++] = parts[j][c];
    list[k] = '\0';
    count++;
  }
  if (!count)
    return cov_error(COV_INVALID_ARGUMENT, &loc, "this is a JSON file, not an NPU program (.npu)");
  return cov_error(COV_INVALID_ARGUMENT, &loc,
                   "this is a compile manifest, not an NPU program; pass the program%s it names: "
                   "%s%s%s",
                   count > 1 ? "s" : "", list, count > 4 ? ", ..." : "",
                   count > 1 ? " (one at a time; 'covenant run MODEL.onnx' runs a whole model)" : "");
}

/* cov_npu_program_load, with a hint when path is a manifest. */
static cov_status load_program(const char *path, cov_npu_program **p) {
  *p = NULL;
  cov_status st = cov_npu_program_load(path, p);
  if (!st) return NULL;
  cov_status hint = manifest_instead(path);
  if (!hint) return st;
  cov_status_free(st);
  return hint;
}

/* The ACG a program runs on: --target when given (a path or a shipped
 * name), else the name in the program's header, which is only ever looked
 * up as a shipped target: a header is input, and must not make covenant
 * open a path it names (a device, a FIFO, a file of someone else's). */
static cov_status load_program_acg(const cov_npu_program *p, const char *target, cov_acg **g) {
  if (target) return cov_acg_load_target(target, g);
  cov_status st = cov_acg_load_named(cov_npu_program_acg_name(p), g);
  if (!st || cov_status_code(st) != COV_NOT_FOUND) return st ? cov_status_annotate(st, "the program's ACG: ") : NULL;
  /* A program compiled for an ACG file given by path (--target dir/my.json):
   * its header holds the ACG's name only, and a path is never read from
   * it, so say which option brings the file. */
  char shown[160];
  common_escape(cov_npu_program_acg_name(p), shown, sizeof shown);
  cov_status hint = cov_error(COV_NOT_FOUND, COV_AT(NULL, "--target"),
                              "the program's ACG: %s; if it was compiled for an ACG file given by path, "
                              "pass that file: --target PATH/TO/FILE.json (the file whose \"name\" is '%s')",
                              cov_status_message(st), shown);
  cov_status_free(st);
  return hint;
}

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
  cov_npu_program *p = NULL;
  cov_status st = load_program(argv[optind], &p);
  if (st) return cli_report(st);
  cov_acg *g = NULL;
  if (!raw) {
    st = load_program_acg(p, target, &g);
    if (st) {
      cov_npu_program_free(p);
      cli_report(st);
      fprintf(stderr, "hint: pass --target ACG, or --raw to disassemble without an ACG\n");
      return CLI_EXIT_INPUT;
    }
  }
  common_out out_file;
  FILE *out = cli_open_output(output, &out_file);
  int rc = CLI_EXIT_INPUT;
  if (out) {
    st = cov_npu_program_disasm(p, g, out);
    rc = cli_close_output(&out_file);
    if (st) rc = cli_report(st);
  }
  cov_acg_free(g);
  cov_npu_program_free(p);
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

/* The program's float inputs, and weights it does not carry, filled with
 * pseudo-random values in [-1, 1) from seed. */
static cov_status fill_inputs(const cov_npu_program *p, cov_npu_sim *sim, unsigned long long seed) {
  cov_status st = NULL;
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int i = 0; i < cov_npu_program_tensor_count(p) && !st; i++) {
    const char *name, *role;
    cov_dtype dt;
    int64_t shape[COV_MAX_RANK];
    int rank = cov_npu_program_tensor(p, i, &name, &role, &dt, shape);
    bool fill = strcmp(role, "input") == 0 ||
                (strcmp(role, "weight") == 0 && !cov_npu_program_tensor_has_data(p, i));
    if (!fill || !cov_dtype_is_float(dt)) continue;
    cov_tensor t = {0};
    st = cov_tensor_alloc(&t, COV_F32, rank, shape);
    for (int64_t k = 0; !st && k < cov_tensor_numel(&t); k++) ((float *)t.data)[k] = cli_rand_pm1(&s);
    if (!st) st = cov_npu_sim_write(sim, name, &t);
    cov_tensor_release(&t);
  }
  return st;
}

/* Each output's shape, first values and sum. */
static cov_status print_outputs(FILE *out, const cov_npu_program *p, cov_npu_sim *sim) {
  cov_status st = NULL;
  for (int i = 0; i < cov_npu_program_tensor_count(p) && !st; i++) {
    const char *name, *role;
    cov_dtype dt;
    int64_t shape[COV_MAX_RANK];
    int rank = cov_npu_program_tensor(p, i, &name, &role, &dt, shape);
    if (strcmp(role, "output") != 0) continue;
    cov_tensor t = {0};
    if ((st = cov_npu_sim_read(sim, name, &t))) break;
    double sum = 0;
    int64_t n = cov_tensor_numel(&t);
    fprintf(out, "output %s %s[", name, cov_dtype_name(dt));
    for (int d = 0; d < rank; d++) fprintf(out, "%s%lld", d ? "," : "", (long long)shape[d]);
    fprintf(out, "]:");
    for (int64_t k = 0; k < n; k++) {
      double v = dt == COV_F32   ? ((float *)t.data)[k]
                 : dt == COV_F16 ? cov_f16_to_f32(((uint16_t *)t.data)[k])
                                 : 0;
      sum += v;
      if (k < 8) fprintf(out, " %.6g", v);
    }
    fprintf(out, "%s  (sum %.6g)\n", n > 8 ? " ..." : "", sum);
    cov_tensor_release(&t);
  }
  return st;
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
  cov_npu_program *p = NULL;
  cov_acg *g = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  FILE *tf = NULL, *out = NULL;
  int rc = CLI_EXIT_INPUT;
  cov_status st = load_program(path, &p);
  if (st) goto done; /* located at path already */
  st = load_program_acg(p, target, &g);
  if (!st) st = cov_npu_sim_create(g, &sim);
  if (!st) cov_npu_sim_set_max_insns(sim, max_insns), cov_npu_sim_set_max_work(sim, max_work);
  if (!st) st = cov_npu_sim_load(sim, p);
  if (st) {
    st = cov_status_annotate(st, "%s: ", path);
    goto done;
  }
  st = fill_inputs(p, sim, seed);
  if (st) goto done;
  common_out trace_out = {0};
  if (trace && (st = common_out_open(trace, &trace_out))) goto done;
  tf = trace_out.f;
  st = cov_npu_sim_run(sim, tf, &stats);
  tf = NULL;
  if (trace) /* kept after a failed run too: it shows what ran up to the failure */
    st = cov_status_join(st, common_out_commit(&trace_out));
  if (st) goto done;
  common_out out_file;
  if (!(out = cli_open_output(output, &out_file))) goto done;
  fprintf(out, "program %s on %s, random inputs with seed %llu\n", path, cov_acg_name(g), seed);
  cov_npu_stats_print(stats, out);
  st = print_outputs(out, p, sim);
  rc = cli_close_output(&out_file);
done:
  if (st) rc = cli_report(st);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_acg_free(g);
  cov_npu_program_free(p);
  return rc;
}

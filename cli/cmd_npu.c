/* cli/cmd_npu.c: `covenant disasm PROGRAM` and `covenant sim PROGRAM`, the
 * npu-sim program tools. A program records the name of the ACG it was
 * compiled for, so the target is found by that name unless --target names
 * another (which the simulator then refuses if its digest differs).
 *
 * long: cli_cmd_sim is the option table of `covenant sim` (getopt), one case each
 */
#include <errno.h>
#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"
#include "cli/cli_compile.h"
#include "common/loc.h"
#include "common/text.h"
#include "covenant/gpu.h"
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
  rc = cli_close_output(&out_file);
done:
  if (st) rc = cli_report(st);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_acg_free(g);
  cov_npu_program_free(p);
  return rc;
}

/* ---- covenant compile / covenant verify (layers of the suite) ---- */


typedef struct layer_job {
  cov_layer *layer;
  cov_acg *acg;
  cov_schedule *sched;
  cov_npu_program *prog;
} layer_job;

static void job_free(layer_job *j) {
  cov_npu_program_free(j->prog);
  cov_schedule_free(j->sched);
  cov_layer_free(j->layer);
  cov_acg_free(j->acg);
  memset(j, 0, sizeof *j);
}

static cov_status job_build(layer_job *j, const char *suite, const char *name, int scale,
                            const char *target) {
  memset(j, 0, sizeof *j);
  COV_RETURN_IF_ERROR(cov_layer_from_suite(suite, name, scale,
                                           &j->layer));
  COV_RETURN_IF_ERROR(cov_acg_load_target(target, &j->acg));
  COV_RETURN_IF_ERROR(cov_map(j->layer, j->acg, NULL, &j->sched));
  COV_RETURN_IF_ERROR(cov_npu_select_by_simulation(j->sched, j->acg, COV_NPU_SELECT_MAX_OPS, NULL));
  return cov_npu_compile(j->sched, &j->prog);
}

static int parse_int(const char *cmd, const char *opt, const char *s, long long lo, long long *out) {
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || v < lo) return cli_usage_error(cmd, "%s: '%s' is not a number >= %lld", opt, s, lo);
  *out = v;
  return 0;
}

static void compile_help(FILE *out) {
  fprintf(out,
          "usage: covenant compile LAYER --target T -o DIR [--scale N] [--suite FILE]\n"
          "       covenant compile LAYER... --target GPU -o DIR [--report] [--dtype D] [--suite FILE]\n"
          "       covenant compile MODEL.onnx --target T -o OUT [--dtype D]\n"
          "\n"
          "With an ONNX model: OUT is one artifact (runtime/README.md) that covenant-run\n"
          "runs. On an NPU target every compute layer group is compiled as one program,\n"
          "its constants (weights, biases) held by the program, the buffers between them\n"
          "and the steps; groups not compiled are listed in it with the reason\n"
          "(covenant-run then refuses it). On a GPU target (amdgpu-*, nvptx-*) the whole\n"
          "model: its kernels (HSACO or PTX), weights in the kernels' layout, buffers and\n"
          "launch sequence; one error lists every layer group that cannot be compiled.\n"
          "The same input gives the same bytes.\n"
          "\n"
          "With a layer of the suite (covenant layers lists them) and an NPU target: maps it,\n"
          "generates its program and writes DIR/program.npu and DIR/manifest.json (target,\n"
          "digest, tensors, instruction count, predicted cycles); inspect it with 'covenant\n"
          "disasm', run it with 'covenant sim'. With GPU targets: one code object per layer\n"
          "(several layers, or 'all') and DIR/manifest.json, as 'covenant gpu compile'.\n"
          "The target's backend (its ACG's backend.name, found through the backend registry)\n"
          "decides which; options of the other kind are refused.\n"
          "\n"
          "options:\n"
          "  -t, --target T       target (default " BACKEND_DEFAULT_TARGET "; 'covenant targets' lists them)\n"
          "  -o, --output DIR     output directory (created), or the model's artifact\n"
          "      --suite FILE     layer suite file\n"
          "      --scale N        NPU: divide the layer's sizes by N (default 1)\n"
          "      --dtype D        GPU: input dtype f16 (default), bf16 or f32\n"
          "      --report         GPU layers: per kernel LDS bytes, registers, occupancy and\n"
          "                       a roofline time estimate from the ACG\n"
          "      --allow-unfused  GPU layers: accept post-ops the kernels do not fuse\n"
          "      --code-object V  AMDGPU: code object version 4 or 5 (default: the ACG's)\n"
          "      --tuning FILE    GPU: a tuning file's schedules (covenant tune --record) for its keys\n"
          "  -h, --help           show this help\n");
}

/* The options of `covenant compile`, for either kind of backend. */
typedef struct compile_opts {
  cov_gpu_options gpu;
  const char *dir;
  long long scale;
  int report, scale_given;
} compile_opts;

static int compile_parse(int argc, char **argv, compile_opts *o) {
  static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"scale", required_argument, NULL, 'S'},
                                       {"suite", required_argument, NULL, 'U'},
                                       {"dtype", required_argument, NULL, 'd'},
                                       {"report", no_argument, NULL, 'r'},
                                       {"allow-unfused", no_argument, NULL, 'u'},
                                       {"code-object", required_argument, NULL, 'c'},
                                       {"tuning", required_argument, NULL, 'T'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->gpu.target = BACKEND_DEFAULT_TARGET;
  o->gpu.notes = stderr; /* the library prints nothing itself */
  o->scale = 1;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': o->gpu.target = optarg; break;
      case 'o': o->dir = optarg; break;
      case 'S':
        if (parse_int("compile", "--scale", optarg, 1, &o->scale)) return CLI_EXIT_USAGE;
        o->scale_given = 1;
        break;
      case 'U': o->gpu.suite = optarg; break;
      case 'd':
        o->gpu.dtype = cov_dtype_from_name(optarg);
        if (o->gpu.dtype != COV_F16 && o->gpu.dtype != COV_BF16 && o->gpu.dtype != COV_F32)
          return cli_usage_error("compile", "--dtype '%s': expected f16, bf16 or f32", optarg);
        break;
      case 'r': o->report = 1; break;
      case 'u': o->gpu.allow_unfused = 1; break;
      case 'T': o->gpu.tuning = optarg; break;
      case 'c':
        if (strcmp(optarg, "4") && strcmp(optarg, "5"))
          return cli_usage_error("compile", "--code-object '%s': expected 4 or 5", optarg);
        o->gpu.code_object_version = (unsigned)atoi(optarg);
        break;
      case 'h': compile_help(stdout); return CLI_EXIT_OK;
      default: return cli_bad_option("compile", argv, "t:o:h", opts);
    }
  }
  return -1;
}

/* A GPU target: the model whole into one artifact, or the layers one code
 * object each (the same library calls as `covenant gpu compile`). */
static int compile_for_gpu(const compile_opts *o, char **args, int n) {
  if (o->scale_given) return cli_usage_error("compile", "--scale is for NPU targets; %s is a GPU target", o->gpu.target);
  if (cli_is_onnx(args[0])) {
    if (n != 1) return cli_usage_error("compile", "takes exactly one MODEL (got %d arguments)", n);
    if (o->report || o->gpu.allow_unfused)
      return cli_usage_error("compile", "--report and --allow-unfused are for layers, not models");
    return cli_gpu_compile_model(&o->gpu, args[0], o->dir);
  }
  return cli_gpu_compile_layers(&o->gpu, args, n, o->dir, o->report);
}

int cli_cmd_compile(int argc, char **argv) {
  compile_opts co;
  int prc = compile_parse(argc, argv, &co);
  if (prc >= 0) return prc;
  if (argc - optind < 1) return cli_usage_error("compile", "needs a LAYER or a MODEL.onnx");
  if (!co.dir) return cli_usage_error("compile", "-o DIR is required");
  /* the registry says which backend serves the target */
  backend_target bt;
  cov_status ost = backend_target_open(co.gpu.target, &bt);
  if (ost) return cli_report(ost);
  bool gpu = bt.backend->gpu != NULL;
  bool compiles = (bt.backend->ops & BACKEND_COMPILE) != 0;
  backend_target_close(&bt);
  if (!compiles)
    return cli_usage_error("compile", "target '%s' runs models but compiles nothing (try an NPU or GPU target)",
                           co.gpu.target);
  if (gpu) return compile_for_gpu(&co, argv + optind, argc - optind);
  if (co.gpu.dtype != COV_DTYPE_INVALID || co.report || co.gpu.allow_unfused || co.gpu.code_object_version ||
      co.gpu.tuning)
    return cli_usage_error("compile", "--dtype, --report, --allow-unfused, --code-object and --tuning are for GPU targets; "
                           "%s is an NPU target", co.gpu.target);
  const char *target = co.gpu.target, *dir = co.dir, *suite = co.gpu.suite;
  long long scale = co.scale;
  if (argc - optind != 1) return cli_usage_error("compile", "takes exactly one LAYER (got %d)", argc - optind);
  if (!dir) return cli_usage_error("compile", "-o DIR is required");
  size_t len = strlen(argv[optind]);
  if (len > 5 && !strcmp(argv[optind] + len - 5, ".onnx")) {
    if (scale != 1 || suite)
      return cli_usage_error("compile", "--scale and --suite are for suite layers, not models");
    return cli_compile_model(argv[optind], target, dir);
  }
  layer_job j;
  cov_status st = job_build(&j, suite, argv[optind], (int)scale, target);
  if (st) {
    job_free(&j);
    return cli_report(st);
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    cov_loc loc = {dir, 0, 0, NULL};
    job_free(&j);
    return cli_report(cov_error(COV_IO_ERROR, &loc, "cannot create the directory: %s", strerror(errno)));
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/program.npu", dir);
  st = cov_npu_program_save(j.prog, path);
  if (!st) {
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    common_out mf;
    st = common_out_open(path, &mf);
    if (!st) {
      FILE *f = mf.f;
      fprintf(f, "{\n  \"layer\": \"%s\",\n  \"scale\": %lld,\n  \"target\": \"%s\",\n", argv[optind],
              scale, cov_acg_name(j.acg));
      fprintf(f, "  \"program\": \"program.npu\",\n  \"predicted_cycles\": %.0f,\n  \"tensors\": [",
              cov_schedule_cycles(j.sched));
      for (int i = 0; i < cov_npu_program_tensor_count(j.prog); i++) {
        const char *name, *role;
        cov_dtype dt;
        int64_t shape[COV_MAX_RANK];
        int rank = cov_npu_program_tensor(j.prog, i, &name, &role, &dt, shape);
        fprintf(f, "%s\n    {\"name\": \"%s\", \"role\": \"%s\", \"dtype\": \"%s\", \"shape\": [", i ? "," : "",
                name, role, cov_dtype_name(dt));
        for (int d = 0; d < rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)shape[d]);
        fprintf(f, "]}");
      }
      fprintf(f, "\n  ]\n}\n");
      st = common_out_commit(&mf);
    }
  }
  if (!st) printf("wrote %s/program.npu and %s/manifest.json\n", dir, dir);
  job_free(&j);
  return st ? cli_report(st) : CLI_EXIT_OK;
}

static void verify_help(FILE *out) {
  fprintf(out,
          "usage: covenant verify LAYER... [--target T] [--iterations N] [--scale N] [--full]\n"
          "                      [--seed N] [--progress]\n"
          "\n"
          "Checks NPU programs against the reference: each LAYER of the suite ('all' for\n"
          "every one; 'covenant layers' lists them) is mapped, compiled and run in the\n"
          "simulator N times with random inputs in [-1, 1), each result compared with the\n"
          "reference interpreter. By default a quick check (3 inputs, sizes / 8: seconds\n"
          "for the whole suite); --full is the correctness protocol (1000 inputs at full\n"
          "size: hours for 'all'). The error of one run is\n"
          "max|npu - ref| / max|ref| over the output; a layer passes when every run is\n"
          "within --tolerance (default 1e-3). Where the schedule narrows multiplicands (to\n"
          "the bound capability's f16 or bf16), the random inputs are values of that dtype\n"
          "(the reference sees the same numbers), so\n"
          "the error measures the NPU's arithmetic (fp32 accumulation order), not rounding.\n"
          "Prints per layer: iterations, max error, cycles, array utilisation, PASS/FAIL.\n"
          "\n"
          "options:\n"
          "  -t, --target T      NPU target (default " BACKEND_DEFAULT_TARGET "); GPU targets: 'covenant gpu\n"
          "                      run LAYER -t T' checks them against a CPU loop nest\n"
          "  -n, --iterations N  random inputs per layer (default 3; --full: 1000)\n"
          "      --scale N       divide the layers' sizes by N (default 8; --full: 1)\n"
          "      --full          the full protocol: 1000 inputs at full size (-n and\n"
          "                      --scale still override)\n"
          "      --progress      show progress inside each layer on stderr (the default\n"
          "                      when stderr is a terminal)\n"
          "      --seed N        first seed (default 1)\n"
          "      --tolerance X   largest accepted error (default 1e-3)\n"
          "      --suite FILE    layer suite file\n"
          "  -h, --help          show this help\n");
}

static cov_status verify_layer(const char *suite, const char *name, int scale, const char *target,
                               long long iters, unsigned long long seed, double tol, FILE *out,
                               int *failed, cli_progress *pr) {
  layer_job j;
  cli_progress_note(pr, 1, "verify %s: mapping and compiling", name);
  cov_status st = job_build(&j, suite, name, scale, target);
  cov_npu_sim *sim = NULL;
  if (!st) st = cov_npu_sim_create(j.acg, &sim);
  if (!st) st = cov_npu_sim_load(sim, j.prog);
  int n_in = st ? 0 : cov_layer_num_inputs(j.layer);
  cov_tensor ins[8] = {{0}};
  if (n_in > 8) st = cov_error(COV_UNSUPPORTED, NULL, "more than 8 inputs");
  for (int i = 0; i < n_in && !st; i++) {
    cov_tensor shp = {0};
    st = cov_layer_input(j.layer, i, &shp);
    if (!st) st = cov_tensor_alloc(&ins[i], COV_F32, shp.rank, shp.shape);
  }
  cov_dtype narrowed[8] = {COV_F32, COV_F32, COV_F32, COV_F32, COV_F32, COV_F32, COV_F32, COV_F32};
  for (int i = 0; !st && i < cov_npu_program_tensor_count(j.prog); i++) {
    const char *tn;
    cov_dtype dt;
    cov_npu_program_tensor(j.prog, i, &tn, NULL, &dt, NULL);
    int k;
    if (sscanf(tn, "in%d", &k) == 1 && k >= 0 && k < 8) narrowed[k] = dt;
  }
  double worst = 0;
  uint64_t cycles = 0;
  double util = 0;
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (long long it = 0; it < iters && !st; it++) {
    cli_progress_note(pr, it == 0, "verify %s: input %lld of %lld (worst error so far %.3e)", name,
                      it + 1, iters, worst);
    for (int i = 0; i < n_in; i++) {
      /* Where the schedule narrows multiplicands (the program's tensor is
       * f16 or bf16, the bound capability's dtype), the same rounded values
       * go to the reference, so the comparison measures the NPU's
       * arithmetic, not the narrowing. */
      for (int64_t k = 0; k < cov_tensor_numel(&ins[i]); k++)
        ((float *)ins[i].data)[k] = cov_f32_round_to(narrowed[i], cli_rand_pm1(&s));
    }
    cov_tensor ref = {0}, got = {0};
    st = cov_layer_reference(j.layer, ins, &ref);
    for (int i = 0; i < n_in && !st; i++) {
      char nm[16];
      snprintf(nm, sizeof nm, "in%d", i);
      st = cov_npu_sim_write(sim, nm, &ins[i]);
    }
    cov_npu_stats *stats = NULL;
    if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
    if (!st) st = cov_npu_sim_read(sim, "out", &got);
    if (!st && cov_tensor_numel(&got) != cov_tensor_numel(&ref))
      st = cov_error(COV_INTERNAL, NULL, "%s: the NPU output has %lld elements, the reference %lld",
                     name, (long long)cov_tensor_numel(&got), (long long)cov_tensor_numel(&ref));
    if (!st) {
      double md = 0, mr = 0;
      const float *a = got.data, *b = ref.data;
      for (int64_t k = 0; k < cov_tensor_numel(&ref); k++) {
        double d = fabs((double)a[k] - (double)b[k]);
        if (!(d <= md)) md = d; /* NaN counts as the worst */
        if (fabs(b[k]) > mr) mr = fabs(b[k]);
      }
      double e = md / (mr > 1e-30 ? mr : 1e-30);
      if (!(e <= worst)) worst = e;
      if (it == 0) {
        cycles = cov_npu_stats_cycles(stats);
        util = cov_npu_stats_array_utilization(stats);
      }
    }
    cov_npu_stats_free(stats);
    cov_tensor_release(&ref);
    cov_tensor_release(&got);
  }
  cli_progress_clear(pr);
  if (!st) {
    bool pass = worst <= tol;
    if (!pass) (*failed)++;
    fprintf(out, "%-22s %-13s %6lld %12.3e %12llu %6.1f%%  %s\n", name, cov_acg_name(j.acg), iters,
            worst, (unsigned long long)cycles, 100 * util, pass ? "PASS" : "FAIL");
  }
  for (int i = 0; i < 8; i++) cov_tensor_release(&ins[i]);
  cov_npu_sim_free(sim);
  job_free(&j);
  return st ? cov_status_annotate(st, "%s: ", name) : NULL;
}

int cli_cmd_verify(int argc, char **argv) {
  static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                       {"iterations", required_argument, NULL, 'n'},
                                       {"scale", required_argument, NULL, 'S'},
                                       {"seed", required_argument, NULL, 's'},
                                       {"tolerance", required_argument, NULL, 'T'},
                                       {"suite", required_argument, NULL, 'U'},
                                       {"full", no_argument, NULL, 'F'},
                                       {"progress", no_argument, NULL, 'P'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  const char *target = BACKEND_DEFAULT_TARGET, *suite = NULL;
  long long iters = -1, scale = -1, seed = 1;
  int full = 0, progress = 0;
  double tol = 1e-3;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:n:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': target = optarg; break;
      case 'n':
        if (parse_int("verify", "--iterations", optarg, 1, &iters)) return CLI_EXIT_USAGE;
        break;
      case 'S':
        if (parse_int("verify", "--scale", optarg, 1, &scale)) return CLI_EXIT_USAGE;
        break;
      case 's':
        if (parse_int("verify", "--seed", optarg, 0, &seed)) return CLI_EXIT_USAGE;
        break;
      case 'T':
        if (cli_parse_tolerance("verify", optarg, &tol)) return CLI_EXIT_USAGE;
        break;
      case 'U': suite = optarg; break;
      case 'F': full = 1; break;
      case 'P': progress = 1; break;
      case 'h': verify_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_bad_option("verify", argv, "t:n:h", opts);
    }
  }
  if (argc - optind < 1) return cli_usage_error("verify", "takes at least one LAYER (or 'all')");
  /* Quick by default (seconds for the suite); --full is the protocol. */
  if (iters < 0) iters = full ? 1000 : 3;
  if (scale < 0) scale = full ? 1 : 8;
  /* The target once, before any layer: a target that does not load or is
   * not an NPU is one error, not one per layer. */
  cov_acg *acg = NULL;
  cov_status tst = cov_acg_load_target(target, &acg);
  if (tst) return cli_report(tst);
  const char *be = cov_acg_backend(acg);
  if (be && (!strcmp(be, "amdgpu") || !strcmp(be, "nvptx"))) {
    cov_loc loc = {cov_acg_file(acg), 0, 0, NULL};
    tst = cov_error(COV_INVALID_ARGUMENT, &loc,
                    "'%s' is a GPU target (%s); verify checks NPU programs. Use 'covenant gpu run "
                    "%s --target %s' to check GPU code against a CPU loop nest",
                    cov_acg_name(acg), be, argc - optind == 1 ? argv[optind] : "all", target);
    cov_acg_free(acg);
    return cli_report(tst);
  }
  cov_acg_free(acg);
  cli_progress pr;
  cli_progress_init(&pr, progress);
  char **names = NULL;
  int n_names = 0;
  cov_status st = NULL;
  if (argc - optind == 1 && strcmp(argv[optind], "all") == 0) {
    st = cov_suite_layer_names(suite, &names, &n_names);
    if (st) return cli_report(st);
  }
  printf("%-22s %-13s %6s %12s %12s %7s\n", "layer", "target", "iters", "max rel err", "cycles",
         "array");
  int failed = 0, errors = 0;
  int count = names ? n_names : argc - optind;
  for (int i = 0; i < count; i++) {
    const char *name = names ? names[i] : argv[optind + i];
    st = verify_layer(suite, name, (int)scale, target, iters, (unsigned long long)seed, tol, stdout,
                      &failed, &pr);
    if (st) {
      errors++;
      fflush(stdout);
      cli_report(st);
    }
  }
  for (int i = 0; i < n_names; i++) free(names[i]);
  free(names);
  printf("%d layer(s): %d passed, %d failed", count, count - failed - errors, failed);
  if (errors) printf(", %d not run (errors above)", errors);
  if (scale == 1) printf("; %lld random input%s each, full size", iters, iters == 1 ? "" : "s");
  else printf("; %lld random input%s each, sizes / %lld", iters, iters == 1 ? "" : "s", scale);
  printf("%s\n",
         iters == 1000 && scale == 1 ? " (the full protocol)" : " (--full for the full protocol)");
  return failed || errors ? CLI_EXIT_INPUT : CLI_EXIT_OK;
}

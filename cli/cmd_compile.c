/* cli/cmd_compile.c: `covenant compile` (suite layers or a model) and
 * `covenant verify` (suite layers against the reference on random inputs)
 * on any target, through the entries of its backend's row in the backend
 * registry (backends/registry/backend_registry.h): compile_layers,
 * compile_model; open_layer, run_layer, close_layer. The options a backend
 * does not take (backend_info.options) are refused by name. */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"
#include "covenant/mapper.h"

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
          "       covenant compile MODEL.onnx --target T -o OUT [--dtype D] [--shape NAME=DIMS]...\n"
          "                        [--precision auto|f16|f32]\n"
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
          "      --dtype D        GPU: matrix operand dtype f16 (default), bf16 (layers) or f32\n"
          "      --report         GPU layers: per kernel LDS bytes, registers, occupancy and\n"
          "                       a roofline time estimate from the ACG\n"
          "      --allow-unfused  GPU layers: accept post-ops the kernels do not fuse\n"
          "      --code-object V  AMDGPU: code object version 4 or 5 (default: the ACG's)\n"
          "      --tuning FILE    GPU: a tuning file's schedules (covenant tune --record) for its keys\n"
          "      --shape N=DIMS   models: input N's shape (e.g. input=3x3x32x32), binding the\n"
          "                       dims the model leaves symbolic (a dynamic batch; GPU targets\n"
          "                       otherwise compile them as 1); repeatable. The artifact records\n"
          "                       the shapes and which dims were symbolic: it runs at those only\n"
          "      --precision P    GPU models: the operands and activations between kernels. auto\n"
          "                       (default): as f16, but where the CPU emulation of the f16 plan on\n"
          "                       a fixed random input is more than 3e-3 off, the shortest prefix of\n"
          "                       matrix groups that brings it under gets f32 operands (FMA kernels,\n"
          "                       f32 weights); the estimate and those groups go to stderr. f16:\n"
          "                       matrix operands f16 (11 bits) everywhere; convolutions the\n"
          "                       channels-last kernels take read and write NHWC f16, conversions\n"
          "                       only at the edges. f32: f32 NCHW between every kernel (the matrix\n"
          "                       kernels still read f16 copies). --dtype f32 makes every matrix\n"
          "                       kernel f32\n"
          "  -h, --help           show this help\n");
}

/* The options of `covenant compile`: the entries' options, which the
 * target's backend takes or refuses (backend_info.options). */
typedef struct compile_opts {
  backend_options b;
  const char *dir;
  unsigned given; /* BACKEND_OPT_* given on the command line */
  cov_model_shape shapes[16];
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
                                       {"shape", required_argument, NULL, 'H'},
                                       {"precision", required_argument, NULL, 'P'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->b.target = BACKEND_DEFAULT_TARGET;
  o->b.notes = stderr; /* the library prints nothing itself */
  o->b.scale = 1;
  optind = 1;
  opterr = 0;
  int c;
  long long scale = 1;
  while ((c = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': o->b.target = optarg; break;
      case 'o': o->dir = optarg; break;
      case 'S':
        if (parse_int("compile", "--scale", optarg, 1, &scale)) return CLI_EXIT_USAGE;
        if (scale > 1 << 20) return cli_usage_error("compile", "--scale: '%s' is more than %d", optarg, 1 << 20);
        o->b.scale = (int)scale;
        o->given |= BACKEND_OPT_SCALE;
        break;
      case 'U': o->b.suite = optarg; break;
      case 'd':
        o->b.dtype = cov_dtype_from_name(optarg);
        if (o->b.dtype != COV_F16 && o->b.dtype != COV_BF16 && o->b.dtype != COV_F32)
          return cli_usage_error("compile", "--dtype '%s': expected f16, bf16 or f32", optarg);
        o->given |= BACKEND_OPT_DTYPE;
        break;
      case 'r': o->b.report = 1, o->given |= BACKEND_OPT_REPORT; break;
      case 'u': o->b.allow_unfused = 1, o->given |= BACKEND_OPT_UNFUSED; break;
      case 'T': o->b.tuning = optarg, o->given |= BACKEND_OPT_TUNING; break;
      case 'H':
        if (cli_parse_shape("compile", optarg, o->shapes, &o->b.n_shapes, 16)) return CLI_EXIT_USAGE;
        o->b.shapes = o->shapes, o->given |= BACKEND_OPT_SHAPE;
        break;
      case 'P':
        if (strcmp(optarg, "auto") && strcmp(optarg, "f16") && strcmp(optarg, "f32"))
          return cli_usage_error("compile", "--precision '%s': expected auto, f16 or f32", optarg);
        o->b.f32_activations = !strcmp(optarg, "f32"), o->b.f16_operands = !strcmp(optarg, "f16");
        o->given |= BACKEND_OPT_PRECISION;
        break;
      case 'c':
        if (strcmp(optarg, "4") && strcmp(optarg, "5"))
          return cli_usage_error("compile", "--code-object '%s': expected 4 or 5", optarg);
        o->b.code_object_version = (unsigned)atoi(optarg);
        o->given |= BACKEND_OPT_CODE_OBJECT;
        break;
      case 'h': compile_help(stdout); return CLI_EXIT_OK;
      default: return cli_bad_option("compile", argv, "t:o:h", opts);
    }
  }
  return -1;
}

/* The options given that the target's backend does not take: a usage
 * error naming them; else -1. */
static int refuse_options(const char *cmd, const backend_target *t, unsigned given) {
  unsigned refused = given & ~t->backend->options;
  if (!refused) return -1;
  char names[160];
  backend_option_names(refused, names, sizeof names);
  return cli_usage_error(cmd, "%s: not for %s, a%s %s target (backend %s)", names, t->name,
                         strchr("AEFHILMNORSX", t->backend->kind[0]) ? "n" : "", t->backend->kind, t->backend->name);
}

/* A model into one artifact, or suite layers into a directory, by the
 * target's backend. */
static cov_status compile_with(const backend_target *bt, const compile_opts *co, char **args, int n) {
  const backend_info *b = bt->backend;
  if (cli_is_onnx(args[0])) {
    if (!b->compile_model) return backend_lacks(bt, "covenant compile", "compile models");
    return b->compile_model(bt, &co->b, args[0], co->dir, stdout);
  }
  if (!b->compile_layers) return backend_lacks(bt, "covenant compile", "compile layers");
  return b->compile_layers(bt, &co->b, (const char *const *)args, n, co->dir, stdout);
}

int cli_cmd_compile(int argc, char **argv) {
  compile_opts co;
  int prc = compile_parse(argc, argv, &co);
  if (prc >= 0) return prc;
  int n = argc - optind;
  char **args = argv + optind;
  if (n < 1) return cli_usage_error("compile", "needs a LAYER or a MODEL.onnx");
  if (!co.dir) return cli_usage_error("compile", "-o DIR is required");
  /* the registry says which backend serves the target */
  backend_target bt;
  cov_status st = backend_target_open(co.b.target, &bt);
  if (st) return cli_report(st);
  int rc = -1;
  if (!(bt.backend->ops & BACKEND_COMPILE))
    rc = cli_usage_error("compile", "target '%s' runs models but compiles nothing (try another: covenant targets)",
                         co.b.target);
  if (rc < 0) rc = refuse_options("compile", &bt, co.given);
  if (rc < 0 && cli_is_onnx(args[0])) {
    unsigned layer_only = co.given & (BACKEND_OPT_SCALE | BACKEND_OPT_REPORT | BACKEND_OPT_UNFUSED);
    if (n != 1) rc = cli_usage_error("compile", "takes exactly one MODEL (got %d arguments)", n);
    else if (layer_only || co.b.suite) {
      char names[160];
      backend_option_names(layer_only, names, sizeof names);
      rc = cli_usage_error("compile", "%s%s%s: for layers, not models", co.b.suite ? "--suite" : "",
                           *names && co.b.suite ? ", " : "", names);
    }
  }
  if (rc < 0 && !cli_is_onnx(args[0]) && (co.given & BACKEND_OPT_SHAPE))
    rc = cli_usage_error("compile", "--shape: for models, not layers");
  if (rc < 0 && !cli_is_onnx(args[0]) && (co.given & BACKEND_OPT_PRECISION))
    rc = cli_usage_error("compile", "--precision: for models, not layers");
  if (rc < 0 && bt.backend->max_layers && n > bt.backend->max_layers)
    rc = cli_usage_error("compile", "takes exactly %d LAYER on %s (got %d)", bt.backend->max_layers, co.b.target, n);
  if (rc < 0) rc = cli_report(compile_with(&bt, &co, args, n));
  backend_target_close(&bt);
  return rc;
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

static cov_status verify_layer(const backend_target *t, const backend_options *o, const char *name,
                               long long iters, unsigned long long seed, double tol, FILE *out,
                               int *failed, cli_progress *pr) {
  const backend_info *b = t->backend;
  backend_layer l = {0};
  cli_progress_note(pr, 1, "verify %s: mapping and compiling", name);
  cov_status st = b->open_layer(t, o, name, &l);
  int n_in = st ? 0 : cov_layer_num_inputs(l.layer);
  cov_tensor ins[8] = {{0}};
  if (n_in > 8) st = cov_error(COV_UNSUPPORTED, NULL, "more than 8 inputs");
  for (int i = 0; i < n_in && !st; i++) {
    cov_tensor shp = {0};
    st = cov_layer_input(l.layer, i, &shp);
    if (!st) st = cov_tensor_alloc(&ins[i], COV_F32, shp.rank, shp.shape);
  }
  double worst = 0;
  backend_layer_stats first = {0};
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (long long it = 0; it < iters && !st; it++) {
    cli_progress_note(pr, it == 0, "verify %s: input %lld of %lld (worst error so far %.3e)", name,
                      it + 1, iters, worst);
    for (int i = 0; i < n_in; i++) {
      /* Where the code narrows multiplicands (to the bound capability's
       * f16 or bf16), the same rounded values go to the reference, so the
       * comparison measures the backend's arithmetic, not the narrowing. */
      for (int64_t k = 0; k < cov_tensor_numel(&ins[i]); k++)
        ((float *)ins[i].data)[k] = cov_f32_round_to(l.in_dtype[i], cli_rand_pm1(&s));
    }
    cov_tensor ref = {0}, got = {0};
    backend_layer_stats stats = {0};
    st = cov_layer_reference(l.layer, ins, &ref);
    if (!st) st = b->run_layer(&l, ins, n_in, &got, &stats);
    if (!st && cov_tensor_numel(&got) != cov_tensor_numel(&ref))
      st = cov_error(COV_INTERNAL, NULL, "%s: the %s output has %lld elements, the reference %lld", name,
                     b->kind, (long long)cov_tensor_numel(&got), (long long)cov_tensor_numel(&ref));
    if (!st) {
      double md = 0, mr = 0;
      const float *x = got.data, *y = ref.data;
      for (int64_t k = 0; k < cov_tensor_numel(&ref); k++) {
        double d = fabs((double)x[k] - (double)y[k]);
        if (!(d <= md)) md = d; /* NaN counts as the worst */
        if (fabs(y[k]) > mr) mr = fabs(y[k]);
      }
      double e = md / (mr > 1e-30 ? mr : 1e-30);
      if (!(e <= worst)) worst = e;
      if (it == 0) first = stats;
    }
    cov_tensor_release(&ref);
    cov_tensor_release(&got);
  }
  cli_progress_clear(pr);
  if (!st) {
    bool pass = worst <= tol;
    if (!pass) (*failed)++;
    fprintf(out, "%-22s %-13s %6lld %12.3e %12llu %6.1f%%  %s\n", name, t->name, iters,
            worst, (unsigned long long)first.cycles, 100 * first.array_util, pass ? "PASS" : "FAIL");
  }
  for (int i = 0; i < 8; i++) cov_tensor_release(&ins[i]);
  b->close_layer(&l);
  return st ? cov_status_annotate(st, "%s: ", name) : NULL;
}

/* The target of verify, whose backend must load layers (open_layer); else
 * what checks its code instead (check_with), for `layer`. */
static cov_status verify_target(const char *target, const char *layer, backend_target *bt) {
  COV_RETURN_IF_ERROR(backend_target_open(target, bt));
  const backend_info *b = bt->backend;
  if (b->open_layer) return NULL;
  cov_loc loc = {bt->acg ? cov_acg_file(bt->acg) : target, 0, 0, NULL};
  cov_status st;
  if (b->check_with)
    st = cov_error(COV_INVALID_ARGUMENT, &loc,
                   "'%s' is a %s target (%s); verify runs layers on backends that load them. Use 'covenant %s "
                   "%s --target %s' to check its code",
                   bt->name, b->kind, b->name, b->check_with, layer, target);
  else
    st = cov_error(COV_INVALID_ARGUMENT, &loc, "'%s' (backend %s) does not run layers: nothing to verify", bt->name,
                   b->name);
  backend_target_close(bt);
  return st;
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
  /* The target once, before any layer: a target that does not load or
   * whose backend does not load layers is one error, not one per layer. */
  backend_target bt;
  cov_status tst = verify_target(target, argc - optind == 1 ? argv[optind] : "all", &bt);
  if (tst) return cli_report(tst);
  backend_options bo = {.target = target, .suite = suite, .scale = (int)scale};
  cli_progress pr;
  cli_progress_init(&pr, progress);
  char **names = NULL;
  int n_names = 0;
  cov_status st = NULL;
  if (argc - optind == 1 && strcmp(argv[optind], "all") == 0) {
    st = cov_suite_layer_names(suite, &names, &n_names);
    if (st) {
      backend_target_close(&bt);
      return cli_report(st);
    }
  }
  printf("%-22s %-13s %6s %12s %12s %7s\n", "layer", "target", "iters", "max rel err", "cycles",
         "array");
  int failed = 0, errors = 0;
  int count = names ? n_names : argc - optind;
  for (int i = 0; i < count; i++) {
    const char *name = names ? names[i] : argv[optind + i];
    st = verify_layer(&bt, &bo, name, iters, (unsigned long long)seed, tol, stdout, &failed, &pr);
    if (st) {
      errors++;
      fflush(stdout);
      cli_report(st);
    }
  }
  for (int i = 0; i < n_names; i++) free(names[i]);
  free(names);
  backend_target_close(&bt);
  printf("%d layer(s): %d passed, %d failed", count, count - failed - errors, failed);
  if (errors) printf(", %d not run (errors above)", errors);
  if (scale == 1) printf("; %lld random input%s each, full size", iters, iters == 1 ? "" : "s");
  else printf("; %lld random input%s each, sizes / %lld", iters, iters == 1 ? "" : "s", scale);
  printf("%s\n",
         iters == 1000 && scale == 1 ? " (the full protocol)" : " (--full for the full protocol)");
  return failed || errors ? CLI_EXIT_INPUT : CLI_EXIT_OK;
}

/* cli/cmd_gpu.c: `covenant gpu compile|run|candidates`: layers on GPU
 * targets; `covenant compile LAYER... --target GPU` shares its layer
 * compile (cli_gpu_compile_layers). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_compile.h"
#include "covenant/gpu.h"
#include "covenant/mapper.h"

static void gpu_help(FILE *out) {
  fprintf(out,
          "usage: covenant gpu compile LAYER... --target T -o DIR [--report]\n"
          "       covenant gpu run LAYER... --target T\n"
          "       covenant gpu run MODEL.onnx --target T [--seed N] [--tolerance X]\n"
          "       covenant gpu candidates LAYER... --target T [--top N]\n"
          "\n"
          "LAYER is an entry of the layer suite by name ('covenant layers'), NAME@bN\n"
          "for batch N, NAME[@bN]@cl for a conv on channels-last tensors (NHWC f16 in and\n"
          "out), gemm_MxNxK for a plain matmul, 'all' for every layer of the suite\n"
          "(contractions, max pools), or MODEL.onnx for the conv layer groups of a model.\n"
          "T is a GPU target: amdgpu-gfx90a, amdgpu-gfx942, nvptx-sm90.\n"
          "\n"
          "  compile  one code object per layer (HSACO for AMDGPU, PTX for NVPTX) and\n"
          "           DIR/manifest.json with each kernel's launch, problem and plan\n"
          "  run      runs each layer on seeded random inputs (CUDA driver API, or HIP for\n"
          "           AMD: use --code-object 4 with Debian's HIP 5.2) and compares with a\n"
          "           CPU loop nest; exits 1, naming the runtime's error, without a GPU\n"
          "  candidates  the mapper's ranked GPU schedules of each layer that the lowering\n"
          "           takes (--top N, default 8; compile and run take the first): the layer,\n"
          "           the layer with that schedule fixed (LAYER:BMxBNxBK:WMxWN:STAGES[:wgD],\n"
          "           for compile), its kernel's name, its rank and predicted cycles\n"
          "           (bench/nvptx/scripts/rank_prepare.sh)\n"
          "  run MODEL.onnx  runs the whole model (also `covenant run MODEL.onnx --target T`):\n"
          "           each conv layer group the lowering takes is compiled and run on the\n"
          "           GPU (inputs rounded to --dtype), every other group on the CPU\n"
          "           reference; prints where each group ran with its kernel time, the\n"
          "           outputs, and the max relative error against --target ref on the\n"
          "           same random inputs (exit 1 past --tolerance)\n"
          "\n"
          "options:\n"
          "  -t, --target T        the GPU target (required)\n"
          "  -o, --output DIR      compile: the output directory (required)\n"
          "      --report          compile: per kernel shared/LDS bytes, registers,\n"
          "                        occupancy and a roofline time estimate from the ACG\n"
          "      --dtype D         input dtype f16 (default), bf16 or f32\n"
          "      --suite FILE      the layer suite (default: the shipped one)\n"
          "      --allow-unfused   accept layers with post-ops the kernels do not fuse, and\n"
          "                        skip (with a note) model groups that are not contractions\n"
          "      --code-object V   AMDGPU code object version 4 or 5 (default: the ACG's)\n"
          "      --tuning FILE     compile: the schedules of a tuning file (covenant tune --record)\n"
          "                        for the kernels whose keys it has; the manifest marks them \"tuned\"\n"
          "      --seed N          run MODEL.onnx: seed of the random inputs (1, as covenant run)\n"
          "      --tolerance X     run MODEL.onnx: largest accepted max|gpu-ref|/max|ref|\n"
          "                        (default 1e-2: the GPU takes f16 inputs)\n"
          "  -h, --help            show this help\n");
}

#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_layer.h"
#include "backends/registry/backend_registry.h"

/* covenant gpu candidates LAYER... --target T [--top N] [--dtype D] [--suite F] */
static int gpu_candidates(const cov_gpu_options *o, char **specs, int n, int top) {
  gpu_target t;
  cov_dtype dt = o->dtype != COV_DTYPE_INVALID ? o->dtype : COV_F16;
  cov_status st = gpu_target_open(backend_gpu_vendors(), o->target, dt, &t);
  for (int i = 0; i < n && !st; i++) st = gpu_spec_candidates(&t, o->suite, specs[i], dt, top, stdout);
  if (t.acg) gpu_target_close(&t);
  return cli_report(st);
}

#define MAX_SUITE 256
/* The suite's layers the GPU lowering takes (contractions and max pools),
 * in file order; any others are left out of 'all'. */
static cov_status suite_contractions(const char *suite, cov_dtype dt, char (*names)[96], int *n) {
  int count = 0;
  COV_RETURN_IF_ERROR(gpu_layer_suite_names(suite, names, MAX_SUITE, &count));
  *n = 0;
  for (int i = 0; i < count; i++) {
    gpu_layer l;
    cov_status st = gpu_layer_from_spec(suite, names[i], dt, &l);
    if (st) {
      cov_status_free(st);
      continue;
    }
    if (*n != i) memcpy(names[*n], names[i], sizeof names[i]);
    (*n)++;
  }
  return NULL;
}
#endif

#ifdef COV_HAVE_GPU_BACKENDS
/* A model run's inputs: random, exactly as `covenant run` makes them. */
typedef struct model_inputs {
  unsigned long long seed;
} model_inputs;

static cov_status fill_inputs(void *user, const cov_model *m, cov_tensor *inputs, size_t n) {
  const model_inputs *mi = user;
  for (size_t i = 0; i < n; i++) {
    cov_status st = cli_random_input(m, i, mi->seed, &inputs[i]);
    /* its advice (--input) is an NPU-run option: say so */
    if (st) return cov_status_annotate(st, "a GPU run makes random inputs only (no --input yet): ");
  }
  return NULL;
}
#endif

#ifdef COV_HAVE_GPU_BACKENDS
/* What compile wrote, as the NPU compile says it: the code objects the
 * manifest lists ("file": "NAME") and the manifest. */
static void print_written(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  FILE *f = fopen(path, "rb");
  if (!f) return;
  static const char key[] = "\"file\": \"";
  char line[4096], first[3][256];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    const char *q = strstr(line, key);
    if (!q) continue;
    q += strlen(key);
    if (n < 3) snprintf(first[n], sizeof first[n], "%.*s", (int)strcspn(q, "\""), q);
    n++;
  }
  fclose(f);
  printf("wrote %d code object%s and %s:", n, n == 1 ? "" : "s", path);
  for (int i = 0; i < n && i < 3; i++) printf(" %s/%s", dir, first[i]);
  printf("%s\n", n > 3 ? " ..." : "");
}
#endif

#ifdef COV_HAVE_GPU_BACKENDS
/* Layers for a GPU target ('all': the suite's layers the lowering takes),
 * compiled (out_dir set) or run on the device. */
static int gpu_layers(const cov_gpu_options *opts, char **args, int n_args, const char *out_dir, int report) {
  cov_gpu_options o = *opts;
  char (*suite_names)[96] = calloc(MAX_SUITE, sizeof *suite_names); /* no static state */
  if (!suite_names) return cli_report(cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory"));
  int n_suite = 0, n = 0;
  for (int i = 0; i < n_args && !n_suite; i++)
    if (!strcmp(args[i], "all")) {
      char found[4096];
      const char *suite = o.suite;
      cov_status st = suite ? NULL : cov_suite_find(found, sizeof found);
      if (!suite) suite = found;
      if (!st) st = suite_contractions(suite, o.dtype != COV_DTYPE_INVALID ? o.dtype : COV_F16, suite_names, &n_suite);
      if (st) {
        free(suite_names);
        return cli_report(st);
      }
    }
  const char **specs = malloc(sizeof *specs * (size_t)n_args * (size_t)(n_suite + 1));
  if (!specs) {
    free(suite_names);
    return cli_report(cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory"));
  }
  for (int i = 0; i < n_args; i++) {
    if (strcmp(args[i], "all")) {
      specs[n++] = args[i];
      continue;
    }
    for (int j = 0; j < n_suite; j++) specs[n++] = suite_names[j];
    o.allow_unfused = 1;
  }
  cov_status st = out_dir ? cov_gpu_compile(&o, specs, n, out_dir, report ? stdout : NULL)
                          : cov_gpu_run(&o, specs, n, stdout);
  free(specs);
  free(suite_names);
  if (!st && out_dir) print_written(out_dir);
  return cli_report(st);
}
#endif

int cli_gpu_compile_layers(const cov_gpu_options *o, char **specs, int n, const char *out_dir, int report) {
#ifdef COV_HAVE_GPU_BACKENDS
  return gpu_layers(o, specs, n, out_dir, report);
#else
  (void)o, (void)specs, (void)n, (void)out_dir, (void)report;
  return cli_report(cov_error(COV_UNSUPPORTED, NULL, "this covenant was built without the GPU backends (LLVM)"));
#endif
}

int cli_gpu_run_layers(const cov_gpu_options *o, char **specs, int n) {
#ifdef COV_HAVE_GPU_BACKENDS
  return gpu_layers(o, specs, n, NULL, 0);
#else
  (void)o, (void)specs, (void)n;
  return cli_report(cov_error(COV_UNSUPPORTED, NULL, "this covenant was built without the GPU backends (LLVM)"));
#endif
}

int cli_cmd_gpu(int argc, char **argv) {
  if (argc < 2) return cli_usage_error("gpu", "expected a subcommand: compile or run");
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    gpu_help(stdout);
    return CLI_EXIT_OK;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "compile") && strcmp(sub, "run") && strcmp(sub, "candidates"))
    return cli_usage_error("gpu", "unknown subcommand '%s' (expected compile, run or candidates)", sub);
  static const struct option opts[] = {
      {"target", required_argument, NULL, 't'},  {"output", required_argument, NULL, 'o'},
      {"report", no_argument, NULL, 'r'},        {"dtype", required_argument, NULL, 'd'},
      {"suite", required_argument, NULL, 's'},   {"allow-unfused", no_argument, NULL, 'u'},
      {"code-object", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
      {"seed", required_argument, NULL, 'S'},    {"tolerance", required_argument, NULL, 'T'},
      {"top", required_argument, NULL, 'N'},     {"tuning", required_argument, NULL, 'U'},
      {0, 0, 0, 0}};
  cov_gpu_options o = {.notes = stderr}; /* the library prints nothing itself */
  const char *out_dir = NULL;
  int report = 0, model_opts = 0, top = 0;
  unsigned long long seed = 1;
  double tol = 1e-2;
  optind = 1;
  opterr = 0;
  int c;
  char **av = argv + 1;
  int ac = argc - 1;
  while ((c = getopt_long(ac, av, "t:o:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': o.target = optarg; break;
      case 'o': out_dir = optarg; break;
      case 'r': report = 1; break;
      case 's': o.suite = optarg; break;
      case 'u': o.allow_unfused = 1; break;
      case 'U': o.tuning = optarg; break;
      case 'd':
        o.dtype = cov_dtype_from_name(optarg);
        if (o.dtype != COV_F16 && o.dtype != COV_BF16 && o.dtype != COV_F32)
          return cli_usage_error("gpu", "--dtype '%s': expected f16, bf16 or f32", optarg);
        break;
      case 'c':
        if (strcmp(optarg, "4") && strcmp(optarg, "5"))
          return cli_usage_error("gpu", "--code-object '%s': expected 4 or 5", optarg);
        o.code_object_version = (unsigned)atoi(optarg);
        break;
      case 'S': {
        if (cli_parse_seed("gpu", optarg, &seed)) return CLI_EXIT_USAGE;
        model_opts = 1;
        break;
      }
      case 'T': {
        if (cli_parse_tolerance("gpu", optarg, &tol)) return CLI_EXIT_USAGE;
        model_opts = 1;
        break;
      }
      case 'N': {
        char *end;
        long v = strtol(optarg, &end, 10);
        if (*end || v < 1 || v > 1024) return cli_usage_error("gpu", "--top '%s': expected 1 to 1024", optarg);
        top = (int)v;
        break;
      }
      case 'h': gpu_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_bad_option("gpu", av, "t:o:h", opts);
    }
  }
  if (!o.target) return cli_usage_error("gpu", "%s needs --target (amdgpu-gfx90a, amdgpu-gfx942, nvptx-sm90)", sub);
  if (optind >= ac) return cli_usage_error("gpu", "%s needs at least one LAYER", sub);
  if (top && strcmp(sub, "candidates")) return cli_usage_error("gpu", "--top is for candidates");
  if (o.tuning && strcmp(sub, "compile")) return cli_usage_error("gpu", "--tuning is for compile");
  if (!strcmp(sub, "candidates") && (out_dir || report || model_opts))
    return cli_usage_error("gpu", "candidates takes neither -o, --report, --seed nor --tolerance");
  if (!strcmp(sub, "compile") && !out_dir) return cli_usage_error("gpu", "compile needs -o DIR");
  if (!strcmp(sub, "run") && (out_dir || report))
    return cli_usage_error("gpu", "run takes neither -o nor --report");
  /* run MODEL.onnx: the whole model, one model per run */
  int models = 0;
  for (int i = optind; i < ac; i++) models += cli_is_onnx(av[i]);
  if (!strcmp(sub, "run") && models && ac - optind != 1)
    return cli_usage_error("gpu", "run takes one MODEL.onnx alone (not with other models or layers)");
  if (model_opts && !(models && !strcmp(sub, "run")))
    return cli_usage_error("gpu", "--seed and --tolerance are for run MODEL.onnx");
#ifdef COV_HAVE_GPU_BACKENDS
  if (!strcmp(sub, "candidates")) return gpu_candidates(&o, av + optind, ac - optind, top ? top : 8);
  if (models && !strcmp(sub, "run")) {
    model_inputs mi = {seed};
    return cli_report(cov_gpu_run_model(&o, av[optind], tol, fill_inputs, &mi, stdout));
  }
  if (!strcmp(sub, "compile")) return cli_gpu_compile_layers(&o, av + optind, ac - optind, out_dir, report);
  return cli_gpu_run_layers(&o, av + optind, ac - optind);
#else
  fprintf(stderr, "covenant gpu: this covenant was built without LLVM (COV_WITH_LLVM=OFF): no GPU backends\n");
  return CLI_EXIT_INPUT;
#endif
}

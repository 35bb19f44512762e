/* cli/cmd_gpu.c: `covenant gpu compile|run|candidates`: kernels of suite
 * layers (and whole models) on GPU targets, through the target's backend
 * row (compile_layers, as `covenant compile LAYER...`; run_layers;
 * check_model; map_candidates). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "backends/registry/backend_registry.h"
#include "covenant/mapper.h"

static void usage_help(FILE *out) {
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

/* A model run's inputs: random, exactly as `covenant run` makes them. */
typedef struct model_inputs {
  unsigned long long seed;
} model_inputs;

static cov_status fill_inputs(void *user, const cov_model *m, cov_tensor *inputs, size_t n) {
  const model_inputs *mi = user;
  for (size_t i = 0; i < n; i++) {
    cov_status st = cli_random_input(m, i, mi->seed, &inputs[i]);
    /* its advice (--input) is an option of covenant run: say so */
    if (st) return cov_status_annotate(st, "a device run makes random inputs only (no --input yet): ");
  }
  return NULL;
}

/* What the subcommand asks of the target's backend, through its row. */
typedef struct sub_args {
  const char *sub, *out_dir;
  const char *const *specs;
  int n, models, top;
  unsigned long long seed;
  double tol;
} sub_args;

static cov_status dispatch(const backend_target *t, const backend_options *o, const sub_args *a) {
  const backend_info *b = t->backend;
  if (!strcmp(a->sub, "candidates")) {
    if (!b->map_candidates) return backend_lacks(t, "covenant gpu candidates", "rank kernel schedules");
    return b->map_candidates(t, o, a->specs, a->n, a->top ? a->top : 8, stdout);
  }
  if (a->models && !strcmp(a->sub, "run")) {
    if (!b->check_model) return backend_lacks(t, "covenant gpu run", "run models on a device");
    model_inputs mi = {a->seed};
    return b->check_model(t, o, a->specs[0], a->tol, fill_inputs, &mi, stdout);
  }
  if (!strcmp(a->sub, "compile")) {
    if (!b->compile_layers || b->max_layers) return backend_lacks(t, "covenant gpu compile", "compile kernels");
    return b->compile_layers(t, o, a->specs, a->n, a->out_dir, stdout);
  }
  if (!b->run_layers) return backend_lacks(t, "covenant gpu run", "run kernels on a device");
  return b->run_layers(t, o, a->specs, a->n, stdout);
}

int cli_cmd_gpu(int argc, char **argv) {
  if (argc < 2) return cli_usage_error("gpu", "expected a subcommand: compile or run");
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage_help(stdout);
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
  backend_options o = {.notes = stderr}; /* the library prints nothing itself */
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
      case 'r': report = o.report = 1; break;
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
      case 'h': usage_help(stdout); return CLI_EXIT_OK;
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
  sub_args ga = {sub, out_dir, (const char *const *)av + optind, ac - optind, models, top, seed, tol};
  backend_target bt;
  cov_status st = backend_target_open(o.target, &bt);
  if (!st) st = dispatch(&bt, &o, &ga);
  if (bt.backend) backend_target_close(&bt);
  return cli_report(st);
}

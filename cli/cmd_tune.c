/* cli/cmd_tune.c: `covenant tune`: measured tuning of GPU kernels on the
 * device (backends/gpu/gpu_tune.h; backends/gpu/README.md, "Measured
 * tuning"): step 1 writes a tuning artifact, covenant-run --tune times it
 * on the device, step 3 (--record) writes the tuning file that
 * `covenant compile --tuning` and `covenant gpu compile --tuning` read. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"

static void tune_help(FILE *out) {
  fprintf(out,
          "usage: covenant tune LAYER...|MODEL.onnx --target T [--top N] -o TUNE_DIR\n"
          "       covenant tune --record TIMES.json -o TUNING.json\n"
          "\n"
          "Measured tuning of a model's GPU kernels, in three steps (the device has no LLVM).\n"
          "What is tuned, per kind of kernel (the key's second field):\n"
          "  matmul, conv2d  the tiled matrix kernel: tile, warp tile, stages, MMA form\n"
          "                  (schedule BMxBNxBK:WMxWN:STAGES[:wgD|:ws|:ws0|:wsp]);\n"
          "  dwconv          the channels-last depthwise kernel: output pixels per thread\n"
          "                  (schedule dwP);\n"
          "fused attention and the generic (codelet) kernels keep the compiler's schedule.\n"
          "  1. here: the compiler's pick and the mapper's top N schedules (default 8) of every\n"
          "     distinct kernel of those kinds of the LAYERs (suite names, NAME@bN, NAME@cl,\n"
          "     gemm_MxNxK) or of MODEL.onnx, keyed by kind, dims, dtype, epilogue and target,\n"
          "     compiled into TUNE_DIR (kernels, manifest.json, tune.json);\n"
          "  2. on the device: covenant-run TUNE_DIR --tune -o TIMES.json checks every candidate\n"
          "     against the pick's output on the same random inputs and times it (median);\n"
          "  3. here: covenant tune --record TIMES.json -o TUNING.json keeps, per key, the\n"
          "     fastest candidate that passed where it beats the pick by more than 1%%, and\n"
          "     prints how the mapper's predicted cycles rank the measured times (Spearman)\n"
          "     per key, per kind and pooled.\n"
          "Then covenant compile MODEL.onnx --target T --tuning TUNING.json -o ART (or covenant\n"
          "gpu compile ... --tuning) takes the recorded schedules for matching keys and the\n"
          "compiler's pick elsewhere, and names the kernels that came from the file.\n"
          "\n"
          "options:\n"
          "  -t, --target T      the GPU target (nvptx-sm90, amdgpu-gfx90a, amdgpu-gfx942)\n"
          "  -o, --output P      step 1: the tuning artifact directory; --record: the tuning file\n"
          "      --top N         candidates per key (1 to 64, default 8)\n"
          "      --record F      step 3: covenant-run's TIMES.json\n"
          "      --dtype D       input dtype f16 (default), bf16 or f32\n"
          "      --suite FILE    the layer suite (default: the shipped one)\n"
          "  -h, --help          show this help\n");
}

int cli_cmd_tune(int argc, char **argv) {
  static const struct option opts[] = {{"target", required_argument, NULL, 't'}, {"output", required_argument, NULL, 'o'},
                                       {"top", required_argument, NULL, 'N'},    {"record", required_argument, NULL, 'R'},
                                       {"dtype", required_argument, NULL, 'd'},  {"suite", required_argument, NULL, 's'},
                                       {"help", no_argument, NULL, 'h'},         {0, 0, 0, 0}};
  backend_options o = {.notes = stderr};
  const char *out = NULL, *record = NULL;
  int top = 8;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': o.target = optarg; break;
      case 'o': out = optarg; break;
      case 'R': record = optarg; break;
      case 's': o.suite = optarg; break;
      case 'd':
        o.dtype = cov_dtype_from_name(optarg);
        if (o.dtype != COV_F16 && o.dtype != COV_BF16 && o.dtype != COV_F32)
          return cli_usage_error("tune", "--dtype '%s': expected f16, bf16 or f32", optarg);
        break;
      case 'N': {
        char *end;
        long v = strtol(optarg, &end, 10);
        if (*end || v < 1 || v > 64) return cli_usage_error("tune", "--top '%s': expected 1 to 64", optarg);
        top = (int)v;
        break;
      }
      case 'h': tune_help(stdout); return CLI_EXIT_OK;
      default: return cli_bad_option("tune", argv, "t:o:h", opts);
    }
  }
  if (!out) return cli_usage_error("tune", "-o is required (the tuning artifact, or with --record the tuning file)");
  if (record && (optind < argc || o.target))
    return cli_usage_error("tune", "--record takes TIMES.json and -o only (the target is in the times)");
  if (!record && !o.target) return cli_usage_error("tune", "needs --target (nvptx-sm90, amdgpu-gfx90a, amdgpu-gfx942)");
  if (!record && optind >= argc) return cli_usage_error("tune", "needs at least one LAYER or a MODEL.onnx");
  if (record) return cli_report(backend_tune_record(record, out, stdout));
  backend_target bt;
  cov_status st = backend_target_open(o.target, &bt);
  if (!st && !bt.backend->tune_prepare) st = backend_lacks(&bt, "covenant tune", "tune kernels on a device");
  if (!st) st = bt.backend->tune_prepare(&bt, &o, (const char *const *)argv + optind, argc - optind, top, out, stdout);
  backend_target_close(&bt);
  return cli_report(st);
}

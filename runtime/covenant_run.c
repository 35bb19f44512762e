/* runtime/covenant_run.c: `covenant-run ARTIFACT ...`: runs a compiled
 * model (an artifact from `covenant compile MODEL --target T -o ART`) on
 * the device its target names, without the compiler (no LLVM, no Jansson). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/c_locale.h"
#include "runtime/crt.h"
#include "runtime/crt_tune.h"
#include "common/loc.h"
#include "common/text.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_NO_DEVICE = 4 };

static void usage(FILE *out) {
  fprintf(out,
          "usage: covenant-run ARTIFACT [--input [NAME=]X.npy]... [-o Y.npy | --output-dir DIR]\n"
          "                    [--iters N] [--warmup N] [--no-graph] [--target T] [--seed N]\n"
          "                    [--max-insns N] [--max-work N] [--max-dynamic N] [--profile N]\n"
          "       covenant-run ARTIFACT --cases DIR\n"
          "       covenant-run ARTIFACT --info\n"
          "       covenant-run TUNE_DIR --tune [-o TIMES.json] [--iters N] [--reps N] [--tolerance X]\n"
          "\n"
          "Runs a compiled model (covenant compile MODEL --target T -o ARTIFACT) on the\n"
          "device its target's backend names: the CUDA driver, HIP, or the NPU simulator\n"
          "(full build only). Weights are uploaded once; every step runs on the device,\n"
          "intermediates stay there.\n"
          "\n"
          "  --input [NAME=]X.npy  a model input (in the model's order without NAME=);\n"
          "                        inputs not given are random (--seed): floats in [-1, 1),\n"
          "                        i8/u8 over their range, bool 0/1, i32/i64 in the range the\n"
          "                        artifact records (token ids: the rows of their table)\n"
          "  -o Y.npy              write the (single) output\n"
          "  --output-dir DIR      write every output as DIR/<index>.npy\n"
          "  --cases DIR           run DIR/0, DIR/1, ... each holding in<k>.npy (input k),\n"
          "                        writing out<k>.npy beside them (weights loaded once)\n"
          "  --iters N             time N runs of the steps (after --warmup, default 10);\n"
          "                        CUDA: events around replays of one CUDA graph\n"
          "  --no-graph            time plain launches instead of the graph\n"
          "  --profile N           CUDA: N runs with every step also launched alone 10 times\n"
          "                        between two events: per-step mean times, slowest first\n"
          "  --target T            refuse an artifact compiled for another target\n"
          "  --info                print what the artifact holds; no device needed\n"
          "  --max-insns N         NPU: refuse a program whose loop nest runs more than N\n"
          "                        instructions (default 2^24 = 16777216), before anything runs\n"
          "  --max-work N          NPU: likewise for its element work (gemm multiply-adds,\n"
          "                        DMA and vector elements; default 2^34 = 17179869184)\n"
          "  --max-dynamic N       a value whose size is set at run time (a part step's\n"
          "                        output) may hold at most N elements in a run (default:\n"
          "                        its capacity); more is an error naming the value\n"
          "  --tune                TUNE_DIR is a tuning artifact (covenant tune ... -o TUNE_DIR):\n"
          "                        checks every candidate kernel against the compiler's pick on\n"
          "                        the same random inputs (--seed), times each (--iters launches\n"
          "                        per repetition, default 20; median of --reps, default 7,\n"
          "                        alternating) and writes -o TIMES.json (default times.json)\n"
          "                        for covenant tune --record; CUDA only\n"
          "  --tolerance X         --tune: largest max|x - ref| / max|ref| (default 5e-3)\n"
          "\n"
          "Exit status: 0 ok, 1 error, 2 usage, 4 no device or driver for the target.\n");
}

static int fail_with(cov_status st) {
  int dev = cov_status_code(st) == COV_DEVICE_ERROR;
  fprintf(stderr, "covenant-run: ");
  cov_status_print(stderr, st, 0);
  cov_status_free(st);
  return dev ? EXIT_NO_DEVICE : EXIT_FAIL;
}

/* A manifest string as it may be printed: control bytes escaped
 * (common/text.h), so an artifact cannot clear the screen, ring the bell or
 * forge a line of this listing. */
#define SHOW(s, buf) common_escape((s), (buf), sizeof(buf))

/* A host or control step (format version 5). */
static void info_control(const crt_artifact *a, int i) {
  static const char *const names[] = {"copy", "host", "loop", "next", "if", "jump", "part"};
  const crt_step *s = &a->steps[i];
  char e1[512], e2[512];
  printf("step %d: %s", i, names[s->op - CRT_STEP_COPY]);
  if (s->op == CRT_STEP_COPY)
    printf(" '%s' -> '%s'", SHOW(a->buffers[s->refs[0]].name, e1), SHOW(a->buffers[s->refs[1]].name, e2));
  if (s->op == CRT_STEP_HOST)
    printf(" codelet %s -> '%s'", SHOW(s->codelet, e1), SHOW(a->buffers[s->views[s->n_views - 1].buffer].name, e2));
  if (s->op == CRT_STEP_LOOP) printf(" to step %d", s->target);
  if (s->op == CRT_STEP_NEXT)
    printf(" back to step %d, %d carried value(s), %d scan output(s)", s->target, s->n_carry,
           (s->n_refs - 1) / 2 - s->n_carry);
  if (s->op == CRT_STEP_IF) printf(" '%s', else step %d", SHOW(a->buffers[s->refs[0]].name, e1), s->target);
  if (s->op == CRT_STEP_JUMP) printf(" to step %d", s->target);
  if (s->op == CRT_STEP_PART)
    printf(" of the model: %d value(s) in, %d out, first '%s'", s->n_in, s->n_refs - s->n_in,
           SHOW(s->values[s->n_in], e1));
  printf(" (group %d, %s)\n", s->group, SHOW(s->label, e1));
}

static void info_steps(const crt_artifact *a) {
  char e1[512], e2[512], e3[512];
  for (int i = 0; i < a->n_steps; i++) {
    const crt_step *s = &a->steps[i];
    if (s->op == CRT_STEP_LAUNCH)
      printf("step %d: launch %s grid [%u, %u, %u] block [%u, %u, %u] shared %u (group %d, %s)\n", i,
             SHOW(s->kernel, e1), s->grid[0], s->grid[1], s->grid[2], s->block[0], s->block[1], s->block[2],
             s->shared_bytes, s->group, SHOW(s->label, e2));
    else if (s->op == CRT_STEP_FILL)
      printf("step %d: fill %" PRIu64 " bytes of '%s' with %u (group %d, %s)\n", i, s->bytes,
             SHOW(a->buffers[s->buffer].name, e1), s->value, s->group, SHOW(s->label, e2));
    else if (s->op == CRT_STEP_NPU)
      printf("step %d: npu program '%s' (group %d, %s)\n", i, SHOW(a->blobs[s->blob].name, e1), s->group,
             SHOW(s->label, e2));
    else
      info_control(a, i);
  }
  for (int i = 0; i < a->n_missing; i++) printf("not compiled: %s\n", SHOW(a->missing[i], e3));
}

static void info(const crt_artifact *a) {
  char f[1024], t[512], b[512], ar[512], m[512], p[512];
  printf("artifact %s: format version %u, target %s (backend %s, arch %s), model %s, by %s\n", SHOW(a->file, f),
         a->version, SHOW(a->target, t), SHOW(a->backend, b), SHOW(a->arch, ar), SHOW(a->model, m),
         SHOW(a->producer, p));
  if (a->acg_blob >= 0) printf("embeds its ACG (blob '%s')\n", SHOW(a->blobs[a->acg_blob].name, t));
  uint64_t inter = 0;
  for (int i = 0; i < a->n_buffers; i++)
    if (a->buffers[i].kind == CRT_BUF_INTERMEDIATE) inter += a->buffers[i].bytes;
  printf("%d blobs (%" PRIu64 " bytes), %d modules, %d buffers, %d steps; weights %" PRIu64
         " bytes; arena %" PRIu64 " bytes for %" PRIu64 " bytes of intermediates\n",
         a->n_blobs, a->data_bytes, a->n_modules, a->n_buffers, a->n_steps, a->weight_bytes, a->arena_bytes, inter);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < (k ? a->n_outputs : a->n_inputs); i++) {
      const crt_io *io = k ? &a->outputs[i] : &a->inputs[i];
      printf("%s %d '%s': %s[", k ? "output" : "input", i, SHOW(io->name, m), cov_dtype_name(io->dtype));
      for (int d = 0; d < io->rank; d++) printf("%s%" PRId64, d ? ", " : "", io->shape[d]);
      printf("] (buffer %s)", cov_dtype_name(a->buffers[io->buffer].dtype));
      for (int d = 0, n = 0; d < io->rank; d++)
        if (io->symbolic >> d & 1u) printf("%s%d", n++ ? ", " : "; symbolic in the model: dim ", d);
      if (io->has_range) printf("; values in [%" PRId64 ", %" PRId64 "]", io->lo, io->hi);
      unsigned dyn = a->buffers[io->buffer].dynamic;
      for (int d = 0, n = 0; d < io->rank; d++)
        if (dyn >> d & 1u) printf("%s%d", n++ ? ", " : "; its capacity, set at run time: dim ", d);
      printf("\n");
    }
  crt_traffic tr;
  crt_artifact_traffic(a, &tr);
  printf("per inference: %d kernel launches, %d fills, %d npu programs; %" PRIu64
         " bytes of activations moved between kernels (%" PRIu64 " f32, %" PRIu64 " 16-bit, %" PRIu64 " zeroed by fills)\n",
         tr.launches, tr.fills, tr.npu, tr.act_bytes, tr.f32_bytes, tr.half_bytes, tr.fill_bytes);
  for (int i = 0; i < a->n_steps; i++)
    if (a->steps[i].op == CRT_STEP_LOOP) {
      printf("(each loop's body counted once: a run repeats it as often as the loop goes round)\n");
      break;
    }
  info_steps(a);
}

static cov_status random_input(const crt_io *io, uint64_t *seed, cov_tensor *t) {
  COV_RETURN_IF_ERROR(cov_tensor_alloc(t, io->dtype, io->rank, io->shape));
  if (io->has_range && (io->lo < -(INT64_C(1) << 62) || io->hi > (INT64_C(1) << 62)))
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, io->name), "input '%s': range wider than 2^63: give it with --input",
                     common_escape(io->name, (char[512]){0}, 512));
  int64_t n = cov_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    float v = (float)((double)(*seed >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
    uint8_t byte = (uint8_t)(*seed >> 56); /* i8 / u8: the whole range; bool: 0 or 1 */
    if (io->dtype == COV_F32) ((float *)t->data)[i] = v;
    else if (io->dtype == COV_F16) ((uint16_t *)t->data)[i] = cov_f32_to_f16(v);
    else if (io->dtype == COV_BF16) ((uint16_t *)t->data)[i] = cov_f32_to_bf16(v);
    else if (io->dtype == COV_I8 || io->dtype == COV_U8) ((uint8_t *)t->data)[i] = byte;
    else if (io->dtype == COV_BOOL) ((uint8_t *)t->data)[i] = byte >> 7;
    else if (io->has_range && (io->dtype == COV_I32 || io->dtype == COV_I64)) {
      /* the range the compiler recorded (token ids: the rows of their table) */
      uint64_t span = (uint64_t)io->hi - (uint64_t)io->lo + 1u;
      int64_t x = (int64_t)((uint64_t)io->lo + (span ? (*seed >> 11) % span : *seed >> 11));
      if (io->dtype == COV_I64) ((int64_t *)t->data)[i] = x;
      else ((int32_t *)t->data)[i] = (int32_t)x;
    } else /* i32 / i64 without a range: token ids and the like have ranges only the model knows */
      return cov_error(COV_UNSUPPORTED, COV_AT(NULL, io->name), "input '%s' is %s: give it with --input",
                       common_escape(io->name, (char[512]){0}, 512), cov_dtype_name(io->dtype));
  }
  return NULL;
}

static int is_dir(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* --cases DIR: DIR/<i>/in<k>.npy -> DIR/<i>/out<k>.npy */
static cov_status run_cases(crt_session *s, const crt_artifact *a, const char *dir, int *count) {
  cov_tensor *in = calloc((size_t)a->n_inputs + 1, sizeof *in), *out = calloc((size_t)a->n_outputs + 1, sizeof *out);
  if (!in || !out) {
    free(in), free(out);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  cov_status st = NULL;
  *count = 0;
  for (int c = 0; !st; c++) {
    char cdir[4096], path[4200];
    snprintf(cdir, sizeof cdir, "%s/%d", dir, c);
    if (!is_dir(cdir)) break;
    for (int k = 0; k < a->n_inputs && !st; k++) {
      snprintf(path, sizeof path, "%s/in%d.npy", cdir, k);
      st = cov_npy_read(path, &in[k]);
    }
    if (!st) st = crt_session_run(s, in, (size_t)a->n_inputs, out, (size_t)a->n_outputs);
    for (int k = 0; k < a->n_outputs && !st; k++) {
      snprintf(path, sizeof path, "%s/out%d.npy", cdir, k);
      st = cov_npy_write(path, &out[k]);
    }
    for (int k = 0; k < a->n_inputs; k++) cov_tensor_release(&in[k]);
    for (int k = 0; k < a->n_outputs; k++) cov_tensor_release(&out[k]);
    if (st) st = cov_status_annotate(st, "case %s: ", cdir);
    else (*count)++;
  }
  free(in), free(out);
  return st;
}

/* The inputs: --input NAME=PATH by name, PATH in order, the rest random. */
static cov_status read_inputs(const crt_artifact *a, const char *const *inputs, int n_in, uint64_t *seed,
                              cov_tensor *in) {
  cov_status st = NULL;
  for (int i = 0; i < n_in && !st; i++) {
    const char *eq = strchr(inputs[i], '='), *path = inputs[i];
    int k = i;
    if (eq) {
      k = -1;
      for (int j = 0; j < a->n_inputs; j++)
        if (strlen(a->inputs[j].name) == (size_t)(eq - inputs[i]) &&
            !strncmp(a->inputs[j].name, inputs[i], (size_t)(eq - inputs[i])))
          k = j;
      path = eq + 1;
      if (k < 0)
        st = cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, "--input"), "--input %s: the model has no input of that name",
                       inputs[i]);
    } else if (k >= a->n_inputs) {
      st = cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, "--input"), "--input %s: the model takes %d input(s)", inputs[i],
                     a->n_inputs);
    }
    if (!st && in[k].data)
      st = cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, "--input"), "input '%s' given twice",
                     common_escape(a->inputs[k].name, (char[512]){0}, 512));
    if (!st) st = cov_npy_read(path, &in[k]);
  }
  for (int k = 0; k < a->n_inputs && !st; k++)
    if (!in[k].data) st = random_input(&a->inputs[k], seed, &in[k]);
  return st;
}

/* Each output's first values on stdout, and into --output or --output-dir. */
static cov_status write_outputs(const crt_artifact *a, const cov_tensor *out, const char *out_file,
                                const char *out_dir) {
  cov_status st = NULL;
  for (int k = 0; k < a->n_outputs && !st; k++) {
    int64_t n = cov_tensor_numel(&out[k]);
    char shown[512];
    printf("output '%s': %s, %" PRId64 " values:", SHOW(a->outputs[k].name, shown), cov_dtype_name(out[k].dtype), n);
    for (int64_t i = 0; i < n && i < 6 && out[k].dtype == COV_F32; i++) printf(" %.6g", ((float *)out[k].data)[i]);
    printf("%s\n", n > 6 ? " ..." : "");
    if (out_file) st = cov_npy_write(out_file, &out[k]);
    if (out_dir) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%d.npy", out_dir, k);
      st = cov_npy_write(path, &out[k]);
    }
  }
  return st;
}

/* Per-step times, slowest first, with each one's share of the sum. */
static cov_status print_profile(crt_session *s, const crt_artifact *a, int runs) {
  double *ms = calloc((size_t)a->n_steps + 1, sizeof *ms);
  int *order = calloc((size_t)a->n_steps + 1, sizeof *order);
  cov_status st = ms && order ? crt_session_profile(s, runs, ms) : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  double total = 0;
  int n = 0;
  for (int i = 0; !st && i < a->n_steps; i++)
    if (a->steps[i].op < CRT_STEP_COPY) total += ms[i], order[n++] = i;
  for (int i = 1; i < n; i++) /* insertion sort: slowest first, then step order */
    for (int j = i; j > 0 && ms[order[j]] > ms[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1], order[j - 1] = t;
    }
  if (!st) printf("profile: %d device step(s), %.4f ms per run summed (mean of %d runs, each step timed alone)\n", n,
                  total, runs);
  char e1[512], e2[512];
  for (int k = 0; !st && k < n; k++) {
    const crt_step *x = &a->steps[order[k]];
    printf("  %8.4f ms %5.1f%%  step %d %s grid [%u, %u, %u] block [%u, %u, %u] (group %d, %s)\n", ms[order[k]],
           total > 0 ? 100 * ms[order[k]] / total : 0.0, order[k],
           x->op == CRT_STEP_LAUNCH ? SHOW(x->kernel, e1) : x->op == CRT_STEP_FILL ? "fill" : "npu", x->grid[0],
           x->grid[1], x->grid[2], x->block[0], x->block[1], x->block[2], x->group, SHOW(x->label, e2));
  }
  free(ms), free(order);
  return st;
}

/* The command line. */
typedef struct run_args {
  const char *inputs[64], *out_file, *out_dir, *cases;
  int n_in, iters, warmup, show_info, tune, reps, profile;
  double tolerance;
  uint64_t seed;
  crt_options opts;
} run_args;

/* An integer >= 1 (a limit); 0 after saying what is wrong. */
static int positive(const char *opt, const char *arg, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  *out = strtoull(arg, &end, 10);
  if (errno || *end || !(*arg >= '0' && *arg <= '9') || !*out) {
    fprintf(stderr, "covenant-run: %s takes an integer >= 1, not '%s'\n", opt, arg);
    return 0;
  }
  return 1;
}

/* Options that do not go together; -1, or EXIT_USAGE after saying why. */
static int check_combination(const run_args *r, int argc) {
  if (optind != argc - 1) {
    fprintf(stderr, "covenant-run: expected one ARTIFACT\n");
    usage(stderr);
    return EXIT_USAGE;
  }
  if (r->tune && (r->n_in || r->out_dir || r->cases || r->show_info)) {
    fprintf(stderr, "covenant-run: --tune takes -o, --iters, --reps, --tolerance and --seed only\n");
    return EXIT_USAGE;
  }
  if (!r->tune && (r->reps || r->tolerance >= 0)) {
    fprintf(stderr, "covenant-run: --reps and --tolerance are for --tune\n");
    return EXIT_USAGE;
  }
  if (r->profile && (r->tune || r->cases || r->show_info)) {
    fprintf(stderr, "covenant-run: --profile times one artifact's steps on its inputs: not with --tune, --cases or --info\n");
    return EXIT_USAGE;
  }
  if (r->cases && (r->n_in || r->out_file || r->out_dir)) {
    fprintf(stderr, "covenant-run: --cases takes its inputs and writes its outputs in DIR\n");
    return EXIT_USAGE;
  }
  return -1;
}

/* Parses the options into r; -1, or the exit code when done (help, a usage error). */
static int parse_args(int argc, char **argv, run_args *r) {
  enum { OPT_ITERS = 256, OPT_WARMUP, OPT_NO_GRAPH, OPT_TARGET, OPT_SEED, OPT_INFO, OPT_CASES, OPT_OUTDIR, OPT_TUNE,
         OPT_REPS, OPT_TOL, OPT_MAX_INSNS, OPT_MAX_WORK, OPT_MAX_DYNAMIC, OPT_PROFILE };
  static const struct option longs[] = {{"input", required_argument, NULL, 'i'},
                                        {"output", required_argument, NULL, 'o'},
                                        {"output-dir", required_argument, NULL, OPT_OUTDIR},
                                        {"iters", required_argument, NULL, OPT_ITERS},
                                        {"warmup", required_argument, NULL, OPT_WARMUP},
                                        {"no-graph", no_argument, NULL, OPT_NO_GRAPH},
                                        {"target", required_argument, NULL, OPT_TARGET},
                                        {"seed", required_argument, NULL, OPT_SEED},
                                        {"info", no_argument, NULL, OPT_INFO},
                                        {"cases", required_argument, NULL, OPT_CASES},
                                        {"tune", no_argument, NULL, OPT_TUNE},
                                        {"reps", required_argument, NULL, OPT_REPS},
                                        {"profile", required_argument, NULL, OPT_PROFILE},
                                        {"tolerance", required_argument, NULL, OPT_TOL},
                                        {"max-insns", required_argument, NULL, OPT_MAX_INSNS},
                                        {"max-work", required_argument, NULL, OPT_MAX_WORK},
                                        {"max-dynamic", required_argument, NULL, OPT_MAX_DYNAMIC},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "i:o:h", longs, NULL)) != -1) {
    char *end = NULL;
    switch (c) {
      case 'i':
        if (r->n_in == 64) {
          fprintf(stderr, "covenant-run: at most 64 --input\n");
          return EXIT_USAGE;
        }
        r->inputs[r->n_in++] = optarg;
        break;
      case 'o': r->out_file = optarg; break;
      case OPT_OUTDIR: r->out_dir = optarg; break;
      case OPT_TUNE: r->tune = 1; break;
      case OPT_TOL:
        r->tolerance = common_strtod(optarg, &end);
        if (*end || !*optarg || !(r->tolerance >= 0 && r->tolerance < 1e30)) {
          fprintf(stderr, "covenant-run: --tolerance takes a number >= 0, not '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case OPT_PROFILE:
      case OPT_REPS:
      case OPT_ITERS:
      case OPT_WARMUP: {
        errno = 0;
        long v = strtol(optarg, &end, 10);
        int lo = c != OPT_WARMUP;
        const char *name = c == OPT_ITERS ? "--iters" : c == OPT_REPS ? "--reps" : c == OPT_PROFILE ? "--profile" : "--warmup";
        long hi = c == OPT_REPS || c == OPT_PROFILE ? 1000 : 1000000;
        if (errno || *end || v < lo || v > hi) {
          fprintf(stderr, "covenant-run: %s takes an integer in [%d, %ld], not '%s'\n", name, lo, hi, optarg);
          return EXIT_USAGE;
        }
        *(c == OPT_ITERS ? &r->iters : c == OPT_REPS ? &r->reps : c == OPT_PROFILE ? &r->profile : &r->warmup) = (int)v;
        break;
      }
      case OPT_SEED:
        errno = 0; /* digits only: strtoull would wrap "-1" to 2^64 - 1 */
        r->seed = strtoull(optarg, &end, 10);
        if (errno || *end || !*optarg || strspn(optarg, "0123456789") != strlen(optarg)) {
          fprintf(stderr, "covenant-run: --seed takes a non-negative integer, not '%s'\n", optarg);
          return EXIT_USAGE;
        }
        break;
      case OPT_MAX_INSNS:
      case OPT_MAX_WORK:
      case OPT_MAX_DYNAMIC:
        if (!positive(c == OPT_MAX_INSNS ? "--max-insns" : c == OPT_MAX_WORK ? "--max-work" : "--max-dynamic", optarg,
                      c == OPT_MAX_INSNS ? &r->opts.max_npu_insns
                      : c == OPT_MAX_WORK ? &r->opts.max_npu_work : &r->opts.max_dynamic_elems))
          return EXIT_USAGE;
        break;
      case OPT_NO_GRAPH: r->opts.no_graph = 1; break;
      case OPT_TARGET: r->opts.expect_target = optarg; break;
      case OPT_INFO: r->show_info = 1; break;
      case OPT_CASES: r->cases = optarg; break;
      case 'h': usage(stdout); return EXIT_OK;
      default: usage(stderr); return EXIT_USAGE;
    }
  }
  return check_combination(r, argc);
}

int main(int argc, char **argv) {
  run_args r = {.warmup = 3, .seed = 1, .tolerance = -1};
  int rc = parse_args(argc, argv, &r);
  if (rc >= 0) return rc;
  if (r.tune) {
    crt_tune_options to = {r.seed, r.iters ? r.iters : 20, r.reps ? r.reps : 7, r.tolerance >= 0 ? r.tolerance : 5e-3};
    cov_status ts = crt_tune_run(argv[optind], &to, r.out_file ? r.out_file : "times.json", stdout);
    if (!ts) printf("wrote %s\n", r.out_file ? r.out_file : "times.json");
    return ts ? fail_with(ts) : EXIT_OK;
  }
  const char *const *inputs = r.inputs, *out_file = r.out_file, *out_dir = r.out_dir, *cases = r.cases;
  int n_in = r.n_in, iters = r.iters, warmup = r.warmup;
  uint64_t seed = r.seed;
  crt_options opts = r.opts;
  crt_artifact *a = NULL;
  cov_status st = crt_artifact_load(argv[optind], &a);
  if (st) return fail_with(st);
  if (r.show_info) {
    info(a);
    crt_artifact_free(a);
    return EXIT_OK;
  }
  if (out_file && a->n_outputs != 1) {
    fprintf(stderr, "covenant-run: the model has %d outputs: use --output-dir DIR\n", a->n_outputs);
    crt_artifact_free(a);
    return EXIT_USAGE;
  }
  cov_tensor *in = calloc((size_t)a->n_inputs + 1, sizeof *in), *out = calloc((size_t)a->n_outputs + 1, sizeof *out);
  crt_session *s = NULL;
  if (!in || !out) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  /* --cases reads every case's inputs from its folder: none made up here */
  if (!st && !cases) st = read_inputs(a, inputs, n_in, &seed, in);
  if (!st && !cases) st = crt_check_inputs(a, in, (size_t)a->n_inputs); /* before opening a device */
  if (!st) st = crt_session_open(a, &opts, &s);
  if (!st) printf("device: %s\n", crt_session_device(s));
  if (!st && cases) {
    int count = 0;
    st = run_cases(s, a, cases, &count);
    if (!st) printf("ran %d case(s) from %s\n", count, cases);
  } else if (!st) {
    st = crt_session_run(s, in, (size_t)a->n_inputs, out, (size_t)a->n_outputs);
    if (!st) st = write_outputs(a, out, out_file, out_dir);
  }
  if (!st && iters) {
    double ms = 0;
    const char *how = "";
    st = crt_session_time(s, warmup, iters, &ms, &how);
    if (!st) printf("time: %.4f ms per run (mean of %d runs after %d warm-up; %s)\n", ms, iters, warmup, how);
  }
  if (!st && r.profile) st = print_profile(s, a, r.profile);
  for (int k = 0; in && k < a->n_inputs; k++) cov_tensor_release(&in[k]);
  for (int k = 0; out && k < a->n_outputs; k++) cov_tensor_release(&out[k]);
  free(in), free(out);
  crt_session_close(s);
  crt_artifact_free(a);
  return st ? fail_with(st) : EXIT_OK;
}

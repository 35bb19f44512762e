/* cli/cmd_run.c: `covenant run MODEL.onnx`: a model run on a target, read
 * like iree-run-module or `tvmc run`: a header (model, target), the inputs,
 * each output as one line (shape, dtype, min/max/mean, the first values),
 * the check (against an expected output when one is given or shipped next
 * to the input, else against the reference target), what the backend's
 * report adds (an NPU run: its own check and the per-group table), and wall
 * times.
 *
 * Steps, one function each: parse the options (run_parse), load the model
 * and target (run_load), bind files to inputs, outputs and expected
 * outputs (bind_names), read them (read_inputs), run (run_target, run_ref),
 * then report (print_header, print_outputs, write_outputs, check_outputs,
 * and the report entries of the target's backend). The target opens
 * through the backend registry, and every backend runs through its row's
 * run_model. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"
#include "common/loc.h"
#include "common/text.h"
#include "covenant/model.h"
#include "covenant/tensor.h"

#define MAX_ARGS 256

static void run_help(FILE *out) {
  fprintf(out,
          "usage: covenant run MODEL.onnx [--target T] [--input [NAME=]FILE]... [-o OUT]...\n"
          "       covenant run MODEL.onnx MODEL.onnx... [--target T] [--seed N] [--tolerance X]\n"
          "       covenant run MODEL.onnx --pipeline N [--target T] [--seed N] [--tolerance X]\n"
          "                               [--expect [NAME=]FILE]... [--print-values]\n"
          "                               [--trace FILE] [--per-call]\n"
          "\n"
          "Runs an ONNX model. On an NPU target (default " BACKEND_DEFAULT_TARGET ", any ACG with a systolic\n"
          "array) every compute layer group (conv+bias+relu+maxpool, gemm+bias, ...) is\n"
          "mapped as one layer, compiled to one NPU program and run in the cycle simulator,\n"
          "its intermediates kept on chip; a group that cannot be fused runs call by call\n"
          "(a program per call), a call the NPU path cannot take on the CPU, each listed\n"
          "with the reason. The target 'ref' is the CPU reference: layout operations run in\n"
          "the frontend, every compute operation through the codelet interpreter (the\n"
          "oracle all accelerator targets are checked against). On a GPU target (nvptx-*,\n"
          "amdgpu-*) the model is compiled whole into one artifact (as covenant compile\n"
          "writes it) and run on the device through the runtime (CUDA driver, HIP);\n"
          "without a device that is an error naming the driver.\n"
          "\n"
          "Prints the model and target, each input and output on one line (shape, dtype,\n"
          "min/max/mean, first values), the check, and on an NPU the per-group table\n"
          "(simulated cycles, the mapper's estimate and its error, utilisation, bytes)\n"
          "and wall times. The check compares with the expected outputs: --expect, or\n"
          "STEM_output.npy next to an input STEM_input.npy (as examples/ ships them, made\n"
          "by numpy); without expected outputs, an NPU run is checked against --target\n"
          "ref on the same inputs.\n"
          "\n"
          "Several models are co-scheduled (an NPU of several cores, e.g. npu-4core): each runs\n"
          "on cores of its own, divided by the mapper's estimate of each model on each core\n"
          "count, all at once sharing DRAM, on random inputs (--seed); each is checked like\n"
          "one model (its programs, then its outputs against --target ref), and the report\n"
          "gives each model's latency, the combined throughput and the same against running\n"
          "them one after the other on all the cores (backends/npu-sim/README.md).\n"
          "\n"
          "examples:\n"
          "  covenant run examples/convnet.onnx --input examples/convnet_input.npy\n"
          "  covenant run examples/convnet.onnx --target ref -o /tmp/y.npy\n"
          "  covenant run examples/convnet.onnx resnet18_64.onnx --target npu-4core\n"
          "\n"
          "options:\n"
          "  -t, --target T            " BACKEND_DEFAULT_TARGET " (default), another NPU ACG, ref, or a GPU\n"
          "                            target ('covenant targets' lists them)\n"
          "  -i, --input [NAME=]FILE   an input, from a .npy file or an ONNX TensorProto\n"
          "                            (.pb). Without NAME=, inputs are taken in the\n"
          "                            model's order. Inputs not given are random.\n"
          "                            A sequence or optional input (--target ref only):\n"
          "                            an ONNX SequenceProto / OptionalProto (.pb) or a\n"
          "                            folder of 0.npy, 1.npy, ... in element order.\n"
          "      --seed N              seed of the random values for inputs not given (1)\n"
          "  -e, --expect [NAME=]FILE  an expected output (.npy or .pb) to check against\n"
          "      --tolerance X         largest accepted max|out-expected|/max|expected|\n"
          "                            (default 1e-2; schedules may round multiplicands\n"
          "                            to f16, bf16, e4m3 or e5m2: on an NPU, once every\n"
          "                            program matches the reference on operands rounded\n"
          "                            to the schedule's dtypes to 1e-4, up to 10x this,\n"
          "                            or 2^(2-p) for the narrowest dtype's p significand\n"
          "                            bits (e4m3 0.25, e5m2 0.5), is that rounding)\n"
          "  -o, --output [NAME=]OUT   write outputs as .npy files. NAME=FILE writes that\n"
          "                            output; a plain OUT takes the next output in order,\n"
          "                            unless OUT is a directory: then every output goes to\n"
          "                            OUT/output_<i>.npy (the ONNX test-data numbering).\n"
          "                            A sequence or optional output is written as a folder\n"
          "                            (OUT/output_<i>/) of 0.npy, 1.npy, ... (none: empty).\n"
          "  -p, --print-values        print every value of each output (as text)\n"
          "      --trace FILE          (NPU) write a Chrome/Perfetto trace of the whole run:\n"
          "                            every unit's activity, the programs back to back\n"
          "                            (1 us = 1 cycle), a 'layers' track naming each\n"
          "      --per-call            (NPU) do not fuse groups: one program per codelet call\n"
          "      --pipeline N          (an NPU of several cores) the model's programs cut into stages of\n"
          "                            consecutive programs, one core each, run for a stream of N inputs\n"
          "                            (random, --seed), against layer by layer on all the cores\n"
          "      --shape NAME=DIMS     input NAME's shape (e.g. input=3x3x32x32), binding the\n"
          "                            dims the model leaves symbolic; repeatable. Random\n"
          "                            inputs take it; on a GPU target the model is compiled\n"
          "                            for it\n"
          "      --max-memory SIZE     largest tensor the model may make (default 2GiB, at\n"
          "                            most 4GiB); checked before anything is allocated\n"
          "      --recurrent-cells     describe each time step of an LSTM, GRU or RNN node\n"
          "                            as one codelet call (lstm_cell, gru_cell, rnn_cell)\n"
          "                            rather than its unrolled matmul and element-wise\n"
          "                            nodes, as GPU targets compile them\n"
          "  -h, --help                show this help\n");
}

/* ---- options ---------------------------------------------------------- */

typedef struct run_opts {
  const char *model, *target, *trace;
  int per_call, print_values, recurrent_cells;
  unsigned long long seed;
  uint64_t max_memory; /* 0: the default */
  double tol;
  const char *in_args[MAX_ARGS], *out_args[MAX_ARGS], *expect_args[MAX_ARGS];
  int n_in, n_out, n_expect;
  const char *models[CLI_MAX_CORUN]; /* several: co-scheduled (cmd_run_models.c) */
  int n_models;
  unsigned pipeline; /* --pipeline N (cmd_run_models.c) */
  cov_model_shape shapes[16];
  size_t n_shapes;
} run_opts;

/* Fills o from argv; returns -1 to go on, else the exit code. */
static int run_parse(int argc, char **argv, run_opts *o) {
  static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                       {"seed", required_argument, NULL, 'S'},
                                       {"tolerance", required_argument, NULL, 'T'},
                                       {"input", required_argument, NULL, 'i'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"expect", required_argument, NULL, 'e'},
                                       {"print-values", no_argument, NULL, 'p'},
                                       {"trace", required_argument, NULL, 'R'},
                                       {"per-call", no_argument, NULL, 'P'},
                                       {"max-memory", required_argument, NULL, 'M'},
                                       {"pipeline", required_argument, NULL, 'L'},
                                       {"shape", required_argument, NULL, 'H'},
                                       {"recurrent-cells", no_argument, NULL, 'C'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  *o = (run_opts){.target = BACKEND_DEFAULT_TARGET, .seed = 1, .tol = 1e-2};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:i:o:e:ph", opts, NULL)) != -1) {
    switch (c) {
      case 't': o->target = optarg; break;
      case 'S':
        if (cli_parse_seed("run", optarg, &o->seed)) return CLI_EXIT_USAGE;
        break;
      case 'T':
        if (cli_parse_tolerance("run", optarg, &o->tol)) return CLI_EXIT_USAGE;
        break;
      case 'i':
        if (o->n_in == MAX_ARGS) return cli_usage_error("run", "too many --input options");
        o->in_args[o->n_in++] = optarg;
        break;
      case 'o':
        if (o->n_out == MAX_ARGS) return cli_usage_error("run", "too many --output options");
        o->out_args[o->n_out++] = optarg;
        break;
      case 'e':
        if (o->n_expect == MAX_ARGS) return cli_usage_error("run", "too many --expect options");
        o->expect_args[o->n_expect++] = optarg;
        break;
      case 'p': o->print_values = 1; break;
      case 'R': o->trace = optarg; break;
      case 'P': o->per_call = 1; break;
      case 'C': o->recurrent_cells = 1; break;
      case 'M':
        if (cli_parse_memory("run", optarg, &o->max_memory)) return CLI_EXIT_USAGE;
        break;
      case 'L': {
        char *end = NULL;
        unsigned long v = strtoul(optarg, &end, 10);
        /* (the backend bounds the stream: cov_npu_pipeline_model) */
        if (!*optarg || *end || v < 1 || v > UINT32_MAX)
          return cli_usage_error("run", "--pipeline %s: a stream of 1 input or more", optarg);
        o->pipeline = (unsigned)v;
        break;
      }
      case 'H':
        if (cli_parse_shape("run", optarg, o->shapes, &o->n_shapes, 16)) return CLI_EXIT_USAGE;
        break;
      case 'h': run_help(stdout); return CLI_EXIT_OK;
      default: return cli_bad_option("run", argv, "t:i:o:e:ph", opts);
    }
  }
  if (argc - optind < 1) return cli_usage_error("run", "takes a MODEL (got none)");
  if (argc - optind > CLI_MAX_CORUN)
    return cli_usage_error("run", "takes at most %d models to co-schedule (got %d)", CLI_MAX_CORUN, argc - optind);
  o->model = argv[optind];
  o->n_models = argc - optind;
  for (int i = 0; i < o->n_models; i++) o->models[i] = argv[optind + i];
  if (o->pipeline && o->n_models > 1) return cli_usage_error("run", "--pipeline takes one model");
  if ((o->n_models > 1 || o->pipeline) &&
      (o->n_in || o->n_out || o->n_expect || o->trace || o->per_call || o->print_values))
    return cli_usage_error("run", "--input, -o, --expect, --trace, --per-call and --print-values take one model run "
                                  "alone; co-scheduled and pipelined models run on random inputs (--seed)");
  /* (a target whose backend does not trace refuses them once it is open:
   * run_load) */
  return -1;
}

/* ---- state ------------------------------------------------------------ */

typedef struct run_state {
  const run_opts *o;
  cov_model *m;
  backend_target bt; /* the registry's backend and the ACG of the target */
  cov_acg *acg;      /* bt.acg: NULL for ref */
  size_t ni, no;
  cov_tensor *inputs, *outputs, *expected, *ref_out;
  const char **in_files;     /* where each input came from; NULL: random */
  const char **out_paths;    /* -o per output, or NULL */
  const char **expect_files; /* expected output per output, or NULL */
  char **owned;              /* strings made here (2 per output, freed at the end) */
  cov_sequence **seq_in, **seq_out; /* sequence / optional inputs and outputs */
  bool has_seq;                     /* the model has any (it runs on ref only) */
  backend_report *report; /* what the run told beyond its outputs, or NULL */
  size_t n_compute; /* compute layer groups (not layout) */
  double t_load, t_run, t_ref;
} run_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_state_free(run_state *s) {
  if (s->report) s->bt.backend->report_free(s->report);
  backend_target_close(&s->bt);
  for (size_t i = 0; s->inputs && i < s->ni; i++) cov_tensor_release(&s->inputs[i]);
  for (size_t i = 0; i < s->no; i++) {
    if (s->outputs) cov_tensor_release(&s->outputs[i]);
    if (s->expected) cov_tensor_release(&s->expected[i]);
    if (s->ref_out) cov_tensor_release(&s->ref_out[i]);
  }
  for (size_t i = 0; s->seq_in && i < s->ni; i++) cov_sequence_free(s->seq_in[i]);
  for (size_t i = 0; s->seq_out && i < s->no; i++) cov_sequence_free(s->seq_out[i]);
  free(s->seq_in);
  free(s->seq_out);
  for (size_t i = 0; s->owned && i < 2 * s->no; i++) free(s->owned[i]);
  free(s->inputs);
  free(s->outputs);
  free(s->expected);
  free(s->ref_out);
  free(s->in_files);
  free(s->out_paths);
  free(s->expect_files);
  free(s->owned);
  cov_model_free(s->m);
}

static cov_status run_load(run_state *s) {
  double t0 = now_s();
  COV_RETURN_IF_ERROR(backend_target_open(s->o->target, &s->bt));
  s->acg = s->bt.acg;
  if ((s->o->trace || s->o->per_call) && !(s->bt.backend->options & BACKEND_OPT_TRACE))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("covenant run"),
                     "--trace and --per-call are for targets whose backend traces its programs; %s is a %s "
                     "target (backend %s)", s->o->target, s->bt.backend->kind, s->bt.backend->name);
  cov_model_options mo = {.max_memory = s->o->max_memory, .shapes = s->o->shapes, .n_shapes = s->o->n_shapes,
                          .recurrent_cells = s->o->recurrent_cells};
  COV_RETURN_IF_ERROR(cov_model_load_file(s->o->model, &mo, &s->m));
  s->ni = cov_model_num_inputs(s->m);
  s->no = cov_model_num_outputs(s->m);
  size_t ni = s->ni ? s->ni : 1, no = s->no ? s->no : 1;
  s->inputs = calloc(ni, sizeof *s->inputs);
  s->in_files = calloc(ni, sizeof *s->in_files);
  s->outputs = calloc(no, sizeof *s->outputs);
  s->expected = calloc(no, sizeof *s->expected);
  s->ref_out = calloc(no, sizeof *s->ref_out);
  s->out_paths = calloc(no, sizeof *s->out_paths);
  s->expect_files = calloc(no, sizeof *s->expect_files);
  s->owned = calloc(2 * no, sizeof *s->owned);
  s->seq_in = calloc(ni, sizeof *s->seq_in);
  s->seq_out = calloc(no, sizeof *s->seq_out);
  if (!s->inputs || !s->in_files || !s->outputs || !s->expected || !s->ref_out ||
      !s->out_paths || !s->expect_files || !s->owned || !s->seq_in || !s->seq_out)
    return cov_error(COV_OUT_OF_MEMORY, NULL, "covenant run: buffers for %zu inputs, %zu outputs",
                     s->ni, s->no);
  for (size_t i = 0; i < s->ni; i++) s->has_seq |= cov_model_io_kind(s->m, 0, i) != COV_VALUE_TENSOR;
  for (size_t k = 0; k < s->no; k++) s->has_seq |= cov_model_io_kind(s->m, 1, k) != COV_VALUE_TENSOR;
  if (s->has_seq && s->acg)
    return cov_error(COV_UNSUPPORTED, COV_AT_CALL("covenant run"),
                     "%s has sequence or optional inputs or outputs, which run on --target ref only",
                     s->o->model);
  s->t_load = now_s() - t0;
  return NULL;
}

/* ---- binding inputs, outputs, expected outputs ------------------------ */

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* .npy by its magic string, anything else as a TensorProto. */
static cov_status read_tensor(const char *path, cov_tensor *t) {
  FILE *f = fopen(path, "rb");
  char magic[6] = {0};
  if (f) {
    size_t got = fread(magic, 1, sizeof magic, f);
    (void)got;
    fclose(f);
  }
  if (memcmp(magic, "\x93NUMPY", 6) == 0 || ends_with(path, ".npy")) return cov_npy_read(path, t);
  return cov_onnx_tensor_read(path, t, NULL, 0);
}

/* Splits "NAME=VALUE" into name and the returned VALUE; NULL without '='. */
static const char *split_name(const char *arg, char *name, size_t size) {
  const char *eq = strchr(arg, '=');
  if (!eq || (size_t)(eq - arg) >= size) return NULL;
  memcpy(name, arg, (size_t)(eq - arg));
  name[eq - arg] = '\0';
  return eq + 1;
}

static int find_output(const cov_model *m, const char *name) {
  for (size_t k = 0; k < cov_model_num_outputs(m); k++)
    if (strcmp(cov_model_output_name(m, k), name) == 0) return (int)k;
  return -1;
}

/* "NAME=FILE" whose NAME is not one of the model's: a usage error naming
 * the values there are (and the closest), unless the whole argument is a
 * file (a path with '=' in it) or NAME holds a '/' (a directory). Checked
 * before any file is opened, so "--input output=x.npy" says there is no
 * input 'output' rather than that x.npy cannot be opened. */
static int unknown_name(const char *arg, const char *name, const cov_model *m, size_t n,
                        const char *(*name_of)(const cov_model *, size_t), const char *kind) {
  if (is_file(arg) || strchr(name, '/')) return -1;
  const char *names[65];
  char list[1024] = "", shown[256];
  size_t k = 0, len = 0;
  for (; k < n && k < 64; k++) {
    names[k] = name_of(m, k);
    len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, "%s'%s'", k ? ", " : "",
                            common_escape(names[k], shown, sizeof shown));
    if (len >= sizeof list) len = sizeof list;
  }
  names[k] = NULL;
  const char *near = cli_closest(name, names, -1);
  char hint[300] = "";
  if (near) snprintf(hint, sizeof hint, "; did you mean '%s'?", common_escape(near, shown, sizeof shown));
  return cli_usage_error("run", "%s: the model has no %.*s named '%s' (its %s: %s)%s", arg, (int)strlen(kind) - 1,
                         kind, common_escape(name, (char[256]){0}, 256), kind, list, hint);
}

/* Binds [NAME=]ARG options to slots[0..n): by name when NAME is one of the
 * model's (find; name_of lists them), else to the next free slot in order.
 * Returns -1 to go on, else the exit code (a usage error printed); `what`
 * names the options and `kind` the model's values in it. */
static int bind_args(const char *const *args, int n_args, const cov_model *m,
                     int (*find)(const cov_model *, const char *),
                     const char *(*name_of)(const cov_model *, size_t), const char **slots, size_t n,
                     const char *what, const char *kind) {
  size_t next = 0;
  for (int i = 0; i < n_args; i++) {
    char name[1024];
    const char *file = split_name(args[i], name, sizeof name);
    int idx = file ? find(m, name) : -1;
    if (file && idx < 0) {
      int rc = unknown_name(args[i], name, m, n, name_of, kind);
      if (rc >= 0) return rc;
    }
    if (idx < 0) {
      file = args[i];
      while (next < n && slots[next]) next++;
      if (next == n) {
        if (!strcmp(what, kind)) return cli_usage_error("run", "more %s than the model's %zu", what, n);
        return cli_usage_error("run", "more %s than the model's %zu %s", what, n, kind);
      }
      idx = (int)next;
    } else if (slots[idx]) {
      return cli_usage_error("run", "%.*s '%s' is given twice", (int)strlen(kind) - 1, kind, name);
    }
    slots[idx] = file;
  }
  return -1;
}

/* Which file goes where: --input, -o and --expect, and the expected output
 * shipped next to an input (STEM_output.npy beside STEM_input.npy, the
 * convention of examples/, for a one-input one-output model). Reads nothing. */
static int bind_names(run_state *s) {
  const run_opts *o = s->o;
  int rc = bind_args(o->in_args, o->n_in, s->m, cov_model_find_input, cov_model_input_name, s->in_files, s->ni,
                     "inputs", "inputs");
  if (rc >= 0) return rc;
  const char *plain[MAX_ARGS];
  int n_plain = 0;
  for (int i = 0; i < o->n_out; i++) {
    if (!is_dir(o->out_args[i])) {
      plain[n_plain++] = o->out_args[i];
      continue;
    }
    for (size_t k = 0; k < s->no; k++) {
      char *p = malloc(strlen(o->out_args[i]) + 32);
      if (!p) return cli_report(cov_error(COV_OUT_OF_MEMORY, NULL, "output paths"));
      sprintf(p, "%s/output_%zu.npy", o->out_args[i], k);
      free(s->owned[k]);
      s->owned[k] = p;
      s->out_paths[k] = p;
    }
  }
  rc = bind_args(plain, n_plain, s->m, find_output, cov_model_output_name, s->out_paths, s->no, "-o options",
                 "outputs");
  if (rc >= 0) return rc;
  rc = bind_args(o->expect_args, o->n_expect, s->m, find_output, cov_model_output_name, s->expect_files, s->no,
                 "--expect options", "outputs");
  if (rc >= 0) return rc;
  if (o->n_expect == 0 && s->no == 1 && s->ni == 1 && s->in_files[0] &&
      ends_with(s->in_files[0], "_input.npy")) {
    size_t n = strlen(s->in_files[0]) - strlen("_input.npy");
    char *p = malloc(n + sizeof "_output.npy");
    if (!p) return cli_report(cov_error(COV_OUT_OF_MEMORY, NULL, "expected output path"));
    memcpy(p, s->in_files[0], n);
    strcpy(p + n, "_output.npy");
    s->owned[s->no] = p;
    if (is_file(p)) s->expect_files[0] = p;
  }
  return -1;
}

/* Reads the inputs given (one line each) and makes the others; reads the
 * expected outputs. */
static int read_inputs(run_state *s) {
  for (size_t i = 0; i < s->ni; i++) {
    cov_status st;
    if (cov_model_io_kind(s->m, 0, i) != COV_VALUE_TENSOR) {
      if (!s->in_files[i])
        return cli_usage_error("run", "input '%s' is a sequence or an optional: give it with --input "
                               "(a SequenceProto / OptionalProto .pb, or a folder of 0.npy, 1.npy, ...)",
                               cov_model_input_name(s->m, i));
      if ((st = cli_read_sequence(s->m, i, s->in_files[i], &s->seq_in[i]))) return cli_report(st);
      printf("input '%s': %zu tensor%s from %s\n", cov_model_input_name(s->m, i),
             cov_sequence_length(s->seq_in[i]), cov_sequence_length(s->seq_in[i]) == 1 ? "" : "s",
             s->in_files[i]);
      continue;
    }
    if (s->in_files[i]) {
      if ((st = read_tensor(s->in_files[i], &s->inputs[i]))) return cli_report(st);
      const cov_tensor *t = &s->inputs[i];
      printf("input '%s': %s[", cov_model_input_name(s->m, i), cov_dtype_name(t->dtype));
      for (int d = 0; d < t->rank; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
      printf("] from %s\n", s->in_files[i]);
      continue;
    }
    if (cov_model_input_has_default(s->m, i)) {
      /* data NULL: the run takes the initializer of its name */
      printf("input '%s': the model's default (the initializer of its name)\n",
             cov_model_input_name(s->m, i));
      continue;
    }
    st = cli_random_input(s->m, i, s->o->seed, &s->inputs[i]);
    if (st && cov_status_code(st) == COV_INVALID_ARGUMENT) {
      fprintf(stderr, "covenant run: %s\n", cov_status_message(st));
      cov_status_free(st);
      return CLI_EXIT_USAGE;
    }
    if (st) return cli_report(st);
  }
  for (size_t k = 0; k < s->no; k++) {
    if (!s->expect_files[k]) continue;
    if (cov_model_io_kind(s->m, 1, k) != COV_VALUE_TENSOR)
      return cli_usage_error("run", "output '%s' is a sequence or an optional; --expect checks tensors only",
                             cov_model_output_name(s->m, k));
    cov_status st = read_tensor(s->expect_files[k], &s->expected[k]);
    if (st) return cli_report(st);
  }
  return -1;
}

/* ---- running ---------------------------------------------------------- */

/* The target's backend runs the model (with --trace, into the trace
 * file, which is opened and closed here). */
static cov_status run_target(run_state *s) {
  const run_opts *o = s->o;
  if (s->has_seq) { /* the reference target (run_load refused others) */
    double t0 = now_s();
    cov_status st = cov_model_run_ref_values(s->m, s->inputs, (const cov_sequence *const *)s->seq_in, s->ni,
                                             s->outputs, s->seq_out, s->no);
    s->t_run = now_s() - t0;
    return st;
  }
  double t0 = now_s();
  common_out trace_out = {0};
  if (o->trace) COV_RETURN_IF_ERROR(common_out_open(o->trace, &trace_out));
  backend_options bo = {.target = o->target, .per_call = o->per_call, .trace = trace_out.f, .notes = stderr};
  cov_status st = s->bt.backend->run_model(&s->bt, &bo, s->m, o->model, s->inputs, s->ni, s->outputs, s->no,
                                           &s->report);
  if (trace_out.f) /* kept after a failed run too: it shows what ran up to the failure */
    st = cov_status_join(st, common_out_commit(&trace_out));
  s->t_run = now_s() - t0;
  return st;
}

/* The reference target on the same inputs, when an accelerator's outputs
 * have no expected outputs to be checked against. */
static cov_status run_ref(run_state *s) {
  bool need = false;
  for (size_t k = 0; k < s->no; k++) need |= !s->expect_files[k];
  if ((s->bt.backend->ops & BACKEND_ORACLE) || !need) return NULL;
  double t0 = now_s();
  cov_status st = cov_model_run_ref(s->m, s->inputs, s->ni, s->ref_out, s->no);
  s->t_ref = now_s() - t0;
  return st;
}

/* ---- reporting -------------------------------------------------------- */

static double value_at(const cov_tensor *t, int64_t i) {
  switch (t->dtype) {
    case COV_F32: return ((const float *)t->data)[i];
    case COV_F64: return ((const double *)t->data)[i];
    case COV_F16: return cov_f16_to_f32(((const uint16_t *)t->data)[i]);
    case COV_BF16: return cov_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case COV_I8: return ((const int8_t *)t->data)[i];
    case COV_U8: return ((const uint8_t *)t->data)[i];
    case COV_I32: return ((const int32_t *)t->data)[i];
    case COV_I64: return (double)((const int64_t *)t->data)[i];
    case COV_I16: return ((const int16_t *)t->data)[i];
    case COV_U16: return ((const uint16_t *)t->data)[i];
    case COV_U32: return ((const uint32_t *)t->data)[i];
    case COV_U64: return (double)((const uint64_t *)t->data)[i];
    default: return ((const uint8_t *)t->data)[i];
  }
}

/* The compute layer groups (not layout) the header and the report count;
 * a group that cannot be described (out of memory) is an error, not a
 * group left out of the count. */
static cov_status count_compute(run_state *s) {
  size_t ng = cov_model_num_groups(s->m);
  for (size_t g = 0; g < ng; g++) {
    cov_model_group_info gi;
    COV_RETURN_IF_ERROR(cov_model_group_get_info(s->m, g, &gi));
    if (!gi.layout) s->n_compute++;
  }
  return NULL;
}

static void print_header(run_state *s) {
  size_t ng = cov_model_num_groups(s->m);
  printf("model:  %s (%zu input%s, %zu output%s, %zu layer groups, %zu of them compute)\n",
         s->o->model, s->ni, s->ni == 1 ? "" : "s", s->no, s->no == 1 ? "" : "s", ng,
         s->n_compute);
  if (s->acg)
    printf("target: %s (%s backend, %s)\n", cov_acg_name(s->acg), cov_acg_backend(s->acg),
           cov_acg_file(s->acg));
  else
    printf("target: ref (the CPU reference interpreter)\n");
}

/* One line: shape, dtype, min/max/mean, the first values; or every value. */
static void print_output(const char *name, const cov_tensor *t, int all) {
  printf("output '%s': %s[", name, cov_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) printf("%s%lld", i ? ", " : "", (long long)t->shape[i]);
  printf("]");
  int64_t n = cov_tensor_numel(t);
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = value_at(t, i);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
  }
  if (n) printf("  min %.5g max %.5g mean %.5g ", lo, hi, sum / (double)n);
  if (all) {
    printf("\n");
    for (int64_t i = 0; i < n; i++) {
      printf("%s%.8g", i % 8 ? " " : "  ", value_at(t, i));
      if (i % 8 == 7 || i == n - 1) printf("\n");
    }
    return;
  }
  int64_t shown = n < 6 ? n : 6;
  printf(" [");
  for (int64_t i = 0; i < shown; i++) printf("%s%.4g", i ? ", " : "", value_at(t, i));
  printf("%s]\n", shown < n ? ", ..." : "");
}

/* A sequence output into a folder: PATH, or PATH less ".npy" (-o DIR
 * names outputs DIR/output_<i>.npy; a sequence's is DIR/output_<i>/). */
static cov_status write_sequence(const char *path, const cov_sequence *seq) {
  size_t n = strlen(path);
  if (!ends_with(path, ".npy")) return cli_write_sequence(path, seq);
  char *dir = malloc(n);
  if (!dir) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  memcpy(dir, path, n - 4);
  dir[n - 4] = '\0';
  cov_status st = cli_write_sequence(dir, seq);
  free(dir);
  return st;
}

static int write_outputs(const run_state *s) {
  for (size_t k = 0; k < s->no; k++) {
    if (!s->out_paths[k]) continue;
    if (s->seq_out[k]) {
      cov_status st = write_sequence(s->out_paths[k], s->seq_out[k]);
      if (st) return cli_report(st);
      printf("wrote %s (output '%s', one .npy per element)\n", s->out_paths[k], cov_model_output_name(s->m, k));
      continue;
    }
    cov_status st = cov_npy_write(s->out_paths[k], &s->outputs[k]);
    if (st) return cli_report(st);
    printf("wrote %s (output '%s')\n", s->out_paths[k], cov_model_output_name(s->m, k));
  }
  return CLI_EXIT_OK;
}

/* max|got - want| / max|want|, or infinity when the shapes differ. */
static double rel_err(const cov_tensor *got, const cov_tensor *want) {
  int64_t n = cov_tensor_numel(want);
  if (cov_tensor_numel(got) != n || got->rank != want->rank) return INFINITY;
  for (int d = 0; d < want->rank; d++)
    if (got->shape[d] != want->shape[d]) return INFINITY;
  double md = 0, mr = 0;
  for (int64_t i = 0; i < n; i++) {
    double a = value_at(got, i), b = value_at(want, i);
    if (isfinite(b) && fabs(b) > mr) mr = fabs(b);
    if (a == b) continue; /* equal infinities (a max over nothing is -inf) differ by 0, not NaN */
    if (!(fabs(a - b) <= md)) md = fabs(a - b);
  }
  return md / (mr > 1e-30 ? mr : 1e-30);
}

/* Top-1 and top-5 agreement of a classifier's scores ([N, C], C >= 5)
 * with the reference's, per row: the same argmax; how many of the
 * reference's five best the output also ranks among its five best. */
static void print_topk(const cov_tensor *got, const cov_tensor *want) {
  if (want->rank != 2 || want->shape[1] < 5 || cov_tensor_numel(got) != cov_tensor_numel(want)) return;
  int64_t rows = want->shape[0], C = want->shape[1], top1 = 0, in5 = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t ig[5], iw[5];
    for (int k = 0; k < 5; k++) { /* the five best of each, in order */
      ig[k] = iw[k] = -1;
      for (int64_t c = 0; c < C; c++) {
        bool used_g = false, used_w = false;
        for (int j = 0; j < k; j++) used_g |= ig[j] == c, used_w |= iw[j] == c;
        if (!used_g && (ig[k] < 0 || value_at(got, r * C + c) > value_at(got, r * C + ig[k]))) ig[k] = c;
        if (!used_w && (iw[k] < 0 || value_at(want, r * C + c) > value_at(want, r * C + iw[k]))) iw[k] = c;
      }
    }
    top1 += ig[0] == iw[0];
    for (int a = 0; a < 5; a++)
      for (int b = 0; b < 5; b++) in5 += ig[a] == iw[b];
  }
  printf("    classifier: top-1 agrees on %lld of %lld rows, top-5 overlap %lld of %lld\n",
         (long long)top1, (long long)rows, (long long)in5, (long long)(5 * rows));
}

/* How far the datapath's rounding may move an output once the narrowed
 * check passed: ten times the tolerance (f16 multiplicands move a deep
 * network's outputs by up to ~1.5e-2, mobilenet_v2), or four times the
 * unit roundoff of the narrowest dtype the operands were rounded to,
 * 2^(2-p) for p significand bits, where that is larger: 0.25 for e4m3,
 * 0.5 for e5m2 (resnet18_64's 18 layers on its stored input: 0.147 and
 * 0.205, top-1 kept); f16 and bf16 keep ten times the tolerance. */
static double rounding_allowance(const run_state *s) {
  double a = 10 * s->o->tol;
  int bits = s->report && s->bt.backend->report_narrowed_bits ? s->bt.backend->report_narrowed_bits(s->report) : 0;
  if (bits > 0 && bits < 24 && ldexp(1.0, 2 - bits) > a) a = ldexp(1.0, 2 - bits);
  return a;
}

/* The backend's own check first (an NPU run: each program against the
 * reference interpreter on its own inputs rounded to the dtypes the
 * schedule multiplies them in, f16, bf16, e4m3 or e5m2, at a tight
 * tolerance); then each output against its expected output, else
 * (accelerators) against the reference target: how far that rounding moved
 * the outputs, a failure only beyond the rounding allowance (above) once
 * the narrowed check passed. Returns 0, or 1 when a check fails. */
static int check_outputs(const run_state *s) {
  int rc = CLI_EXIT_OK, w = 6;
  /* the backend's own check of its code: 1 passed, 0 failed, -1 none */
  int own = s->report ? s->bt.backend->report_check(s->report, stdout) : -1;
  if (own == 0) rc = CLI_EXIT_INPUT;
  double allow = rounding_allowance(s);
  for (size_t k = 0; k < s->no; k++) {
    int n = (int)strlen(cov_model_output_name(s->m, k));
    w = n > w ? n : w;
  }
  const char *tname = s->bt.name;
  bool oracle = (s->bt.backend->ops & BACKEND_ORACLE) != 0;
  for (int pass = 0; pass < 2; pass++) {
    /* pass 0: expected outputs from files; pass 1: the reference target */
    bool header = false;
    for (size_t k = 0; k < s->no; k++) {
      bool from_file = s->expect_files[k] != NULL;
      if (pass == 0 ? !from_file : (from_file || oracle)) continue;
      if (!header) {
        if (pass == 0)
          printf("check against %s%s: max|%s - expected| / max|expected| <= %g\n",
                 s->o->n_expect ? "the --expect files" : s->expect_files[k],
                 s->o->n_expect ? "" : " (found next to the input)", tname, s->o->tol);
        else
          printf("check against --target ref on the same inputs: max|%s - ref| / max|ref| <= %g\n",
                 tname, s->o->tol);
        header = true;
      }
      const cov_tensor *want = pass == 0 ? &s->expected[k] : &s->ref_out[k];
      double e = rel_err(&s->outputs[k], want);
      bool ok = e <= s->o->tol;
      if (!cov_dtype_is_float(want->dtype) && want->dtype == s->outputs[k].dtype && e < INFINITY) {
        /* integer (quantized) outputs: how many elements differ and by how
         * many quantisation steps; one step is the tolerance */
        int64_t n = cov_tensor_numel(want), nd = 0;
        double md = 0;
        for (int64_t i = 0; i < n; i++) {
          double d = fabs(value_at(&s->outputs[k], i) - value_at(want, i));
          nd += d != 0;
          md = d > md ? d : md;
        }
        ok = md <= 1;
        printf("  %-*s %lld of %lld differ (max %g steps)%s  %s\n", w,
               cov_model_output_name(s->m, k), (long long)nd, (long long)n, md,
               nd ? "" : ", bit-exact", ok ? "PASS" : "FAIL");
        if (!ok) rc = CLI_EXIT_INPUT;
        continue;
      }
      /* with the narrowed check passed, up to the allowance is the
       * datapath's rounding, beyond it a mismatch */
      bool rounding = !ok && own == 1 && e <= allow;
      printf("  %-*s max rel err %.3e  %s", w, cov_model_output_name(s->m, k), e,
             ok ? "PASS" : rounding ? "above the tolerance by the datapath's rounding (the narrowed check passed" : "FAIL");
      if (rounding) printf("; allowed %g)", allow);
      printf("\n");
      if (!ok && !rounding) rc = CLI_EXIT_INPUT;
      print_topk(&s->outputs[k], want);
    }
  }
  return rc;
}

static void print_times(const run_state *s) {
  printf("wall time: load %.1f ms", 1e3 * s->t_load);
  if (s->report) {
    s->bt.backend->report_times(s->report, s->t_run, stdout);
  } else {
    printf(", run %.1f ms", 1e3 * s->t_run);
  }
  if (s->t_ref > 0) printf(", reference %.1f ms", 1e3 * s->t_ref);
  printf("\n");
}

static int run_report(const run_state *s) {
  if (s->report) s->bt.backend->report_summary(s->report, &s->bt, s->n_compute, stdout);
  for (size_t k = 0; k < s->no; k++) {
    if (s->seq_out[k])
      cli_print_sequence(cov_model_output_name(s->m, k), s->seq_out[k]);
    else
      print_output(cov_model_output_name(s->m, k), &s->outputs[k], s->o->print_values);
  }
  int rc = write_outputs(s);
  if (rc) return rc;
  rc = check_outputs(s);
  if (s->report) s->bt.backend->report_details(s->report, &s->bt, stdout);
  print_times(s);
  return rc;
}

int cli_cmd_run(int argc, char **argv) {
  int rc;
  run_opts o;
  if ((rc = run_parse(argc, argv, &o)) >= 0) return rc;
  if (o.n_models > 1 || o.pipeline) {
    cli_corun_opts co = {.target = o.target, .seed = o.seed, .max_memory = o.max_memory, .tol = o.tol,
                         .n_models = o.n_models, .pipeline = o.pipeline};
    memcpy(co.models, o.models, sizeof co.models);
    return cli_run_models(&co);
  }
  run_state s = {.o = &o};
  cov_status st = run_load(&s);
  if (st) {
    rc = cli_report(st);
    goto done;
  }
  if ((rc = bind_names(&s)) >= 0) goto done;
  if ((st = count_compute(&s))) {
    rc = cli_report(st);
    goto done;
  }
  print_header(&s);
  if ((rc = read_inputs(&s)) >= 0) goto done;
  if ((st = run_target(&s)) || (st = run_ref(&s))) {
    rc = cli_report(st);
    goto done;
  }
  rc = run_report(&s);
  if (rc == CLI_EXIT_OK && fflush(stdout) != 0) {
    fprintf(stderr, "covenant run: error: write failed: %s\n", strerror(errno));
    rc = CLI_EXIT_INPUT;
  }
done:
  run_state_free(&s);
  return rc;
}

double cli_rel_err(const cov_tensor *got, const cov_tensor *want) { return rel_err(got, want); }
void cli_print_output(const char *name, const cov_tensor *t) { print_output(name, t, 0); }

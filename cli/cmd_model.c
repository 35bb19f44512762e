/* cli/cmd_model.c: `covenant inspect MODEL.onnx` and `covenant run MODEL.onnx`.
 *
 * inspect prints what the frontend made of a model (its interface, operators,
 * parameters, layer groups with their codelets and MACs). run executes it on
 * a target: for now the CPU reference target `ref`, which runs every compute
 * operation through the codelet interpreter. Inputs come from .npy files or
 * ONNX TensorProto .pb files; outputs go to .npy files or, as text, to
 * stdout. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "covenant/model.h"
#include "covenant/npu.h"
#include "covenant/tensor.h"

#define MAX_ARGS 256

/* ---- inspect ---------------------------------------------------------- */

/* Element i of an integer tensor (i8, u8, i32, i64, bool) as a double. */
static double cli_elem(const cov_tensor *t, int64_t i) {
  switch (t->dtype) {
    case COV_I8: return ((const int8_t *)t->data)[i];
    case COV_U8: return ((const uint8_t *)t->data)[i];
    case COV_BOOL: return ((const uint8_t *)t->data)[i];
    case COV_I32: return ((const int32_t *)t->data)[i];
    case COV_I64: return (double)((const int64_t *)t->data)[i];
    default: return 0;
  }
}

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
          "      --ops          list the supported ONNX operators and exit\n"
          "  -o, --output FILE  write to FILE instead of stdout\n"
          "  -h, --help         show this help\n");
}

int cli_cmd_inspect(int argc, char **argv) {
  static const struct option opts[] = {{"graph", no_argument, NULL, 'g'},
                                       {"no-fold", no_argument, NULL, 'F'},
                                       {"no-fuse", no_argument, NULL, 'U'},
                                       {"ops", no_argument, NULL, 'O'},
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
      case 'o': output = optarg; break;
      case 'h': inspect_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_usage_error("inspect", "unknown option or missing argument '%s'",
                               argv[optind - 1]);
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
  FILE *out = cli_open_output(output);
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
  int rc = cli_close_output(out, output);
  return st ? cli_report(st) : rc;
}

/* ---- run -------------------------------------------------------------- */

static void run_help(FILE *out) {
  fprintf(out,
          "usage: covenant run MODEL.onnx [--target T] [--input [NAME=]FILE]... [-o OUT]...\n"
          "                               [--trace FILE] [--per-call]\n"
          "\n"
          "Runs an ONNX model. On an NPU target (default npu-16x16, any ACG with a systolic\n"
          "array) every compute layer group (conv+bias+relu+maxpool, gemm+bias, ...) is\n"
          "mapped as one layer, compiled to one NPU program and run in the cycle simulator,\n"
          "its intermediates kept on chip; a group that cannot be fused runs call by call\n"
          "(a program per call), a call the NPU path cannot take on the CPU, each listed\n"
          "with the reason. The outputs are checked against the reference target on the\n"
          "same inputs, and a per-layer table gives cycles, utilisation and bytes moved.\n"
          "The target 'ref' is the CPU reference: layout operations run in the frontend,\n"
          "every compute operation through the codelet interpreter (the oracle all\n"
          "accelerator targets are checked against).\n"
          "\n"
          "options:\n"
          "  -t, --target T            npu-16x16 (default), another NPU ACG, or ref\n"
          "      --seed N              seed of the random values for inputs not given (1)\n"
          "      --tolerance X         largest accepted max|npu-ref|/max|ref| (default 1e-2;\n"
          "                            schedules may round multiplicands to f16)\n"
          "  -i, --input [NAME=]FILE   an input, from a .npy file or an ONNX TensorProto\n"
          "                            (.pb). Without NAME=, inputs are taken in the\n"
          "                            model's order.\n"
          "  -o, --output [NAME=]OUT   where outputs go, as .npy files. NAME=FILE writes that\n"
          "                            output; a plain OUT takes the next output in order,\n"
          "                            unless OUT is a directory: then every output goes to\n"
          "                            OUT/output_<i>.npy (the ONNX test-data numbering).\n"
          "                            Without -o, outputs are printed as text.\n"
          "      --trace FILE          (NPU) write a Chrome/Perfetto trace of the whole run:\n"
          "                            every unit's activity, the programs back to back\n"
          "                            (1 us = 1 cycle), a 'layers' track naming each\n"
          "      --per-call            (NPU) do not fuse groups: one program per codelet call\n"
          "  -h, --help                show this help\n");
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
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

/* Splits "NAME=VALUE" when NAME is one of the model's names; else NULL. */
static const char *split_name(const char *arg, char *name, size_t size) {
  const char *eq = strchr(arg, '=');
  if (!eq || (size_t)(eq - arg) >= size) return NULL;
  memcpy(name, arg, (size_t)(eq - arg));
  name[eq - arg] = '\0';
  return eq + 1;
}

static void print_tensor(const char *name, const cov_tensor *t) {
  printf("%s: %s[", name, cov_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) printf("%s%lld", i ? ", " : "", (long long)t->shape[i]);
  printf("]\n");
  int64_t n = cov_tensor_numel(t);
  int64_t shown = n < 1000 ? n : 1000;
  for (int64_t i = 0; i < shown; i++) {
    double v;
    switch (t->dtype) {
      case COV_F32: v = ((const float *)t->data)[i]; break;
      case COV_F16: v = cov_f16_to_f32(((const uint16_t *)t->data)[i]); break;
      case COV_BF16: v = cov_bf16_to_f32(((const uint16_t *)t->data)[i]); break;
      case COV_I8: v = ((const int8_t *)t->data)[i]; break;
      case COV_U8: v = ((const uint8_t *)t->data)[i]; break;
      case COV_I32: v = ((const int32_t *)t->data)[i]; break;
      case COV_I64: v = (double)((const int64_t *)t->data)[i]; break;
      default: v = ((const uint8_t *)t->data)[i]; break;
    }
    printf("%s%.8g", i % 8 ? " " : "  ", v);
    if (i % 8 == 7 || i == shown - 1) printf("\n");
  }
  if (shown < n) printf("  ... (%lld more)\n", (long long)(n - shown));
}

int cli_cmd_run(int argc, char **argv) {
  int routed_rc;
  if (cli_route_gpu("run", argc, argv, &routed_rc)) return routed_rc;
  static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                       {"seed", required_argument, NULL, 'S'},
                                       {"tolerance", required_argument, NULL, 'T'},
                                       {"input", required_argument, NULL, 'i'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"trace", required_argument, NULL, 'R'},
                                       {"per-call", no_argument, NULL, 'P'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  const char *target = "npu-16x16", *trace = NULL;
  int per_call = 0;
  unsigned long long seed = 1;
  double tol = 1e-2;
  const char *in_args[MAX_ARGS], *out_args[MAX_ARGS];
  int n_in = 0, n_out = 0;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:i:o:h", opts, NULL)) != -1) {
    switch (c) {
      case 't': target = optarg; break;
      case 'S':
        if (cli_parse_seed("run", optarg, &seed)) return CLI_EXIT_USAGE;
        break;
      case 'T':
        if (cli_parse_tolerance("run", optarg, &tol)) return CLI_EXIT_USAGE;
        break;
      case 'i':
        if (n_in == MAX_ARGS) return cli_usage_error("run", "too many --input options");
        in_args[n_in++] = optarg;
        break;
      case 'o':
        if (n_out == MAX_ARGS) return cli_usage_error("run", "too many --output options");
        out_args[n_out++] = optarg;
        break;
      case 'R': trace = optarg; break;
      case 'P': per_call = 1; break;
      case 'h': run_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_usage_error("run", "unknown option or missing argument '%s'", argv[optind - 1]);
    }
  }
  if (argc - optind != 1)
    return cli_usage_error("run", "takes exactly one MODEL (got %d)", argc - optind);
  const char *path = argv[optind];
  if ((trace || per_call) && strcmp(target, "ref") == 0)
    return cli_usage_error("run", "--trace and --per-call are for NPU targets, not 'ref'");
  cov_acg *acg = NULL;
  FILE *trace_file = NULL;
  cov_npu_trace *tr = NULL;
  cov_npu_report *report = NULL;
  cov_tensor *ref_out = NULL;
  cov_status st = NULL;
  if (strcmp(target, "ref") != 0 && (st = cov_acg_load_target(target, &acg))) return cli_report(st);
  cov_model *m = NULL;
  st = cov_model_load_file(path, NULL, &m);
  if (st) {
    cov_acg_free(acg);
    return cli_report(st);
  }

  size_t ni = cov_model_num_inputs(m), no = cov_model_num_outputs(m);
  cov_tensor *inputs = calloc(ni ? ni : 1, sizeof *inputs);
  cov_tensor *outputs = calloc(no ? no : 1, sizeof *outputs);
  const char **out_paths = calloc(no ? no : 1, sizeof *out_paths);
  char **owned_paths = calloc(no ? no : 1, sizeof *owned_paths);
  int rc = CLI_EXIT_OK;
  if (!inputs || !outputs || !out_paths || !owned_paths) {
    fprintf(stderr, "covenant run: out of memory\n");
    rc = CLI_EXIT_INPUT;
    goto done;
  }
  /* Bind inputs: NAME=FILE by name, the rest in order. */
  size_t next = 0;
  for (int i = 0; i < n_in && rc == CLI_EXIT_OK; i++) {
    char name[1024];
    const char *file = split_name(in_args[i], name, sizeof name);
    int idx = file ? cov_model_find_input(m, name) : -1;
    if (idx < 0) {
      file = in_args[i];
      while (next < ni && inputs[next].data) next++;
      if (next == ni) {
        rc = cli_usage_error("run", "more inputs than the model's %zu", ni);
        break;
      }
      idx = (int)next;
    } else if (inputs[idx].data) {
      rc = cli_usage_error("run", "input '%s' is given twice", name);
      break;
    }
    st = read_tensor(file, &inputs[idx]);
    if (st) rc = cli_report(st);
  }
  for (size_t i = 0; i < ni && rc == CLI_EXIT_OK; i++) {
    if (inputs[i].data) continue;
    st = cli_random_input(m, i, seed, &inputs[i]);
    if (st && cov_status_code(st) == COV_INVALID_ARGUMENT) {
      fprintf(stderr, "covenant run: %s\n", cov_status_message(st));
      cov_status_free(st);
      rc = CLI_EXIT_USAGE;
    } else if (st) {
      rc = cli_report(st);
    }
  }
  /* Bind outputs the same way. */
  size_t next_out = 0;
  for (int i = 0; i < n_out && rc == CLI_EXIT_OK; i++) {
    if (is_dir(out_args[i])) {
      for (size_t k = 0; k < no; k++) {
        owned_paths[k] = malloc(strlen(out_args[i]) + 32);
        if (!owned_paths[k]) break;
        sprintf(owned_paths[k], "%s/output_%zu.npy", out_args[i], k);
        out_paths[k] = owned_paths[k];
      }
      continue;
    }
    char name[1024];
    const char *file = split_name(out_args[i], name, sizeof name);
    size_t idx = no;
    if (file)
      for (size_t k = 0; k < no; k++)
        if (strcmp(cov_model_output_name(m, k), name) == 0) idx = k;
    if (idx == no) {
      file = out_args[i];
      while (next_out < no && out_paths[next_out]) next_out++;
      if (next_out == no) {
        rc = cli_usage_error("run", "more -o options than the model's %zu outputs", no);
        break;
      }
      idx = next_out;
    }
    out_paths[idx] = file;
  }
  if (rc != CLI_EXIT_OK) goto done;
  if (acg) {
    if (trace && !(trace_file = fopen(trace, "w"))) {
      cov_loc loc = {trace, 0, 0, NULL};
      rc = cli_report(cov_error(COV_IO_ERROR, &loc, "cannot create the trace file"));
      goto done;
    }
    if (trace_file && (st = cov_npu_trace_begin(trace_file, acg, &tr))) {
      rc = cli_report(st);
      goto done;
    }
    cov_npu_run_options ro = {per_call, tr};
    st = cov_npu_run_model_with(m, acg, inputs, ni, outputs, no, &ro, &report);
    if (tr) {
      cov_status te = cov_npu_trace_end(tr);
      tr = NULL;
      if (!st) st = te;
      else cov_status_free(te);
    }
    if (trace_file) {
      int bad = fclose(trace_file) != 0;
      trace_file = NULL;
      if (bad && !st) {
        cov_loc loc = {trace, 0, 0, NULL};
        st = cov_error(COV_IO_ERROR, &loc, "write error");
      }
    }
    ref_out = calloc(no ? no : 1, sizeof *ref_out);
    if (!st && !ref_out) st = cov_error(COV_OUT_OF_MEMORY, NULL, "outputs");
    if (!st) st = cov_model_run_ref(m, inputs, ni, ref_out, no);
  } else {
    st = cov_model_run_ref(m, inputs, ni, outputs, no);
  }
  if (st) {
    rc = cli_report(st);
    goto done;
  }
  for (size_t k = 0; k < no; k++) {
    if (n_out == 0) {
      print_tensor(cov_model_output_name(m, k), &outputs[k]);
      continue;
    }
    if (!out_paths[k]) continue;
    st = cov_npy_write(out_paths[k], &outputs[k]);
    if (st) {
      rc = cli_report(st);
      break;
    }
  }
  if (acg && rc == CLI_EXIT_OK) {
    /* The check against the reference target on the same inputs. */
    printf("check against --target ref (max|%s - ref| / max|ref|, tolerance %g):\n", target, tol);
    for (size_t k = 0; k < no; k++) {
      double md = 0, mr = 0;
      if (outputs[k].dtype == ref_out[k].dtype && !cov_dtype_is_float(outputs[k].dtype) &&
          cov_tensor_numel(&outputs[k]) == cov_tensor_numel(&ref_out[k])) {
        /* integer (quantized) outputs: how many differ, by how many steps;
         * one quantisation step is the tolerance, 0 differing is bit-exact */
        int64_t nd = 0, n = cov_tensor_numel(&ref_out[k]);
        for (int64_t i = 0; i < n; i++) {
          double a = cli_elem(&outputs[k], i), b = cli_elem(&ref_out[k], i);
          if (a != b) nd++;
          if (fabs(a - b) > md) md = fabs(a - b);
        }
        bool pass = md <= 1;
        printf("  %-20s %lld of %lld elements differ (max %g steps)%s  %s\n",
               cov_model_output_name(m, k), (long long)nd, (long long)n, md,
               nd == 0 ? ", bit-exact" : "", pass ? "PASS" : "FAIL");
        if (!pass) rc = CLI_EXIT_INPUT;
        continue;
      }
      bool same = outputs[k].dtype == COV_F32 && ref_out[k].dtype == COV_F32 &&
                  cov_tensor_numel(&outputs[k]) == cov_tensor_numel(&ref_out[k]);
      for (int64_t i = 0; same && i < cov_tensor_numel(&ref_out[k]); i++) {
        double a = ((float *)outputs[k].data)[i], b = ((float *)ref_out[k].data)[i];
        if (!(fabs(a - b) <= md)) md = fabs(a - b);
        if (fabs(b) > mr) mr = fabs(b);
      }
      double e = same ? md / (mr > 1e-30 ? mr : 1e-30) : INFINITY;
      bool pass = e <= tol;
      printf("  %-20s max rel err %.3e  %s\n", cov_model_output_name(m, k), e, pass ? "PASS" : "FAIL");
      if (!pass) rc = CLI_EXIT_INPUT;
    }
    printf("per-layer cycles on %s (simulated; predicted by the mapper's cost model):\n",
           cov_acg_name(acg));
    cov_npu_report_print(report, stdout);
  }
  if (rc == CLI_EXIT_OK && fflush(stdout) != 0) {
    fprintf(stderr, "covenant run: write error: %s\n", strerror(errno));
    rc = CLI_EXIT_INPUT;
  }
done:
  if (tr) cov_status_free(cov_npu_trace_end(tr));
  if (trace_file) fclose(trace_file);
  for (size_t i = 0; ref_out && i < no; i++) cov_tensor_release(&ref_out[i]);
  free(ref_out);
  cov_npu_report_free(report);
  cov_acg_free(acg);
  for (size_t i = 0; inputs && i < ni; i++) cov_tensor_release(&inputs[i]);
  for (size_t i = 0; outputs && i < no; i++) cov_tensor_release(&outputs[i]);
  for (size_t i = 0; owned_paths && i < no; i++) free(owned_paths[i]);
  free(inputs);
  free(outputs);
  free(out_paths);
  free(owned_paths);
  cov_model_free(m);
  return rc;
}

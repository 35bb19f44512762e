/* cli/cmd_codelet.c: `covenant codelet check|print|list|run`.
 *
 * run is the command-line face of the reference interpreter: inputs come
 * from .npy files or are generated (deterministic pseudo-random values of a
 * given shape), outputs go to .npy files or, as text, to stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "codelets/cdl_bind.h"
#include "codelets/cdl_ir.h"
#include "common/c_locale.h"
#include "covenant/codelet.h"
#include "covenant/tensor.h"

static void codelet_help(FILE *out) {
  fprintf(out,
          "usage: covenant codelet check FILE|DIR...\n"
          "       covenant codelet print FILE|NAME [-o FILE]\n"
          "       covenant codelet list [DIR]\n"
          "       covenant codelet run NAME|FILE [-n CODELET] [-i IN=FILE.npy | -s IN=SHAPE[:DTYPE]]...\n"
          "                            [-a ATTR=VALUE]... [--seed N] [-o OUT]\n"
          "\n"
          "Codelets are DNN operations as loop nests (language: codelets/README.md).\n"
          "NAME is a shipped codelet (conv2d, gemm, ...; see 'list'); FILE is a .cdl file.\n"
          "COVENANT_CODELET_PATH adds ':'-separated directories searched before the\n"
          "shipped ones.\n"
          "\n"
          "  check   parse and verify; exit 0 when all are valid, 1 with located errors.\n"
          "          A DIR is checked as one library; arguments that are neither a\n"
          "          directory nor a .cdl file are skipped with a note.\n"
          "  print   the canonical form of every codelet in FILE (or of codelet NAME)\n"
          "  list    the signature and attributes of every shipped codelet (or of DIR's)\n"
          "  run     execute one codelet with the reference interpreter\n"
          "\n"
          "run options:\n"
          "  -n, --codelet NAME     which codelet of FILE (needed when it has several)\n"
          "  -i, --input IN=FILE    read input IN from a .npy file\n"
          "  -s, --shape IN=SHAPE[:DTYPE]\n"
          "                         generate input IN: SHAPE is dims joined by 'x' (2x3x8x8,\n"
          "                         'scalar' for rank 0), DTYPE f32 (default), f16, bf16,\n"
          "                         i8, u8, i32 or i64; values are pseudo-random, uniform in\n"
          "                         [-1, 1) for floats and in [-8, 8] for integers ([0, 16] u8)\n"
          "      --seed N           seed for generated inputs (default 1)\n"
          "      --dry-run          bind shapes and attributes, check the requires and print\n"
          "                         the output shapes, without executing\n"
          "  -a, --attr ATTR=VALUE  set an attribute (integer, or float such as 1e-5, -inf)\n"
          "  -o, --output OUT       with one output: write it to the .npy file OUT (unless OUT\n"
          "                         is an existing directory or ends in '/'); with several\n"
          "                         outputs, or when OUT is a directory: write\n"
          "                         OUT/<output name>.npy (the directory is created).\n"
          "                         Without -o, outputs are printed as text (first 1000\n"
          "                         values of each).\n"
          "\n"
          "common options:\n"
          "  -o, --output FILE   (print) write to FILE instead of stdout\n"
          "  -h, --help          show this help\n");
}

static int has_cdl_suffix(const char *s) {
  size_t n = strlen(s);
  return n >= 4 && strcmp(s + n - 4, ".cdl") == 0;
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* A FILE argument or the name of a shipped codelet? */
static int looks_like_path(const char *s) { return strchr(s, '/') || has_cdl_suffix(s); }

/* ---- check, print, list ------------------------------------------------- */

static int run_check(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    codelet_help(stdout);
    return CLI_EXIT_OK;
  }
  if (argc < 2) return cli_usage_error("codelet", "check needs at least one FILE or DIR");
  int bad = 0, skipped = 0;
  const char *first_skipped = NULL;
  for (int i = 1; i < argc; i++) {
    cov_codelet_lib *lib = NULL;
    cov_status st;
    if (is_dir(argv[i])) {
      st = cov_codelet_lib_load(argv[i], &lib);
    } else if (has_cdl_suffix(argv[i])) {
      st = cov_codelet_lib_load_file(argv[i], &lib);
    } else {
      if (!skipped++) first_skipped = argv[i];
      continue;
    }
    if (st) {
      cli_report(st);
      bad = 1;
      continue;
    }
    size_t n = cov_codelet_lib_count(lib);
    printf("%s: ok (%zu codelet%s)\n", argv[i], n, n == 1 ? "" : "s");
    cov_codelet_lib_free(lib);
  }
  /* `check codelets/<glob>` meets the sources beside the .cdl files: one note. */
  if (skipped)
    fprintf(stderr, "covenant codelet check: skipped %d argument%s that %s not .cdl files or "
            "directories ('%s'%s)\n", skipped, skipped == 1 ? "" : "s",
            skipped == 1 ? "is" : "are", first_skipped, skipped > 1 ? ", ..." : "");
  return bad ? CLI_EXIT_INPUT : CLI_EXIT_OK;
}

/* Loads FILE, or the shipped library when `target` is a codelet name (then
 * *only is that codelet). */
static cov_status load_target(const char *target, cov_codelet_lib **lib,
                              const cov_codelet **only) {
  *only = NULL;
  if (looks_like_path(target)) return cov_codelet_lib_load_file(target, lib);
  COV_RETURN_IF_ERROR(cov_codelet_lib_load(NULL, lib));
  *only = cov_codelet_lib_find(*lib, target);
  if (*only) return NULL;
  size_t n = cov_codelet_lib_count(*lib);
  const char **names = malloc((n ? n : 1) * sizeof *names);
  const char *hint = NULL;
  if (names) {
    for (size_t i = 0; i < n; i++) names[i] = cov_codelet_name(cov_codelet_lib_at(*lib, i));
    hint = cdl_closest(target, names, n);
    free(names);
  }
  cov_status st = hint ? cov_error(COV_NOT_FOUND, NULL,
                                   "no shipped codelet named '%s' (did you mean '%s'?); "
                                   "'covenant codelet list' shows them all",
                                   target, hint)
                       : cov_error(COV_NOT_FOUND, NULL,
                                   "no shipped codelet named '%s'; 'covenant codelet list' "
                                   "shows them all, or pass a .cdl file",
                                   target);
  cov_codelet_lib_free(*lib);
  *lib = NULL;
  return st;
}

static int run_print(int argc, char **argv) {
  static const struct option opts[] = {
      {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
  const char *output = NULL;
  optind = 0; /* 0 re-initialises GNU getopt, which lets options follow FILE */
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (ch) {
      case 'o': output = optarg; break;
      case 'h': codelet_help(stdout); return CLI_EXIT_OK;
      default:
        return cli_bad_option("codelet", argv, "o:h", opts);
    }
  }
  if (argc - optind != 1)
    return cli_usage_error("codelet", "print takes exactly one FILE or NAME (got %d)",
                           argc - optind);
  cov_codelet_lib *lib = NULL;
  const cov_codelet *only = NULL;
  cov_status st = load_target(argv[optind], &lib, &only);
  if (st) return cli_report(st);
  common_out out_file;
  FILE *out = cli_open_output(output, &out_file);
  if (!out) {
    cov_codelet_lib_free(lib);
    return CLI_EXIT_INPUT;
  }
  size_t n = only ? 1 : cov_codelet_lib_count(lib);
  for (size_t i = 0; i < n && !st; i++) {
    if (i) fputc('\n', out);
    st = cov_codelet_print(only ? only : cov_codelet_lib_at(lib, i), out);
  }
  cov_codelet_lib_free(lib);
  int rc = cli_close_output(&out_file);
  return st ? cli_report(st) : rc;
}

static int run_list(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    codelet_help(stdout);
    return CLI_EXIT_OK;
  }
  if (argc > 2) return cli_usage_error("codelet", "list takes at most one DIR");
  cov_codelet_lib *lib = NULL;
  cov_status st = cov_codelet_lib_load(argc == 2 ? argv[1] : NULL, &lib);
  if (st) return cli_report(st);
  for (size_t i = 0; i < cov_codelet_lib_count(lib); i++)
    cdl_print_signature(stdout, cov_codelet_lib_at(lib, i));
  cov_codelet_lib_free(lib);
  return cli_close_stdout();
}

/* ---- run ---------------------------------------------------------------- */

typedef struct run_input {
  const char *name;
  const char *path;  /* --input */
  const char *shape; /* --shape */
} run_input;

/* xorshift64*: a fixed generator, so generated inputs are the same on every
 * machine for a given seed. */
static uint64_t next_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* alloc 0: only t's dtype, rank and shape (data NULL), for the memory check */
static int parse_shape_spec(const char *spec, cov_tensor *t, uint64_t *seed, int fill, int alloc) {
  char buf[256];
  if (strlen(spec) >= sizeof buf) return 0;
  strcpy(buf, spec);
  cov_dtype dt = COV_F32;
  char *colon = strchr(buf, ':');
  if (colon) {
    *colon = '\0';
    dt = cov_dtype_from_name(colon + 1);
    if (!dt || dt == COV_BOOL) return 0;
  }
  int64_t shape[COV_MAX_RANK];
  int rank = 0;
  if (strcmp(buf, "scalar") != 0) {
    for (char *p = buf;;) {
      char *end;
      errno = 0;
      long long v = strtoll(p, &end, 10);
      if (end == p || errno || v < 0 || rank == COV_MAX_RANK) return 0;
      shape[rank++] = v;
      if (*end == '\0') break;
      if (*end != 'x' && *end != ',') return 0;
      p = end + 1;
    }
  }
  if (!alloc) {
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
    return 1;
  }
  if (cov_tensor_alloc(t, dt, rank, shape)) return -1;
  int64_t n = fill ? cov_tensor_numel(t) : 0; /* --dry-run reads shapes only */
  unsigned char *d = t->data;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next_rand(seed);
    double f = (double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0; /* [-1, 1) */
    int64_t k = (int64_t)((r >> 32) % 17) - 8;                 /* [-8, 8] */
    switch (dt) {
      case COV_F32: { float v = (float)f; memcpy(d + 4 * i, &v, 4); break; }
      case COV_F64: memcpy(d + 8 * i, &f, 8); break;
      case COV_F16: { uint16_t h = cov_f32_to_f16((float)f); memcpy(d + 2 * i, &h, 2); break; }
      case COV_BF16: { uint16_t h = cov_f32_to_bf16((float)f); memcpy(d + 2 * i, &h, 2); break; }
      case COV_I8: d[i] = (unsigned char)(int8_t)k; break;
      case COV_U8: d[i] = (unsigned char)(k + 8); break;
      case COV_I32: { int32_t v = (int32_t)k; memcpy(d + 4 * i, &v, 4); break; }
      case COV_I64: memcpy(d + 8 * i, &k, 8); break;
      case COV_I16: { int16_t v = (int16_t)k; memcpy(d + 2 * i, &v, 2); break; }
      case COV_U16: { uint16_t v = (uint16_t)(k + 8); memcpy(d + 2 * i, &v, 2); break; }
      case COV_U32: { uint32_t v = (uint32_t)(k + 8); memcpy(d + 4 * i, &v, 4); break; }
      case COV_U64: { uint64_t v = (uint64_t)(k + 8); memcpy(d + 8 * i, &v, 8); break; }
      default: break;
    }
  }
  return 1;
}

static int parse_attr(const char *spec, cov_attr *a) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1]) return 0;
  a->name = spec; /* cut at '=' by the caller's copy */
  const char *v = eq + 1;
  char *end;
  errno = 0;
  long long i = strtoll(v, &end, 10);
  if (*end == '\0' && !errno) {
    a->is_float = 0;
    a->i = i;
    a->f = (double)i;
    return 1;
  }
  errno = 0;
  double f = common_strtod(v, &end);
  if (*end != '\0' || (errno && !isinf(f))) return 0;
  a->is_float = 1;
  a->f = f;
  return 1;
}

static void print_tensor(FILE *out, const char *name, const cov_tensor *t) {
  fprintf(out, "%s: %s[", name, cov_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) fprintf(out, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  fputs("]\n", out);
  int64_t n = cov_tensor_numel(t);
  int64_t row = t->rank ? t->shape[t->rank - 1] : 1;
  const unsigned char *d = t->data;
  size_t es = cov_dtype_size(t->dtype);
  int64_t shown = n < 1000 ? n : 1000;
  for (int64_t i = 0; i < shown; i++) {
    double v = 0;
    switch (t->dtype) {
      case COV_F32: { float f; memcpy(&f, d + es * (size_t)i, 4); v = f; break; }
      case COV_F64: memcpy(&v, d + es * (size_t)i, 8); break;
      case COV_F16: { uint16_t h; memcpy(&h, d + es * (size_t)i, 2); v = cov_f16_to_f32(h); break; }
      case COV_BF16: { uint16_t h; memcpy(&h, d + es * (size_t)i, 2); v = cov_bf16_to_f32(h); break; }
      case COV_I8: v = (int8_t)d[i]; break;
      case COV_U8:
      case COV_BOOL: v = d[i]; break;
      case COV_I32: { int32_t k; memcpy(&k, d + es * (size_t)i, 4); v = k; break; }
      case COV_I64: { int64_t k; memcpy(&k, d + es * (size_t)i, 8); v = (double)k; break; }
      case COV_I16: { int16_t k; memcpy(&k, d + es * (size_t)i, 2); v = k; break; }
      case COV_U16: { uint16_t k; memcpy(&k, d + es * (size_t)i, 2); v = k; break; }
      case COV_U32: { uint32_t k; memcpy(&k, d + es * (size_t)i, 4); v = k; break; }
      case COV_U64: { uint64_t k; memcpy(&k, d + es * (size_t)i, 8); v = (double)k; break; }
      default: break;
    }
    fprintf(out, "%s%.9g", (row && i % row) ? " " : "  ", v);
    if (!row || i % row == row - 1 || i == shown - 1) fputc('\n', out);
  }
  if (n > shown) fprintf(out, "  ... (%lld more)\n", (long long)(n - shown));
}

static int write_outputs(const cov_codelet *c, cov_tensor *outs, const char *output) {
  size_t n = cov_codelet_num_outputs(c);
  if (!output) {
    for (size_t i = 0; i < n; i++) print_tensor(stdout, cov_codelet_output_name(c, i), &outs[i]);
    return cli_close_stdout();
  }
  size_t len = strlen(output);
  int want_dir = is_dir(output) || (len && output[len - 1] == '/');
  if (n == 1 && !want_dir) return cli_report(cov_npy_write(output, &outs[0]));
  if (!is_dir(output) && mkdir(output, 0777) != 0) {
    fprintf(stderr, "%s: error: cannot create directory: %s\n", output, strerror(errno));
    return CLI_EXIT_INPUT;
  }
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", output, cov_codelet_output_name(c, i));
    int rc = cli_report(cov_npy_write(path, &outs[i]));
    if (rc) return rc;
  }
  return CLI_EXIT_OK;
}

/* --dry-run: what a call would produce, from shapes alone (cheap even for
 * layer sizes the interpreter would take minutes on). */
static int dry_run_shapes(const cov_codelet *c, const cov_attr *attrs, size_t n_attrs,
                          const cov_tensor *inputs, size_t n_in) {
  cov_arena *arena = cov_arena_create();
  if (!arena) return cli_report(cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory"));
  cdl_binding b;
  cov_status st = cdl_bind(c, attrs, n_attrs, inputs, n_in, arena, &b);
  if (!st) {
    for (int i = c->n_inputs; i < c->n_inputs + c->n_outputs; i++) {
      printf("%s: %s[", c->operands[i].name, cov_dtype_name(b.dtype[i]));
      for (int ax = 0; ax < c->operands[i].rank; ax++)
        printf("%s%lld", ax ? ", " : "", (long long)b.shape[i][ax]);
      printf("]\n");
    }
  }
  cov_arena_destroy(arena);
  return st ? cli_report(st) : cli_close_stdout();
}

#define RUN_MAX_ARGS 64

/* Before any input is made or read: the bytes of the --shape inputs, the
 * .npy files' sizes and (when every input is a --shape) the outputs' bytes
 * must stay within max_memory, so `-s a=20000x20000` is refused at once
 * instead of after gigabytes of inputs. Returns 0 or the exit code. */
static int check_memory(const cov_codelet *c, const run_input *ins, int n_ins,
                        const cov_attr *attrs, size_t n_attrs, uint64_t max_memory) {
  size_t n_in = cov_codelet_num_inputs(c), n_out = cov_codelet_num_outputs(c);
  cov_tensor shapes[CDL_MAX_OPERANDS], outs[CDL_MAX_OPERANDS];
  memset(shapes, 0, sizeof shapes);
  uint64_t need = 0, largest = 0;
  const char *largest_name = "";
  int all_shapes = n_ins == (int)n_in, overflow = 0;
  for (int k = 0; k < n_ins; k++) {
    size_t i = 0;
    while (i < n_in && strcmp(cov_codelet_input_name(c, i), ins[k].name) != 0) i++;
    uint64_t bytes = 0;
    if (ins[k].path) {
      struct stat sb;
      if (stat(ins[k].path, &sb) == 0) bytes = (uint64_t)sb.st_size;
      all_shapes = 0;
    } else {
      cov_tensor t;
      if (parse_shape_spec(ins[k].shape, &t, NULL, 0, 0) != 1) return 0; /* reported later */
      bytes = cov_dtype_size(t.dtype);
      for (int d = 0; d < t.rank; d++) overflow |= __builtin_mul_overflow(bytes, (uint64_t)t.shape[d], &bytes);
      if (i < n_in) shapes[i] = t;
      else all_shapes = 0;
    }
    overflow |= __builtin_add_overflow(need, bytes, &need);
    if (bytes > largest) largest = bytes, largest_name = ins[k].name;
  }
  int with_outputs = 0;
  cov_status st = all_shapes && !overflow && need <= max_memory
                      ? cov_codelet_output_shapes(c, attrs, n_attrs, shapes, n_in, outs, n_out)
                      : cov_error(COV_UNSUPPORTED, NULL, "not all shapes known");
  int outs_known = st == NULL;
  cov_status_free(st); /* a binding error is reported by the run itself */
  if (outs_known) {
    with_outputs = 1;
    for (size_t o = 0; o < n_out; o++) {
      uint64_t bytes = cov_dtype_size(outs[o].dtype);
      for (int d = 0; d < outs[o].rank; d++)
        overflow |= __builtin_mul_overflow(bytes, (uint64_t)outs[o].shape[d], &bytes);
      overflow |= __builtin_add_overflow(need, bytes, &need);
      if (bytes > largest) largest = bytes, largest_name = cov_codelet_output_name(c, o);
    }
  }
  if (!overflow && need <= max_memory) return 0;
  char total[64] = "more than 2^64";
  if (!overflow) snprintf(total, sizeof total, "%llu", (unsigned long long)need);
  return cli_report(cov_error(COV_OUT_OF_RANGE, NULL,
                              "%s: the inputs%s need %s bytes (the largest, '%s', %llu), more than "
                              "the memory limit of %llu bytes (--max-memory); nothing was "
                              "allocated",
                              cov_codelet_name(c), with_outputs ? " and outputs" : "", total,
                              largest_name, (unsigned long long)largest,
                              (unsigned long long)max_memory));
}

/* The codelet of a file of several: the one -n names, or its only one. */
static int choose_codelet(const cov_codelet_lib *lib, const char *path, const char *which,
                          const cov_codelet **out) {
  const cov_codelet *c = NULL;
  int rc = CLI_EXIT_OK;
  if (which) {
    c = cov_codelet_lib_find(lib, which);
    if (!c) {
      fprintf(stderr, "%s: error: no codelet named '%s' in this file\n", path, which);
      rc = CLI_EXIT_INPUT;
    }
  } else if (cov_codelet_lib_count(lib) == 1) {
    c = cov_codelet_lib_at(lib, 0);
  } else {
    fprintf(stderr, "%s: error: the file defines %zu codelets; choose one with -n NAME\n",
            path, cov_codelet_lib_count(lib));
    rc = CLI_EXIT_USAGE;
  }
  *out = c;
  return rc;
}

/* The codelet's inputs from --input (.npy) and --shape (random, or shapes
 * only for a dry run), each named once, none missing. */
static int read_inputs(const cov_codelet *c, const run_input *ins, int n_ins, cov_tensor *inputs,
                       uint64_t *seed, int dry_run) {
  size_t n_in = cov_codelet_num_inputs(c);
  int rc = CLI_EXIT_OK;
  for (int k = 0; k < n_ins && !rc; k++) {
    size_t i = 0;
    while (i < n_in && strcmp(cov_codelet_input_name(c, i), ins[k].name) != 0) i++;
    if (i == n_in) {
      rc = cli_usage_error("codelet", "run: '%s' has no input named '%s'", cov_codelet_name(c),
                           ins[k].name);
    } else if (inputs[i].data) {
      rc = cli_usage_error("codelet", "run: input '%s' is given twice", ins[k].name);
    } else if (ins[k].path) {
      rc = cli_report(cov_npy_read(ins[k].path, &inputs[i]));
    } else {
      int ok = parse_shape_spec(ins[k].shape, &inputs[i], seed, !dry_run, 1);
      if (ok == 0)
        rc = cli_usage_error("codelet", "run: bad --shape '%s' (expected e.g. 2x3x8x8 or "
                             "2x3:f16)", ins[k].shape);
      else if (ok < 0)
        rc = cli_report(cov_error(COV_OUT_OF_RANGE, NULL, "--shape %s=%s: tensor too large",
                                  ins[k].name, ins[k].shape));
    }
  }
  for (size_t i = 0; i < n_in && !rc; i++)
    if (!inputs[i].data)
      rc = cli_usage_error("codelet", "run: missing --input or --shape for '%s' (%s takes %zu "
                           "input%s)", cov_codelet_input_name(c, i), cov_codelet_name(c), n_in,
                           n_in == 1 ? "" : "s");
  return rc;
}

static int run_run(int argc, char **argv) {
  static const struct option opts[] = {{"codelet", required_argument, NULL, 'n'},
                                       {"input", required_argument, NULL, 'i'},
                                       {"shape", required_argument, NULL, 's'},
                                       {"attr", required_argument, NULL, 'a'},
                                       {"seed", required_argument, NULL, 'S'},
                                       {"dry-run", no_argument, NULL, 'D'},
                                       {"max-memory", required_argument, NULL, 'M'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {0, 0, 0, 0}};
  const char *output = NULL, *which = NULL;
  run_input ins[RUN_MAX_ARGS];
  char *attr_specs[RUN_MAX_ARGS];
  int n_ins = 0, n_attrs = 0, dry_run = 0;
  uint64_t max_memory = COV_DEFAULT_MAX_MEMORY;
  uint64_t seed = 1;
  optind = 0; /* 0 re-initialises GNU getopt, which lets options follow FILE */
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "n:i:s:a:o:h", opts, NULL)) != -1) {
    switch (ch) {
      case 'n': which = optarg; break;
      case 'o': output = optarg; break;
      case 'D': dry_run = 1; break;
      case 'M':
        if (cli_parse_memory("codelet", optarg, &max_memory)) return CLI_EXIT_USAGE;
        break;
      case 'h': codelet_help(stdout); return CLI_EXIT_OK;
      case 'i':
      case 's': {
        char *eq = strchr(optarg, '=');
        if (!eq || eq == optarg || !eq[1])
          return cli_usage_error("codelet", "run: expected %s NAME=%s, got '%s'",
                                 ch == 'i' ? "--input" : "--shape",
                                 ch == 'i' ? "FILE.npy" : "SHAPE[:DTYPE]", optarg);
        if (n_ins == RUN_MAX_ARGS) return cli_usage_error("codelet", "run: too many inputs");
        *eq = '\0';
        ins[n_ins++] = (run_input){optarg, ch == 'i' ? eq + 1 : NULL, ch == 's' ? eq + 1 : NULL};
        break;
      }
      case 'a':
        if (n_attrs == RUN_MAX_ARGS) return cli_usage_error("codelet", "run: too many attributes");
        attr_specs[n_attrs++] = optarg;
        break;
      case 'S': {
        unsigned long long v = 0;
        if (cli_parse_seed("codelet", optarg, &v)) return CLI_EXIT_USAGE;
        seed = v ? v : 0x9e3779b97f4a7c15ull; /* xorshift must not start at 0 */
        break;
      }
      default:
        return cli_bad_option("codelet", argv, "n:i:s:a:o:h", opts);
    }
  }
  if (argc - optind != 1)
    return cli_usage_error("codelet", "run takes exactly one NAME or FILE (got %d)",
                           argc - optind);
  cov_attr attrs[RUN_MAX_ARGS];
  for (int k = 0; k < n_attrs; k++) {
    if (!parse_attr(attr_specs[k], &attrs[k]))
      return cli_usage_error("codelet", "run: expected --attr NAME=VALUE with an integer or "
                             "float VALUE, got '%s'", attr_specs[k]);
    *strchr(attr_specs[k], '=') = '\0';
  }

  cov_codelet_lib *lib = NULL;
  const cov_codelet *c = NULL;
  cov_status st = load_target(argv[optind], &lib, &c);
  if (st) return cli_report(st);
  int rc = c ? CLI_EXIT_OK : choose_codelet(lib, argv[optind], which, &c);
  size_t n_in = c ? cov_codelet_num_inputs(c) : 0, n_out = c ? cov_codelet_num_outputs(c) : 0;
  cov_tensor inputs[CDL_MAX_OPERANDS], outputs[CDL_MAX_OPERANDS];
  memset(inputs, 0, sizeof inputs);
  memset(outputs, 0, sizeof outputs);
  if (!rc && c && !dry_run) rc = check_memory(c, ins, n_ins, attrs, (size_t)n_attrs, max_memory);
  if (!rc) rc = read_inputs(c, ins, n_ins, inputs, &seed, dry_run);
  if (!rc && dry_run) {
    rc = dry_run_shapes(c, attrs, (size_t)n_attrs, inputs, n_in);
  } else if (!rc) {
    st = cov_codelet_run(c, attrs, (size_t)n_attrs, inputs, n_in, outputs, n_out);
    rc = st ? cli_report(st) : write_outputs(c, outputs, output);
  }
  for (size_t i = 0; i < CDL_MAX_OPERANDS; i++) {
    cov_tensor_release(&inputs[i]);
    cov_tensor_release(&outputs[i]);
  }
  cov_codelet_lib_free(lib);
  return rc;
}

int cli_cmd_codelet(int argc, char **argv) {
  if (argc < 2) {
    codelet_help(stderr);
    return CLI_EXIT_USAGE;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
    codelet_help(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(sub, "check") == 0) return run_check(argc - 1, argv + 1);
  if (strcmp(sub, "print") == 0) return run_print(argc - 1, argv + 1);
  if (strcmp(sub, "list") == 0) return run_list(argc - 1, argv + 1);
  if (strcmp(sub, "run") == 0) return run_run(argc - 1, argv + 1);
  return cli_usage_error("codelet",
                         "unknown subcommand '%s' (expected check, print, list or run)", sub);
}

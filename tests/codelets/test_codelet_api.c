/* tests/codelets/test_codelet_api.c: the codelet C API as the frontend and
 * the mapper use it: loading (buffer, file, directory, search path),
 * lookups, running with attributes, every class of run-time error, the
 * interpreter's limits, and print/parse round trips of the shipped library. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codelets/cdl_ir.h"
#include "covenant/codelet.h"
#include "tests/check.h"

static char g_src[4096];

static cov_codelet_lib *load(const char *text) {
  cov_codelet_lib *lib = NULL;
  cov_status st = cov_codelet_lib_load_buffer(text, strlen(text), "t.cdl", &lib);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
  }
  return lib;
}

static cov_tensor vec(cov_dtype dt, int64_t n, const float *v) {
  cov_tensor t;
  cov_tensor_alloc(&t, dt, 1, &n);
  for (int64_t i = 0; i < n && v; i++) {
    if (dt == COV_F32) ((float *)t.data)[i] = v[i];
    else if (dt == COV_I32) ((int32_t *)t.data)[i] = (int32_t)v[i];
  }
  return t;
}

/* Runs and returns the status' message (static copy) or "ok". */
static const char *run_msg(const cov_codelet *c, const cov_attr *attrs, size_t na,
                           const cov_tensor *in, size_t ni, cov_tensor *out, size_t no,
                           cov_code *code) {
  static char buf[512];
  cov_status st = cov_codelet_run(c, attrs, na, in, ni, out, no);
  *code = cov_status_code(st);
  cov_status_format(st, buf, sizeof buf);
  cov_status_free(st);
  return buf;
}

static const char *k_two =
    "codelet scale<T: float>(x: T[N]) -> (y: T[N]) {\n"
    "  attr k: float = 2.0\n"
    "  attr off: int = 0\n"
    "  for i in N {\n"
    "    y[i] = mul(x[i + off] else 7.0, k)\n"
    "  }\n"
    "}\n"
    "codelet shift(x: i32[N]) -> (y: i32[N]) {\n"
    "  for i in N {\n"
    "    y[i + 1] = x[i]\n"
    "  }\n"
    "}\n";

static void test_lookup_and_run(void) {
  cov_codelet_lib *lib = load(k_two);
  CHECK(lib != NULL);
  if (!lib) return;
  CHECK(cov_codelet_lib_count(lib) == 2);
  const cov_codelet *c = cov_codelet_lib_find(lib, "scale");
  CHECK(c && cov_codelet_lib_at(lib, 0) == c);
  CHECK(cov_codelet_lib_find(lib, "nope") == NULL);
  CHECK_STR(cov_codelet_name(c), "scale");
  CHECK(cov_codelet_num_inputs(c) == 1 && cov_codelet_num_outputs(c) == 1);
  CHECK_STR(cov_codelet_input_name(c, 0), "x");
  CHECK_STR(cov_codelet_output_name(c, 0), "y");
  CHECK(cov_codelet_input_name(c, 1) == NULL);

  float xs[4] = {1, -2, 3.5f, 0};
  cov_tensor x = vec(COV_F32, 4, xs), y;
  cov_code code;
  run_msg(c, NULL, 0, &x, 1, &y, 1, &code);
  CHECK(code == COV_OK && y.rank == 1 && y.shape[0] == 4 && y.dtype == COV_F32);
  if (code == COV_OK) CHECK(((float *)y.data)[2] == 7.0f);
  cov_tensor_release(&y);
  /* attributes: a float given as an int, an int given as an integral float;
   * the shifted reads past the end take the else value */
  cov_attr attrs[2] = {{.name = "k", .i = 3}, {.name = "off", .is_float = 1, .f = 2.0}};
  run_msg(c, attrs, 2, &x, 1, &y, 1, &code);
  CHECK(code == COV_OK);
  if (code == COV_OK) {
    const float *v = y.data;
    CHECK(v[0] == 10.5f && v[1] == 0.0f && v[2] == 21.0f && v[3] == 21.0f);
  }
  cov_tensor_release(&y);

  cov_attr bad_int = {.name = "off", .is_float = 1, .f = 1.5};
  CHECK(strstr(run_msg(c, &bad_int, 1, &x, 1, &y, 1, &code), "attribute 'off' is an int"));
  CHECK(code == COV_INVALID_ARGUMENT && y.data == NULL);
  cov_attr typo = {.name = "kk", .is_float = 1, .f = 1};
  CHECK(strstr(run_msg(c, &typo, 1, &x, 1, &y, 1, &code), "no attribute 'kk' (did you mean 'k'?)"));
  cov_attr twice[2] = {{.name = "k", .i = 1}, {.name = "k", .i = 2}};
  CHECK(strstr(run_msg(c, twice, 2, &x, 1, &y, 1, &code), "given twice"));
  cov_tensor two[2];
  CHECK(strstr(run_msg(c, NULL, 0, &x, 1, two, 2, &code), "has 1 output"));
  CHECK(two[0].data == NULL && two[1].data == NULL);
  CHECK(strstr(run_msg(c, NULL, 0, NULL, 0, &y, 1, &code), "takes 1 input (x), got 0"));
  cov_tensor xi = vec(COV_I32, 4, xs);
  CHECK(strstr(run_msg(c, NULL, 0, &xi, 1, &y, 1, &code), "input 'x' is i32, but T must be"));
  /* the error is located at the operand's declaration in the source */
  CHECK(strstr(run_msg(c, NULL, 0, &xi, 1, &y, 1, &code), "t.cdl:1:25: error: scale: "));

  const cov_codelet *s = cov_codelet_lib_find(lib, "shift");
  const char *m = run_msg(s, NULL, 0, &xi, 1, &y, 1, &code);
  CHECK(code == COV_OUT_OF_RANGE && strstr(m, "write to y[4] is out of bounds"));
  CHECK(strstr(m, "t.cdl:10:5:"));
  CHECK(y.data == NULL);
  cov_tensor_release(&x);
  cov_tensor_release(&xi);
  cov_codelet_lib_free(lib);
}

static void test_runtime_errors(void) {
  cov_codelet_lib *lib = load(
      "codelet divz(x: i32[N]) -> (y: i32[N]) {\n"
      "  for i in N {\n"
      "    y[i] = div(x[i], 0)\n"
      "  }\n"
      "}\n"
      "codelet huge(x: f32[N]) -> (y: f32[N]) {\n"
      "  local t: f32\n"
      "  for i in 1000000, j in 1000000, n in N {\n"
      "    t = x[n]\n"
      "  }\n"
      "  for n in N {\n"
      "    y[n] = t\n"
      "  }\n"
      "}\n"
      "codelet ovf(x: f32[N]) -> (y: f32[Z]) {\n"
      "  let Z = N * 4611686018427387904\n"
      "  for n in N {\n"
      "    y[n] = x[n]\n"
      "  }\n"
      "}\n"
      "codelet big(x: f32[N]) -> (y: f32[Z]) {\n"
      "  let Z = N * 1099511627776\n"
      "  for n in N {\n"
      "    y[n] = x[n]\n"
      "  }\n"
      "}\n"
      "codelet req(x: f32[N]) -> (y: f32[N]) {\n"
      "  attr a: int = 3\n"
      "  require N % a == 0, \"N must be a multiple of a\"\n"
      "  for n in N {\n"
      "    y[n] = x[n]\n"
      "  }\n"
      "}\n"
      "codelet negext(x: f32[N]) -> (y: f32[N]) {\n"
      "  attr a: int = 0\n"
      "  for n in N, k in a {\n"
      "    y[n] = x[n]\n"
      "  }\n"
      "}\n");
  CHECK(lib != NULL);
  if (!lib) return;
  float xs[4] = {1, 2, 3, 4};
  cov_tensor xi = vec(COV_I32, 4, xs), xf = vec(COV_F32, 4, xs), y;
  cov_code code;
  CHECK(strstr(run_msg(cov_codelet_lib_find(lib, "divz"), NULL, 0, &xi, 1, &y, 1, &code),
               "3:12: error: divz: integer division by zero"));
  const char *m = run_msg(cov_codelet_lib_find(lib, "huge"), NULL, 0, &xf, 1, &y, 1, &code);
  CHECK(code == COV_OUT_OF_RANGE && strstr(m, "more than 17179869184 statements"));
  m = run_msg(cov_codelet_lib_find(lib, "ovf"), NULL, 0, &xf, 1, &y, 1, &code);
  CHECK(code == COV_OUT_OF_RANGE && strstr(m, "overflow in 'N * 4611686018427387904'"));
  m = run_msg(cov_codelet_lib_find(lib, "big"), NULL, 0, &xf, 1, &y, 1, &code);
  CHECK(strstr(m, "output 'y' would be larger than the limit"));
  m = run_msg(cov_codelet_lib_find(lib, "req"), NULL, 0, &xf, 1, &y, 1, &code);
  CHECK(strstr(m, "N must be a multiple of a (requirement 'N % a == 0' with N = 4, a = 3)"));
  cov_attr a2 = {.name = "a", .i = 2};
  run_msg(cov_codelet_lib_find(lib, "req"), &a2, 1, &xf, 1, &y, 1, &code);
  CHECK(code == COV_OK);
  cov_tensor_release(&y);
  cov_attr neg = {.name = "a", .i = -1};
  m = run_msg(cov_codelet_lib_find(lib, "negext"), &neg, 1, &xf, 1, &y, 1, &code);
  CHECK(strstr(m, "loop 'k' would have a negative extent (a = -1)"));
  cov_tensor_release(&xi);
  cov_tensor_release(&xf);
  cov_codelet_lib_free(lib);
}

static void test_load_errors(void) {
  cov_codelet_lib *lib = NULL;
  const char *text =
      "codelet a(x: f32[N]) -> (y: f32[N]) {\n"
      "  for i in N {\n"
      "    y[i] = foo(x[j])\n"
      "  }\n"
      "}\n"
      "codelet b(x: f32[N]) -> (y: f32[N]) {\n"
      "  for i in N {\n"
      "    y[i] = x[i\n"
      "  }\n"
      "}\n";
  cov_status st = cov_codelet_lib_load_buffer(text, strlen(text), "e.cdl", &lib);
  CHECK(lib == NULL && cov_status_count(st) == 3);
  char buf[512];
  cov_status_format(st, buf, sizeof buf);
  CHECK_STR(buf, "e.cdl:9:3: error: expected ']' near '}'");
  cov_status_format(cov_status_next(st), buf, sizeof buf);
  CHECK_STR(buf, "e.cdl:3:12: error: a: unknown operation 'foo' (expected one of: mac, add, "
                 "sub, mul, div, max, min, pow, exp, log, sqrt, rsqrt, neg, abs, tanh, erf, "
                 "sigmoid, relu, cast, select, copy, floor, ceil, round, sign, sin, cos, tan, "
                 "asin, acos, atan, sinh, cosh, asinh, acosh, atanh, eq, lt, le, mod, fmod, relu_min, shl, shr)");
  cov_status_free(st);
  /* NUL bytes and binary garbage are errors, not crashes */
  const char bin[] = "codelet \0\x93\xff(";
  st = cov_codelet_lib_load_buffer(bin, sizeof bin - 1, "b.cdl", &lib);
  CHECK(cov_status_code(st) == COV_PARSE_ERROR && lib == NULL);
  cov_status_free(st);
  st = cov_codelet_lib_load_buffer("", 0, "empty.cdl", &lib);
  CHECK(st == NULL && lib && cov_codelet_lib_count(lib) == 0);
  cov_codelet_lib_free(lib);
  st = cov_codelet_lib_load_file("/nonexistent/x.cdl", &lib);
  CHECK(cov_status_code(st) == COV_NOT_FOUND && lib == NULL);
  cov_status_free(st);
}

/* The frontend's path: the shipped library, conv2d with attributes,
 * checked against a direct C loop. */
static void test_shipped_conv2d(void) {
  cov_codelet_lib *lib = NULL;
  cov_status st = cov_codelet_lib_load(NULL, &lib);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!lib) return;
  const cov_codelet *c = cov_codelet_lib_find(lib, "conv2d");
  CHECK(c != NULL);
  int64_t xs[4] = {1, 4, 6, 5}, ws[4] = {4, 2, 3, 3};
  cov_tensor in[2];
  cov_tensor_alloc(&in[0], COV_F32, 4, xs);
  cov_tensor_alloc(&in[1], COV_F32, 4, ws);
  float *x = in[0].data, *w = in[1].data;
  for (int i = 0; i < 120; i++) x[i] = (float)((i * 7) % 11) - 5;
  for (int i = 0; i < 72; i++) w[i] = (float)((i * 5) % 7) - 3;
  cov_attr attrs[] = {{.name = "stride_h", .i = 2}, {.name = "pad_top", .i = 1},
                      {.name = "pad_left", .i = 2}, {.name = "pad_bottom", .i = 1},
                      {.name = "groups", .i = 2}};
  cov_tensor y;
  st = cov_codelet_run(c, attrs, 5, in, 2, &y, 1);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!st) {
    /* P = (6 + 2 - 2 - 1) / 2 + 1 = 3, Q = (5 + 2 - 2 - 1) / 1 + 1 = 5 */
    CHECK(y.rank == 4 && y.shape[1] == 4 && y.shape[2] == 3 && y.shape[3] == 5);
    int bad = 0;
    for (int k = 0; k < 4; k++)
      for (int p = 0; p < 3; p++)
        for (int q = 0; q < 5; q++) {
          float acc = 0;
          int g = k / 2;
          for (int cc = 0; cc < 2; cc++)
            for (int r = 0; r < 3; r++)
              for (int s = 0; s < 3; s++) {
                int h = p * 2 + r - 1, ww = q + s - 2;
                if (h < 0 || h >= 6 || ww < 0 || ww >= 5) continue;
                acc += x[((g * 2 + cc) * 6 + h) * 5 + ww] * w[((k * 2 + cc) * 3 + r) * 3 + s];
              }
          bad += ((float *)y.data)[(k * 3 + p) * 5 + q] != acc;
        }
    CHECK(bad == 0);
    cov_tensor_release(&y);
  }
  cov_tensor_release(&in[0]);
  cov_tensor_release(&in[1]);
  cov_codelet_lib_free(lib);
}

/* print(c) parses back to a codelet that prints the same, for every
 * shipped codelet, through the C API. */
static void test_print_roundtrip(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/codelets", g_src);
  cov_codelet_lib *lib = NULL;
  cov_status st = cov_codelet_lib_load(dir, &lib);
  CHECK(st == NULL && cov_codelet_lib_count(lib) >= 30);
  cov_status_free(st);
  int bad = 0;
  for (size_t i = 0; i < cov_codelet_lib_count(lib); i++) {
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    FILE *f = open_memstream(&a, &na);
    cov_status_free(cov_codelet_print(cov_codelet_lib_at(lib, i), f));
    fclose(f);
    cov_codelet_lib *again = NULL;
    st = cov_codelet_lib_load_buffer(a, na, "printed.cdl", &again);
    if (st || cov_codelet_lib_count(again) != 1 ||
        strcmp(cov_codelet_name(cov_codelet_lib_at(again, 0)),
               cov_codelet_name(cov_codelet_lib_at(lib, i))) != 0) {
      bad++;
    } else {
      f = open_memstream(&b, &nb);
      cov_status_free(cov_codelet_print(cov_codelet_lib_at(again, 0), f));
      fclose(f);
      bad += na != nb || memcmp(a, b, na) != 0;
    }
    cov_status_free(st);
    cov_codelet_lib_free(again);
    free(a);
    free(b);
  }
  CHECK(bad == 0);
  cov_codelet_lib_free(lib);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* COVENANT_CODELET_PATH comes first and hides shipped codelets of the same
 * name; within one directory a name defined twice is an error. */
static void test_search_path(void) {
  char dir[] = "/tmp/cov-cdl-path-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(0);
    return;
  }
  char p1[256], p2[256];
  snprintf(p1, sizeof p1, "%s/mine.cdl", dir);
  write_file(p1, "codelet relu<T>(x: T[N]) -> (y: T[N]) {\n  for i in N {\n    y[i] = neg(x[i])\n  }\n}\n");
  setenv("COVENANT_CODELET_PATH", dir, 1);
  cov_codelet_lib *lib = NULL;
  cov_status st = cov_codelet_lib_load(NULL, &lib);
  CHECK(st == NULL);
  cov_status_free(st);
  const cov_codelet *r = cov_codelet_lib_find(lib, "relu");
  CHECK(r && strstr(r->file, "mine.cdl") != NULL);
  CHECK(cov_codelet_lib_find(lib, "conv2d") != NULL);
  cov_codelet_lib_free(lib);
  unsetenv("COVENANT_CODELET_PATH");

  snprintf(p2, sizeof p2, "%s/other.cdl", dir);
  write_file(p2, "codelet relu<T>(x: T[N]) -> (y: T[N]) {\n  for i in N {\n    y[i] = x[i]\n  }\n}\n");
  st = cov_codelet_lib_load(dir, &lib);
  char buf[512];
  cov_status_format(st, buf, sizeof buf);
  CHECK(lib == NULL && strstr(buf, "other.cdl:1:9: error: relu: codelet 'relu' is already "
                                   "defined at ") && strstr(buf, "mine.cdl:1:9"));
  cov_status_free(st);
  unlink(p1);
  unlink(p2);
  rmdir(dir);
}

/* Reduction nests (cdl_interp.c's run_nest keeps the destination element in
 * a register): against naive loops, with per-step f16 rounding, `else`
 * values of a checked access inside the nest, and a statement that reads
 * its destination's tensor at another element, which must see every
 * earlier step's store. */
static void test_reduction_nests(void) {
  cov_codelet_lib *lib = load(
      "codelet rsum(x: f16[N, K]) -> (y: f16[N]) {\n"
      "  for i in N {\n"
      "    y[i] = 0\n"
      "    for k in K, j in 2 {\n"
      "      y[i] = add(y[i], x[i, k + j - 1] else 0.5)\n"
      "    }\n"
      "  }\n"
      "}\n"
      "codelet other(x: f32[N, K]) -> (y: f32[N]) {\n"
      "  for i in N {\n"
      "    y[i] = 1\n"
      "    for k in K {\n"
      "      y[i] = add(y[0], x[i, k])\n"
      "    }\n"
      "  }\n"
      "}\n");
  CHECK(lib != NULL);
  if (!lib) return;
  enum { N = 3, K = 40 };
  int64_t shape[2] = {N, K};
  cov_tensor x16, x32, y;
  cov_tensor_alloc(&x16, COV_F16, 2, shape);
  cov_tensor_alloc(&x32, COV_F32, 2, shape);
  float xv[N][K];
  for (int i = 0; i < N; i++)
    for (int k = 0; k < K; k++) {
      /* multiples of 1/8 up to 40: f16 sums of them round once they pass 256 */
      xv[i][k] = (float)((i * 37 + k * 11) % 320) / 8.0f;
      ((uint16_t *)x16.data)[i * K + k] = cov_f32_to_f16(xv[i][k]);
      ((float *)x32.data)[i * K + k] = xv[i][k];
    }
  cov_code code;
  run_msg(cov_codelet_lib_find(lib, "rsum"), NULL, 0, &x16, 1, &y, 1, &code);
  CHECK(code == COV_OK);
  for (int i = 0; code == COV_OK && i < N; i++) {
    uint16_t h = cov_f32_to_f16(0);
    for (int k = 0; k < K; k++)
      for (int j = 0; j < 2; j++) {
        float v = k + j - 1 < 0 || k + j - 1 >= K ? 0.5f : xv[i][k + j - 1];
        h = cov_f32_to_f16(cov_f16_to_f32(h) + v); /* exact in f32, then rounded */
      }
    CHECK(((uint16_t *)y.data)[i] == h);
  }
  cov_tensor_release(&y);
  run_msg(cov_codelet_lib_find(lib, "other"), NULL, 0, &x32, 1, &y, 1, &code);
  CHECK(code == COV_OK);
  if (code == COV_OK) {
    float y0 = 1;
    for (int k = 0; k < K; k++) y0 += xv[0][k];
    const float *v = y.data;
    CHECK(v[0] == y0 && v[1] == y0 + xv[1][K - 1] && v[2] == y0 + xv[2][K - 1]);
  }
  cov_tensor_release(&y);
  cov_tensor_release(&x16);
  cov_tensor_release(&x32);
  cov_codelet_lib_free(lib);
}

int main(int argc, char **argv) {
  snprintf(g_src, sizeof g_src, "%s", argc > 1 ? argv[1] : ".");
  test_lookup_and_run();
  test_runtime_errors();
  test_load_errors();
  test_shipped_conv2d();
  test_reduction_nests();
  test_print_roundtrip();
  test_search_path();
  return check_summary();
}

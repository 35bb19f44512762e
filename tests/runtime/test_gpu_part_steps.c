/* tests/runtime/test_gpu_part_steps.c: a GPU artifact with a part step
 * (runtime/README.md, "Data-dependent sizes") run by the runtime's CUDA
 * session against the stand-in driver (fake_cuda.c, found through
 * LD_LIBRARY_PATH): a launch makes h = x + 1 on the device, a part step
 * runs the model MODEL (tests/runtime/control_model.py --select: y =
 * x[x > 0] and idx, the positions, sizes that depend on the data) on h in
 * the reference interpreter on the host, its outputs at their capacities
 * (4 elements), and a launch after it adds 1 to x again into z (a second
 * straight segment). Device memory is the stand-in's own, so a value the
 * session does not download before the part step or upload after it gives
 * a wrong result; each run is compared with the same computation as a
 * plain C loop, for inputs with 0, 2 and 4 positive values, with the
 * outputs' shapes the run gives them; again after timing with CUDA graphs
 * (each segment captured once and replayed). Then the same artifact with
 * y's capacity 2 refuses a run that makes 3 values, located at the part
 * step's output (steps[1].out[0]), and a cap below the capacity
 * (crt_options.max_dynamic_elems) refuses one too.
 * Usage: test_gpu_part_steps MODEL.onnx (exits 77 where the stand-in is not
 * found). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/crt.h"

/* The artifact: x f32[4] in; y f32[<= cap], idx i64[1, <= 4], z f32[4] out. */
static cov_status build(const char *model, int64_t cap, uint8_t **bytes, size_t *n) {
  crt_builder *b = NULL;
  COV_RETURN_IF_ERROR(crt_builder_new("nvptx-sm90", "nvptx", "sm_90a", "select.onnx", &b));
  int64_t four = 4, idx_shape[2] = {1, 4};
  static const char code[] = "// kernels of the stand-in driver\n";
  int mod = crt_add_module(b, "fk", "ptx", code, sizeof code);
  int x = crt_add_buffer(b, "x", CRT_BUF_INPUT, COV_F32, 1, &four, 16);
  int y = crt_add_buffer(b, "y", CRT_BUF_OUTPUT, COV_F32, 1, &cap, (uint64_t)cap * 4);
  int idx = crt_add_buffer(b, "idx", CRT_BUF_OUTPUT, COV_I64, 2, idx_shape, 32);
  int z = crt_add_buffer(b, "z", CRT_BUF_OUTPUT, COV_F32, 1, &four, 16);
  int h = crt_add_buffer(b, "h", CRT_BUF_INTERMEDIATE, COV_F32, 1, &four, 16);
  crt_set_dynamic(b, y, 1u), crt_set_dynamic(b, idx, 2u);
  crt_add_input(b, "x", COV_F32, 1, &four, x);
  crt_add_output(b, "y", COV_F32, 1, &cap, y);
  crt_add_output(b, "idx", COV_I64, 2, idx_shape, idx);
  crt_add_output(b, "z", COV_F32, 1, &four, z);
  const uint32_t one[3] = {1, 1, 1};
  crt_arg i4 = {.kind = CRT_ARG_I64, .i = 4};
  crt_add_launch(b, 0, "add", mod, "fk_add1", one, one, 0, (crt_arg[]){crt_buf_arg(x, 0), crt_buf_arg(h, 0), i4}, 3);
  static const char *const values[] = {"x", "y", "idx"}; /* the model's input x is h here */
  cov_status st = crt_add_model_part(b, model, 1, "where", values, (int[]){h, y, idx}, 1, 2);
  crt_add_launch(b, 2, "again", mod, "fk_add1", one, one, 0, (crt_arg[]){crt_buf_arg(x, 0), crt_buf_arg(z, 0), i4}, 3);
  if (!st) st = crt_builder_finish(b, bytes, n);
  crt_builder_free(b);
  return st;
}

/* The same as a plain loop: h = x + 1, its positive values and their
 * positions, z = x + 1; how many are positive. */
static int expected(const float *x, float *y, int64_t *idx, float *z) {
  int n = 0;
  for (int i = 0; i < 4; i++) {
    z[i] = x[i] + 1.0f;
    if (z[i] > 0.0f) y[n] = z[i], idx[n++] = i;
  }
  return n;
}

static const float k_inputs[3][4] = {{-1.5f, -2.0f, -3.0f, -4.0f}, {0.5f, -1.5f, -3.0f, 2.0f}, {1, 2, 3, 4}};

/* A run on input k against the plain loop: values and shapes. */
static int check_one(crt_session *s, int k, const char *when) {
  int64_t four = 4;
  cov_tensor in = {0}, out[3] = {{0}};
  cov_tensor_alloc(&in, COV_F32, 1, &four);
  memcpy(in.data, k_inputs[k], sizeof k_inputs[k]);
  cov_status st = crt_session_run(s, &in, 1, out, 3);
  float y[4], z[4];
  int64_t idx[4];
  int n = expected(k_inputs[k], y, idx, z), ok = !st;
  if (st) cov_status_print(stderr, st, 0), cov_status_free(st);
  ok = ok && out[0].rank == 1 && out[0].shape[0] == n && out[1].rank == 2 && out[1].shape[0] == 1 &&
       out[1].shape[1] == n && out[2].rank == 1 && out[2].shape[0] == 4;
  ok = ok && !memcmp(out[0].data, y, (size_t)n * 4) && !memcmp(out[1].data, idx, (size_t)n * 8) &&
       !memcmp(out[2].data, z, sizeof z);
  printf("%-4s %s, input %d: %d positive value(s), y [%lld], idx [1, %lld]\n", ok ? "PASS" : "FAIL", when, k, n,
         ok ? (long long)out[0].shape[0] : -1LL, ok ? (long long)out[1].shape[1] : -1LL);
  cov_tensor_release(&in);
  for (int o = 0; o < 3; o++) cov_tensor_release(&out[o]);
  return !ok;
}

static int check_runs(crt_session *s, const char *when) {
  int bad = 0;
  for (int k = 0; k < 3; k++) bad += check_one(s, k, when);
  return bad;
}

/* Input 2 (4 positive values) on an artifact whose y holds `cap`, under
 * the cap `max`: refused with `want`, located at the part's output. */
static int refused(const char *model, int64_t cap, uint64_t max, const char *want) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  crt_artifact *a = NULL;
  crt_session *s = NULL;
  crt_options opts = {.max_dynamic_elems = max};
  cov_status st = build(model, cap, &bytes, &n);
  if (!st) st = crt_artifact_read(bytes, n, "small.cvx", &a);
  if (!st) st = crt_session_open(a, &opts, &s);
  int64_t four = 4;
  cov_tensor in = {0}, out[3] = {{0}};
  if (!st) st = cov_tensor_alloc(&in, COV_F32, 1, &four);
  if (!st) {
    memcpy(in.data, k_inputs[2], sizeof k_inputs[2]);
    st = crt_session_run(s, &in, 1, out, 3);
  }
  char msg[1024] = "no error";
  if (st) cov_status_format(st, msg, sizeof msg);
  int ok = st && strstr(msg, want) && strstr(msg, "steps[1].out[0]");
  printf("%-4s capacity %lld, cap %llu: %s\n", ok ? "PASS" : "FAIL", (long long)cap, (unsigned long long)max, msg);
  cov_status_free(st);
  cov_tensor_release(&in);
  for (int o = 0; o < 3; o++) cov_tensor_release(&out[o]);
  crt_session_close(s);
  crt_artifact_free(a);
  free(bytes);
  return !ok;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]);
    return 2;
  }
  void *fake = dlopen("libcuda.so.1", RTLD_NOW);
  if (!fake || !dlsym(fake, "fake_cuda_counts")) {
    printf("SKIP: the stand-in driver (fake_cuda.c as libcuda.so.1) is not first on LD_LIBRARY_PATH\n");
    return 77;
  }
  uint8_t *bytes = NULL;
  size_t n = 0;
  crt_artifact *a = NULL;
  crt_session *s = NULL;
  crt_options opts = {0};
  cov_status st = build(argv[1], 4, &bytes, &n);
  if (!st) st = crt_artifact_read(bytes, n, "select.cvx", &a);
  if (!st) st = crt_session_open(a, &opts, &s);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  int bad = check_runs(s, "plain launches");
  double ms = 0;
  const char *how = "";
  st = crt_session_time(s, 1, 2, &ms, &how);
  if (st) cov_status_print(stderr, st, 0), cov_status_free(st), bad++;
  bad += check_runs(s, "segments replayed from graphs");
  crt_session_close(s);
  crt_artifact_free(a);
  free(bytes);
  bad += refused(argv[1], 2, 0, "value 'y' is f32[4] in this run; its buffer 1 holds f32[2 at most]");
  bad += refused(argv[1], 4, 3, "value 'y' holds 4 elements in this run, more than --max-dynamic 3");
  dlclose(fake);
  return bad != 0;
}

/* tests/runtime/test_gpu_host_steps.c: a GPU artifact with host steps and
 * control (runtime/README.md, "On a GPU") run by the runtime's CUDA
 * session against a stand-in driver (fake_cuda.c, found through
 * LD_LIBRARY_PATH): a while loop whose body launches two kernels (h + 1,
 * then whether its first element is below a limit), its trip count a
 * model input, the carried value moved by the next step, then an if
 * choosing a launch or a copy. Device memory is the stand-in's own, so a
 * value a host step reads but the session did not download, or writes but
 * did not upload, gives a wrong result; each run is compared with the
 * same computation as a plain C loop, for trip counts 0, 1, 3 and 20 (the
 * condition stops that one at 10). Then timed with CUDA graphs: each
 * straight segment captured once and replayed (no copy or sync inside a
 * capture: the stand-in refuses them), and the results still right. A
 * loop that never ends stops at the iteration limit (100,000).
 * Usage: test_gpu_host_steps (exits 77 where the stand-in is not found). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/crt.h"

static const float k_x[4] = {0.5f, -1.0f, 2.0f, 3.0f};

/* The artifact: x f32[4], n i64 in; y f32[4] out. */
static cov_status build(float limit, uint8_t **bytes, size_t *n) {
  crt_builder *b = NULL;
  COV_RETURN_IF_ERROR(crt_builder_new("nvptx-sm90", "nvptx", "sm_90a", "loop.onnx", &b));
  int64_t four = 4;
  static const char code[] = "// kernels of the stand-in driver\n";
  int mod = crt_add_module(b, "fk", "ptx", code, sizeof code);
  int x = crt_add_buffer(b, "x", CRT_BUF_INPUT, COV_F32, 1, &four, 16);
  int nb = crt_add_buffer(b, "n", CRT_BUF_INPUT, COV_I64, 0, NULL, 8);
  int y = crt_add_buffer(b, "y", CRT_BUF_OUTPUT, COV_F32, 1, &four, 16);
  int h = crt_add_buffer(b, "h", CRT_BUF_INTERMEDIATE, COV_F32, 1, &four, 16);
  int h2 = crt_add_buffer(b, "h2", CRT_BUF_INTERMEDIATE, COV_F32, 1, &four, 16);
  int c = crt_add_buffer(b, "c", CRT_BUF_INTERMEDIATE, COV_BOOL, 0, NULL, 1);
  int it = crt_add_buffer(b, "it", CRT_BUF_INTERMEDIATE, COV_I64, 0, NULL, 8);
  int c2 = crt_add_buffer(b, "c2", CRT_BUF_INTERMEDIATE, COV_BOOL, 0, NULL, 1);
  crt_add_input(b, "x", COV_F32, 1, &four, x);
  crt_add_input(b, "n", COV_I64, 0, NULL, nb);
  crt_add_output(b, "y", COV_F32, 1, &four, y);
  const uint32_t one[3] = {1, 1, 1};
  crt_arg i4 = {.kind = CRT_ARG_I64, .i = 4}, lim10 = {.kind = CRT_ARG_F32, .f = limit},
          lim8 = {.kind = CRT_ARG_F32, .f = 8.0f};
  crt_add_copy(b, 0, "enter", x, h);                                          /* 0 */
  int loop = crt_add_control(b, CRT_STEP_LOOP, 1, "loop", (int[]){nb, -1, it, -1}, 4); /* 1 */
  crt_add_launch(b, 2, "add", mod, "fk_add1", one, one, 0, (crt_arg[]){crt_buf_arg(h, 0), crt_buf_arg(h2, 0), i4}, 3);
  crt_add_launch(b, 3, "lt", mod, "fk_lt", one, one, 0, (crt_arg[]){crt_buf_arg(h2, 0), crt_buf_arg(c, 0), lim10}, 3);
  int next = crt_add_control(b, CRT_STEP_NEXT, 1, "loop", (int[]){c, h2, h}, 3); /* 4 */
  crt_add_launch(b, 4, "lt", mod, "fk_lt", one, one, 0, (crt_arg[]){crt_buf_arg(h, 0), crt_buf_arg(c2, 0), lim8}, 3);
  int iff = crt_add_control(b, CRT_STEP_IF, 5, "if", (int[]){c2}, 1);           /* 6 */
  crt_add_launch(b, 6, "then", mod, "fk_add1", one, one, 0, (crt_arg[]){crt_buf_arg(h, 0), crt_buf_arg(y, 0), i4}, 3);
  int jump = crt_add_control(b, CRT_STEP_JUMP, 5, "if", NULL, 0);               /* 8 */
  crt_add_copy(b, 7, "else", h, y);                                           /* 9 */
  crt_set_target(b, loop, next), crt_set_target(b, next, loop);
  crt_set_target(b, iff, jump + 1), crt_set_target(b, jump, crt_builder_num_steps(b));
  cov_status st = crt_builder_finish(b, bytes, n);
  crt_builder_free(b);
  return st;
}

/* The same as a plain loop. */
static void expected(int64_t n, float y[4]) {
  float h[4];
  memcpy(h, k_x, sizeof h);
  for (int64_t k = 0; k < n; k++) {
    for (int i = 0; i < 4; i++) h[i] += 1.0f;
    if (!(h[0] < 10.0f)) break;
  }
  for (int i = 0; i < 4; i++) y[i] = h[0] < 8.0f ? h[i] + 1.0f : h[i];
}

static int check_runs(crt_session *s, const char *when) {
  static const int64_t trips[] = {0, 1, 3, 20};
  int bad = 0;
  for (size_t t = 0; t < sizeof trips / sizeof *trips; t++) {
    int64_t four = 4;
    cov_tensor in[2] = {{0}}, out = {0};
    cov_tensor_alloc(&in[0], COV_F32, 1, &four);
    cov_tensor_alloc(&in[1], COV_I64, 0, NULL);
    memcpy(in[0].data, k_x, sizeof k_x);
    memcpy(in[1].data, &trips[t], 8);
    cov_status st = crt_session_run(s, in, 2, &out, 1);
    float want[4];
    expected(trips[t], want);
    if (st) {
      cov_status_print(stderr, st, 0), cov_status_free(st), bad++;
    } else {
      const float *got = out.data;
      int ok = 1;
      for (int i = 0; i < 4; i++) ok &= fabsf(got[i] - want[i]) == 0.0f;
      printf("%-4s %s, trip count %lld: y = [%g %g %g %g], want [%g %g %g %g]\n", ok ? "PASS" : "FAIL", when,
             (long long)trips[t], got[0], got[1], got[2], got[3], want[0], want[1], want[2], want[3]);
      bad += !ok;
    }
    cov_tensor_release(&in[0]), cov_tensor_release(&in[1]), cov_tensor_release(&out);
  }
  return bad;
}

/* A body whose condition stays true and a trip count of 10^12: the run
 * stops at the iteration limit with an error naming the loop. */
static int never_ends(void) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  crt_artifact *a = NULL;
  crt_session *s = NULL;
  crt_options opts = {0};
  cov_status st = build(1e30f, &bytes, &n);
  if (!st) st = crt_artifact_read(bytes, n, "spin.cvx", &a);
  if (!st) st = crt_session_open(a, &opts, &s);
  int64_t four = 4, big = 1000000000000;
  cov_tensor in[2] = {{0}}, out = {0};
  if (!st) st = cov_tensor_alloc(&in[0], COV_F32, 1, &four);
  if (!st) st = cov_tensor_alloc(&in[1], COV_I64, 0, NULL);
  if (!st) {
    memcpy(in[0].data, k_x, sizeof k_x), memcpy(in[1].data, &big, 8);
    st = crt_session_run(s, in, 2, &out, 1);
  }
  const char *want = "loop 'loop' ran 100000 iterations and would run another: the limit is 100000";
  int ok = st && strstr(cov_status_message(st), want) != NULL;
  printf("%-4s a loop that never ends: %s\n", ok ? "PASS" : "FAIL", st ? cov_status_message(st) : "no error");
  cov_status_free(st);
  cov_tensor_release(&in[0]), cov_tensor_release(&in[1]), cov_tensor_release(&out);
  crt_session_close(s);
  crt_artifact_free(a);
  free(bytes);
  return !ok;
}

/* Per-step profile on the last run's inputs (trip count 20): the
 * stand-in's events read 1 ms for each timed batch of 10 launches, so a
 * step's mean is 0.1 ms per time it runs in a run: the loop body (steps 2
 * and 3) 10 times, step 5 once, the then branch (step 7) never, host steps
 * 0; the outputs still right after. */
static int check_profile(crt_session *s, const crt_artifact *a) {
  double ms[16] = {0};
  if (a->n_steps > 16) return printf("FAIL profile: %d steps\n", a->n_steps), 1;
  cov_status st = crt_session_profile(s, 2, ms);
  if (st) return cov_status_print(stderr, st, 0), cov_status_free(st), 1;
  int bad = 0;
  for (int i = 0; i < a->n_steps; i++) {
    double want = i == 2 || i == 3 ? 1.0 : i == 5 ? 0.1 : 0;
    if (fabs(ms[i] - want) > 1e-6) printf("FAIL profile step %d: %g ms (want %g)\n", i, ms[i], want), bad++;
  }
  printf("%-4s per-step profile over %d steps\n", bad ? "FAIL" : "PASS", a->n_steps);
  return bad + check_runs(s, "after profiling");
}

int main(void) {
  void *fake = dlopen("libcuda.so.1", RTLD_NOW);
  void (*counts)(long[4]) = fake ? (void (*)(long[4]))dlsym(fake, "fake_cuda_counts") : NULL;
  if (!counts) {
    printf("SKIP: the stand-in driver (fake_cuda.c as libcuda.so.1) is not first on LD_LIBRARY_PATH\n");
    return 77;
  }
  uint8_t *bytes = NULL;
  size_t n = 0;
  crt_artifact *a = NULL;
  crt_session *s = NULL;
  cov_status st = build(10.0f, &bytes, &n);
  if (!st) st = crt_artifact_read(bytes, n, "loop.cvx", &a);
  crt_options opts = {0};
  if (!st) st = crt_session_open(a, &opts, &s);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  int bad = check_runs(s, "plain launches");
  long c0[4], c1[4];
  counts(c0);
  double ms = 0;
  const char *how = "";
  st = crt_session_time(s, 1, 3, &ms, &how);
  counts(c1);
  if (st) cov_status_print(stderr, st, 0), cov_status_free(st), bad++;
  /* timed on the last run's inputs (trip count 20): the body runs 10
   * times, then step 5; h[0] = 10.5 takes the else branch (a copy). Two
   * segments captured (steps 2-3 and 5), 11 replays in each of 4 runs. */
  long captures = c1[0] - c0[0], replays = c1[1] - c0[1];
  int ok = captures == 2 && replays == 44;
  printf("%-4s timed (%s): %ld segment captures, %ld graph launches (want 2 and 44)\n", ok ? "PASS" : "FAIL", how,
         captures, replays);
  bad += !ok;
  bad += check_runs(s, "segments replayed from graphs");
  counts(c0);
  /* trip count 0 takes the then branch: its launch (step 7) is the one
   * segment not captured before */
  printf("%-4s %ld segment captures in all (want 3: each segment once)\n", c0[0] == 3 ? "PASS" : "FAIL", c0[0]);
  bad += c0[0] != 3;
  bad += check_profile(s, a);
  crt_session_close(s);
  crt_artifact_free(a);
  free(bytes);
  bad += never_ends();
  dlclose(fake);
  return bad != 0;
}

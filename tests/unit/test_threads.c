/* tests/unit/test_threads.c: library calls from several threads at once.
 *
 *   test_threads SOURCE_DIR [THREADS [ROUNDS]]
 *
 * ARCHITECTURE.md promises thread-safe library calls (no mutable global
 * state). Each thread, ROUNDS times: maps a max pool and a conv layer from
 * the suite on npu-16x16 (the schedule printed, cycles), loads and runs
 * examples/convnet.onnx on the CPU reference and on npu-16x16, sharing one
 * ACG and one loaded model with the other threads as well. Every result is
 * compared byte for byte with the same call made first on one thread alone.
 * Built in the ThreadSanitizer tree (-DCOV_TSAN=ON) too, where a race is a
 * report and a failure even when the results happen to come out right; the
 * mapper's file-scope accumulator-init walk made a max pool's
 * schedule say "init=0" (and a conv's "init=-inf") when another thread
 * mapped the other layer at the same time. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "covenant/acg.h"
#include "covenant/mapper.h"
#include "covenant/model.h"
#include "covenant/npu.h"
#include "tests/check.h"

enum { MAX_THREADS = 16, N_LAYERS = 2 };
static const char *const k_layers[N_LAYERS] = {"resnet50_stem_pool", "convnet_layer1"};

/* What one round computes; compared with memcmp/strcmp. */
typedef struct result {
  char *sched[N_LAYERS]; /* cov_schedule_dump text */
  double cycles[N_LAYERS];
  float ref_out[10];     /* convnet's 10 logits on ref */
  float npu_out[10];     /* and on npu-16x16 */
  uint64_t npu_cycles;
  char err[512];         /* the first failure, "" if none */
} result;

typedef struct shared {
  const char *suite, *model_path;
  const cov_acg *acg;     /* shared by every thread */
  const cov_model *model; /* likewise */
  const cov_tensor *input;
  int rounds;
  const result *want;     /* the single-threaded results (NULL: computing them) */
  int mismatches;         /* written by its own thread only: one slot per thread */
} shared;

static void fail(result *r, cov_status st, const char *what) {
  if (!r->err[0]) {
    char msg[400];
    cov_status_format(st, msg, sizeof msg);
    snprintf(r->err, sizeof r->err, "%s: %s", what, msg);
  }
  cov_status_free(st);
}

static void result_free(result *r) {
  for (int l = 0; l < N_LAYERS; l++) free(r->sched[l]);
  memset(r, 0, sizeof *r);
}

/* One round: every call the test exercises, on the shared ACG and model and
 * on a model this thread loads itself. */
static void one_round(const shared *sh, result *r) {
  memset(r, 0, sizeof *r);
  for (int l = 0; l < N_LAYERS; l++) {
    cov_layer *layer = NULL;
    cov_schedule *s = NULL;
    cov_status st = cov_layer_from_suite(sh->suite, k_layers[l], 8, &layer);
    if (!st) st = cov_map(layer, sh->acg, NULL, &s);
    if (st) {
      fail(r, st, k_layers[l]);
    } else {
      size_t len = 0;
      FILE *f = open_memstream(&r->sched[l], &len);
      if (f) {
        cov_status_free(cov_schedule_dump(s, f));
        fclose(f);
      }
      r->cycles[l] = cov_schedule_cycles(s);
    }
    cov_schedule_free(s);
    cov_layer_free(layer);
  }
  /* ref on this thread's own copy of the model */
  cov_model *own = NULL;
  cov_status st = cov_model_load_file(sh->model_path, NULL, &own);
  cov_tensor out = {0};
  if (!st) st = cov_model_run_ref(own, sh->input, 1, &out, 1);
  if (st) {
    fail(r, st, "run ref");
  } else if (cov_tensor_numel(&out) == 10) {
    memcpy(r->ref_out, out.data, sizeof r->ref_out);
  }
  cov_tensor_release(&out);
  cov_model_free(own);
  /* npu-16x16 on the model shared by every thread */
  cov_tensor nout = {0};
  cov_npu_report *rep = NULL;
  st = cov_npu_run_model(sh->model, sh->acg, sh->input, 1, &nout, 1, &rep);
  if (st) {
    fail(r, st, "run npu-16x16");
  } else {
    if (cov_tensor_numel(&nout) == 10) memcpy(r->npu_out, nout.data, sizeof r->npu_out);
    r->npu_cycles = cov_npu_report_cycles(rep);
  }
  cov_npu_report_free(rep);
  cov_tensor_release(&nout);
}

static int same(const result *a, const result *b, char *why, size_t n) {
  if (a->err[0] || b->err[0]) return snprintf(why, n, "error: %s", a->err[0] ? a->err : b->err), 0;
  for (int l = 0; l < N_LAYERS; l++) {
    if (!a->sched[l] || !b->sched[l] || strcmp(a->sched[l], b->sched[l]) != 0)
      return snprintf(why, n, "%s: schedule differs:\n%s", k_layers[l],
                      a->sched[l] ? a->sched[l] : "(none)"), 0;
    if (a->cycles[l] != b->cycles[l]) return snprintf(why, n, "%s: cycles differ", k_layers[l]), 0;
  }
  if (memcmp(a->ref_out, b->ref_out, sizeof a->ref_out) != 0)
    return snprintf(why, n, "convnet on ref: outputs differ"), 0;
  if (memcmp(a->npu_out, b->npu_out, sizeof a->npu_out) != 0)
    return snprintf(why, n, "convnet on npu-16x16: outputs differ"), 0;
  if (a->npu_cycles != b->npu_cycles) return snprintf(why, n, "convnet on npu-16x16: cycles differ"), 0;
  return 1;
}

typedef struct worker {
  pthread_t tid;
  const shared *sh;
  int mismatches;
  char first[2048];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int i = 0; i < w->sh->rounds; i++) {
    result r;
    one_round(w->sh, &r);
    char why[2048];
    if (!same(&r, w->sh->want, why, sizeof why)) {
      if (!w->mismatches) snprintf(w->first, sizeof w->first, "%s", why);
      w->mismatches++;
    }
    result_free(&r);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_threads SOURCE_DIR [THREADS [ROUNDS]]\n");
    return 2;
  }
  int threads = argc > 2 ? atoi(argv[2]) : 4, rounds = argc > 3 ? atoi(argv[3]) : 3;
  if (threads < 1 || threads > MAX_THREADS || rounds < 1) return 2;
  char suite[2048], model_path[2048];
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", argv[1]);
  snprintf(model_path, sizeof model_path, "%s/examples/convnet.onnx", argv[1]);

  cov_acg *acg = NULL;
  cov_model *model = NULL;
  cov_status st = cov_acg_load_target("npu-16x16", &acg);
  if (!st) st = cov_model_load_file(model_path, NULL, &model);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    return 1;
  }
  cov_tensor x = {0};
  int64_t shape[4] = {1, 3, 32, 32};
  CHECK(cov_tensor_alloc(&x, COV_F32, 4, shape) == NULL);
  for (int64_t i = 0; i < cov_tensor_numel(&x); i++) ((float *)x.data)[i] = (float)sin(0.37 * (double)i);

  shared sh = {suite, model_path, acg, model, &x, rounds, NULL, 0};
  result want;
  one_round(&sh, &want); /* alone: the reference for every thread's rounds */
  if (want.err[0]) fprintf(stderr, "single-threaded: %s\n", want.err);
  CHECK(!want.err[0]);
  /* the max pool's accumulator starts at -inf, the conv's at 0 */
  CHECK(want.sched[0] && strstr(want.sched[0], "init=-inf"));
  CHECK(want.sched[1] && strstr(want.sched[1], "init=0"));
  sh.want = &want;

  worker w[MAX_THREADS];
  memset(w, 0, sizeof w);
  for (int t = 0; t < threads; t++) {
    w[t].sh = &sh;
    CHECK(pthread_create(&w[t].tid, NULL, work, &w[t]) == 0);
  }
  for (int t = 0; t < threads; t++) {
    pthread_join(w[t].tid, NULL);
    if (w[t].mismatches)
      fprintf(stderr, "thread %d: %d of %d rounds differ from the single-threaded run; first: %s\n",
              t, w[t].mismatches, rounds, w[t].first);
    CHECK(w[t].mismatches == 0);
  }
  result_free(&want);
  cov_tensor_release(&x);
  cov_model_free(model);
  cov_acg_free(acg);
  return check_summary();
}

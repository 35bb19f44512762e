/* tests/npu-sim/test_rect.c: rectangular pixel tiles (mapper/map_rect.c)
 * through the whole pipeline, on convolutions without an epilogue (each
 * rectangle stored straight from its drain) and with padding and strides
 * (halos at the rectangles' edges), on the bench's output-stationary
 * npu-16x16-os and the shipped npu-32x32-os (whose f16 tile has 16 rows).
 *
 * For each: the mapper's schedule verifies (map_verify's rectangle
 * checks), its rectangles cover the output pixels exactly once, the
 * schedule interpreter (map_interp, capacity-sized buffers) and the
 * simulated program both match the reference interpreter on f16-exact
 * inputs, and where a schedule runs rectangles they are at most
 * ceil(P x Q / 16) + 1. Fails on the code before map_rect.c for the
 * shapes marked `rect` (no rectangles there). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "mapper/map_internal.h"
#include "tests/check.h"
#include "tests/npu-sim/npu_test.h"

typedef struct rect_case {
  int c, h, w, k, r, stride, pad;
  bool rect; /* the mapper must tile this one in rectangles */
} rect_case;

static double max_rel(const cov_tensor *a, const cov_tensor *b) {
  const float *x = a->data, *y = b->data;
  int64_t n = 1;
  for (int d = 0; d < a->rank; d++) n *= a->shape[d];
  double worst = 0, top = 0;
  for (int64_t i = 0; i < n; i++) {
    worst = fmax(worst, fabs((double)x[i] - y[i]));
    top = fmax(top, fabs((double)y[i]));
  }
  return top > 0 ? worst / top : worst;
}

static void one(const cov_acg *g, const char *gname, const rect_case *k) {
  int64_t shapes[2][COV_MAX_RANK] = {{1, k->c, k->h, k->w}, {k->k, k->c, k->r, k->r}};
  int ranks[2] = {4, 4};
  cov_attr attrs[] = {{"stride_h", 0, k->stride, 0}, {"stride_w", 0, k->stride, 0}, {"pad_top", 0, k->pad, 0},
                      {"pad_left", 0, k->pad, 0},    {"pad_bottom", 0, k->pad, 0}, {"pad_right", 0, k->pad, 0}};
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  CHECK(!cov_layer_from_codelet("conv2d", attrs, 6, (const int64_t(*)[COV_MAX_RANK])shapes, ranks, 2, &l));
  CHECK(l && !cov_map(l, g, NULL, &s));
  if (!s) {
    cov_layer_free(l);
    return;
  }
  const map_schedule *ms = map_schedule_of(s);
  int64_t P = (k->h + 2 * k->pad - k->r) / k->stride + 1, Q = (k->w + 2 * k->pad - k->r) / k->stride + 1;
  int64_t area = 0;
  for (int i = 0; i < ms->n_rects; i++) area += ms->rects[i].ext[0] * ms->rects[i].ext[1];
  printf("%s conv %dx%dx%d -> %d, %dx%d /%d pad %d: %lld x %lld pixels, %d rectangles\n", gname, k->c, k->h,
         k->w, k->k, k->r, k->r, k->stride, k->pad, (long long)P, (long long)Q, ms->n_rects);
  CHECK(!k->rect || ms->n_rects > 0);
  CHECK(ms->n_rects == 0 || (area == P * Q && ms->n_rects <= (P * Q + 15) / 16 + 1));
  cov_status vs = map_verify(ms);
  CHECK(vs == NULL);
  cov_status_free(vs);
  /* inputs exactly representable in f16 (the array's multiplicands) */
  cov_tensor in[2] = {{0}, {0}}, ref = {0}, it = {0}, y = {0};
  for (int i = 0; i < 2; i++) {
    CHECK(!cov_tensor_alloc(&in[i], COV_F32, 4, shapes[i]));
    float *f = in[i].data;
    for (int64_t e = 0; f && e < shapes[i][0] * shapes[i][1] * shapes[i][2] * shapes[i][3]; e++) f[e] = rnd();
  }
  CHECK(!cov_layer_reference(l, in, &ref));
  cov_status is = map_interp(ms, in, 2, &it);
  CHECK(is == NULL);
  cov_status_free(is);
  if (!is && ref.data) {
    printf("  interpreter max rel err %.3g\n", max_rel(&it, &ref));
    CHECK(max_rel(&it, &ref) <= 1e-5);
  }
  CHECK(!cov_npu_compile(s, &p));
  if (p) {
    cov_npu_sim *sim = NULL;
    cov_npu_stats *st = run(g, p, &sim, (const char *[]){"in0", "in1"}, in, 2);
    CHECK(!cov_npu_sim_read(sim, "out", &y));
    if (y.data && ref.data) {
      printf("  simulated %llu cycles, max rel err %.3g\n",
             (unsigned long long)(st ? cov_npu_stats_cycles(st) : 0), max_rel(&y, &ref));
      CHECK(max_rel(&y, &ref) <= 1e-5);
    }
    cov_npu_stats_free(st);
    cov_npu_sim_free(sim);
  }
  for (int i = 0; i < 2; i++) cov_tensor_release(&in[i]);
  cov_tensor_release(&ref);
  cov_tensor_release(&it);
  cov_tensor_release(&y);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(l);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  (void)add; /* npu_test.h's program builders: not needed here */
  (void)add_tensor;
  (void)dma2;
  char path[1024];
  snprintf(path, sizeof path, "%s/bench/npu-sim/npu-16x16-os.json", g_src);
  cov_acg *os16 = load_acg_file(path), *os32 = load_target("npu-32x32-os");
  CHECK(os16 && os32);
  static const rect_case cases[] = {
      {10, 15, 15, 10, 5, 1, 0, true}, /* convnet_layer2 without bias and relu: 11 x 11 */
      {10, 11, 11, 10, 3, 1, 1, true}, /* 11 x 11 with halos at the tensor's edges */
      {10, 23, 23, 10, 3, 2, 0, true}, /* 11 x 11, strided */
      {8, 11, 11, 8, 3, 1, 0, true},   /* 9 x 9: 6 rectangles, one 8 x 1 */
      {6, 12, 12, 10, 3, 1, 0, true},  /* 10 x 10: 7 */
      {6, 13, 13, 12, 3, 1, 1, false}, /* 13 x 13: pixels on the columns, no rectangles */
      {12, 16, 16, 12, 5, 1, 0, false}, /* 12 x 12: 9 blocks of 4 x 4 already fill the rows */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (os16) one(os16, "npu-16x16-os", &cases[i]);
    if (os32) one(os32, "npu-32x32-os", &cases[i]);
  }
  cov_acg_free(os16);
  cov_acg_free(os32);
  return check_summary();
}

/* tests/unit/test_data_api.c: the C entry points that hand results out as
 * data (the Python package's), checked against the library's own figures
 * and independent counts: cov_acg_to_json (loads back to the same canonical
 * text), cov_explore_derive (dims follow; one value per assignment; an
 * invalid design located), cov_schedule_json (cycles and alternatives as
 * cov_schedule_* says), cov_run_model (ref vs npu-16x16 outputs, the
 * report's cycles summed; ref keeps no report), cov_layer_example and
 * cov_onnx_op_at. Usage: test_data_api SRCDIR (examples/convnet.onnx). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "covenant/acg.h"
#include "covenant/arena.h"
#include "covenant/explore.h"
#include "covenant/mapper.h"
#include "covenant/model.h"
#include "covenant/run.h"
#include "tests/check.h"

static void test_acg_json(void) {
  cov_acg *g = NULL, *g2 = NULL;
  char *a = NULL, *b = NULL;
  CHECK(cov_acg_load_target("npu-16x16", &g) == NULL);
  CHECK(g && cov_acg_to_json(g, &a, NULL) == NULL && a);
  CHECK(a && cov_acg_load_buffer(a, strlen(a), "again.json", &g2) == NULL);
  CHECK(g2 && cov_acg_to_json(g2, &b, NULL) == NULL && b && !strcmp(a, b));
  CHECK(a && strstr(a, "\"tile\": [\n") != NULL); /* the default written out */
  cov_free(a), cov_free(b), cov_acg_free(g), cov_acg_free(g2);
}

static void test_derive(void) {
  cov_acg *g = NULL;
  char *base = NULL, *out = NULL, *notes = NULL;
  CHECK(cov_acg_load_target("npu-16x16", &g) == NULL);
  cov_acg_to_json(g, &base, NULL);
  const char *dims[] = {"pe_array.dims=8x8"};
  CHECK(cov_explore_derive(base, strlen(base), "base.json", dims, 1, &out, &notes) == NULL);
  CHECK(out && strstr(out, "\"throughput\": 64") != NULL);
  CHECK(notes && strstr(notes, "area_mm2") != NULL);
  cov_free(out), cov_free(notes);
  const char *two[] = {"pe_array.dims=8x8,4x4"};
  cov_status st = cov_explore_derive(base, strlen(base), "base.json", two, 1, &out, NULL);
  CHECK(st && cov_status_code(st) == COV_INVALID_ARGUMENT && out == NULL);
  cov_status_free(st);
  const char *zero[] = {"ibuf.capacity=0"};
  st = cov_explore_derive(base, strlen(base), "base.json", zero, 1, &out, NULL);
  CHECK(st && cov_status_loc(st).path && !strcmp(cov_status_loc(st).path, "$.storage[1].capacity"));
  cov_status_free(st);
  cov_free(base), cov_acg_free(g);
}

static void test_schedule_json(void) {
  cov_acg *g = NULL;
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  char *j = NULL;
  CHECK(cov_acg_load_target("npu-16x16", &g) == NULL);
  CHECK(cov_layer_from_suite(NULL, "convnet_layer1", 1, &l) == NULL);
  CHECK(l && g && cov_map(l, g, NULL, &s) == NULL);
  CHECK(s && cov_schedule_json(s, &j, NULL) == NULL && j);
  char want[64];
  snprintf(want, sizeof want, "\"ops\": %.1f", 10.0 * 30 * 30 * 3 * 3 * 3);
  CHECK(j && strstr(j, want) != NULL);
  /* one "cost" per schedule: the chosen one and each alternative */
  int n = 0;
  for (const char *p = j; p && (p = strstr(p, "\"cost\":")); p++) n++;
  CHECK(s && n == 1 + cov_schedule_num_alternatives(s));
  cov_free(j), cov_schedule_free(s), cov_layer_free(l), cov_acg_free(g);
}

static double max_rel(const cov_tensor *a, const cov_tensor *b) {
  int64_t n = cov_tensor_numel(a);
  double m = 0, r = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
    m = fmax(m, fabs(x - y)), r = fmax(r, fabs(y));
  }
  return r > 0 ? m / r : m;
}

static void test_run(const char *src) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/convnet_input.npy", src);
  cov_tensor x = {0}, y_ref = {0}, y_npu = {0};
  CHECK(cov_npy_read(path, &x) == NULL);
  snprintf(path, sizeof path, "%s/examples/convnet.onnx", src);
  cov_model *m = NULL;
  CHECK(cov_model_load_file(path, NULL, &m) == NULL);
  char *rep = NULL;
  CHECK(m && cov_run_model("ref", m, path, &x, 1, &y_ref, 1, &rep) == NULL && rep == NULL);
  CHECK(m && cov_run_model("npu-16x16", m, path, &x, 1, &y_npu, 1, &rep) == NULL && rep);
  CHECK(y_ref.data && y_npu.data && max_rel(&y_npu, &y_ref) < 1e-2);
  /* the report's total is the sum of its rows' cycles */
  unsigned long long total = 0, sum = 0, c;
  const char *p = rep ? strstr(rep, "\"cycles\": ") : NULL;
  if (p) total = strtoull(p + 10, NULL, 10);
  for (const char *q = p ? strstr(p + 1, "\"cycles\": ") : NULL; q; q = strstr(q + 1, "\"cycles\": "))
    if (sscanf(q + 10, "%llu", &c) == 1) sum += c;
  CHECK(total > 0 && total == sum);
  cov_status st = cov_run_model("npu16x16", m, path, &x, 1, &y_ref, 1, NULL);
  CHECK(st && cov_status_code(st) == COV_NOT_FOUND);
  cov_status_free(st);
  cov_free(rep), cov_tensor_release(&x), cov_tensor_release(&y_ref), cov_tensor_release(&y_npu);
  cov_model_free(m);
}

static void test_examples_and_ops(void) {
  cov_layer *l = NULL;
  CHECK(cov_layer_example("conv2d", 8, &l) == NULL && l && cov_layer_num_inputs(l) == 2);
  cov_layer_free(l);
  cov_status st = cov_layer_example("no_such_codelet", 8, &l);
  CHECK(st && cov_status_code(st) == COV_NOT_FOUND && l == NULL);
  cov_status_free(st);
  size_t n = cov_onnx_op_count();
  int conv = 0, layout_with_codelets = 0;
  for (size_t i = 0; i < n; i++) {
    cov_onnx_op op;
    CHECK(cov_onnx_op_at(i, &op) == NULL);
    CHECK(op.since >= 1 && op.since <= op.until && op.versions && op.versions[0] > 0);
    layout_with_codelets += op.layout && op.n_codelets;
    if (!strcmp(op.op_type, "Conv"))
      conv = op.n_codelets == 2 && !strcmp(op.codelets[0], "conv2d") && !strcmp(op.codelets[1], "bias_add");
  }
  CHECK(n > 100 && conv && !layout_with_codelets);
  cov_onnx_op op;
  st = cov_onnx_op_at(n, &op);
  CHECK(st && cov_status_code(st) == COV_OUT_OF_RANGE);
  cov_status_free(st);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_data_api SRCDIR\n");
    return 2;
  }
  test_acg_json();
  test_derive();
  test_schedule_json();
  test_run(argv[1]);
  test_examples_and_ops();
  return check_summary();
}

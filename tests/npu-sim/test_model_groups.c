/* tests/npu-sim/test_model_groups.c: layer groups as fused layers, through
 * the public APIs.
 *
 *   test_model_groups SOURCE_DIR WORK_DIR   (WORK_DIR: model_run.py's models)
 *
 * - cov_model_group_describe on the example ConvNet: calls, codelets, the
 *   kind of every argument, views, shapes, the group's input and output;
 * - its refusals: a layout group, a node that rearranges data between
 *   calls (odd.onnx: Softmax over axis 1), a group number out of range;
 * - cov_model_run_groups with a group hook computing each group through
 *   cov_layer_from_model_group + cov_layer_reference (the CPU, call after
 *   call): bit-identical to cov_model_run_ref, and the per-call hook sees
 *   none of the calls of handled groups; a group the hook declines runs
 *   call by call; undescribable groups are offered with the reason;
 * - the compile path: each group mapped, compiled, its constants put into
 *   the program, saved and loaded again, then the programs chained in the
 *   simulator with only the model input written: the result matches the
 *   reference target, on both NPU targets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "covenant/mapper.h"
#include "covenant/model.h"
#include "covenant/npu.h"
#include "tests/check.h"

static char g_src[2048], g_work[2048];

static cov_model *load(const char *path) {
  cov_model *m = NULL;
  cov_status st = cov_model_load_file(path, NULL, &m);
  if (st) {
    char msg[512];
    cov_status_format(st, msg, sizeof msg);
    fprintf(stderr, "%s\n", msg);
    cov_status_free(st);
  }
  CHECK(m != NULL);
  return m;
}

static cov_tensor convnet_input(void) {
  cov_tensor x = {0};
  int64_t shape[4] = {1, 3, 32, 32};
  cov_status_free(cov_tensor_alloc(&x, COV_F32, 4, shape));
  for (int64_t i = 0; i < cov_tensor_numel(&x); i++)
    ((float *)x.data)[i] = (float)sin(0.37 * (double)i);
  return x;
}

static bool shape_is(const cov_tensor *t, int rank, const int64_t *s) {
  if (t->rank != rank) return false;
  for (int d = 0; d < rank; d++)
    if (t->shape[d] != s[d]) return false;
  return true;
}

static void test_describe(const cov_model *m) {
  cov_model_group *d = NULL;
  cov_status st = cov_model_group_describe(m, 0, &d);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!d) return;
  CHECK(cov_model_group_index(d) == 0);
  CHECK_STR(cov_model_group_name(d), "conv1");
  CHECK_STR(cov_model_group_kind(d), "conv+bias+relu+maxpool");
  CHECK(cov_model_group_num_calls(d) == 4);
  const char *want[] = {"conv2d", "bias_add", "relu", "maxpool"};
  for (size_t c = 0; c < 4 && c < cov_model_group_num_calls(d); c++)
    CHECK_STR(cov_model_group_call_at(d, c)->codelet, want[c]);
  CHECK(cov_model_group_call_at(d, 4) == NULL);
  const cov_model_group_call *c0 = cov_model_group_call_at(d, 0);
  int64_t x[4] = {1, 3, 32, 32}, w[4] = {10, 3, 3, 3}, y[4] = {1, 10, 30, 30}, b[1] = {10};
  int64_t flat[1] = {9000}, pooled[4] = {1, 10, 15, 15};
  CHECK(c0->n_args == 2 && c0->n_attrs == 9);
  CHECK_STR(c0->node, "conv1");
  CHECK(c0->args[0].kind == COV_MODEL_ARG_EXTERNAL && c0->args[0].input == 0);
  CHECK_STR(c0->args[0].value, "input");
  CHECK(shape_is(&c0->args[0].t, 4, x) && c0->args[0].t.data == NULL);
  CHECK(c0->args[1].kind == COV_MODEL_ARG_CONST && c0->args[1].t.data != NULL);
  CHECK_STR(c0->args[1].value, "conv1.weight");
  CHECK(shape_is(&c0->args[1].t, 4, w));
  CHECK(shape_is(&c0->out, 4, y) && c0->out.data == NULL);
  const cov_model_group_call *c1 = cov_model_group_call_at(d, 1);
  CHECK(c1->n_args == 2 && c1->args[0].kind == COV_MODEL_ARG_PREV && c1->args[0].value == NULL);
  CHECK(shape_is(&c1->args[0].t, 4, y));
  CHECK(c1->args[1].kind == COV_MODEL_ARG_CONST && shape_is(&c1->args[1].t, 1, b));
  const cov_model_group_call *c2 = cov_model_group_call_at(d, 2);
  CHECK_STR(c2->node, "relu1");
  CHECK(c2->args[0].kind == COV_MODEL_ARG_PREV && shape_is(&c2->args[0].t, 1, flat));
  const cov_model_group_call *c3 = cov_model_group_call_at(d, 3);
  CHECK(c3->args[0].kind == COV_MODEL_ARG_PREV && shape_is(&c3->args[0].t, 4, y));
  CHECK(shape_is(&c3->out, 4, pooled));
  bool k2 = false;
  for (size_t a = 0; a < c3->n_attrs; a++)
    k2 |= !strcmp(c3->attrs[a].name, "kernel_h") && c3->attrs[a].i == 2;
  CHECK(k2);
  CHECK(cov_model_group_num_inputs(d) == 1);
  cov_tensor t;
  CHECK_STR(cov_model_group_input(d, 0, &t), "input");
  CHECK(shape_is(&t, 4, x) && t.dtype == COV_F32);
  CHECK(cov_model_group_input(d, 1, &t) == NULL);
  CHECK_STR(cov_model_group_output(d, &t), "pool1_out");
  CHECK(shape_is(&t, 4, pooled));
  /* The mapper layer's inputs are the calls' arguments in order. */
  cov_layer *l = NULL;
  st = cov_layer_from_model_group(d, &l);
  CHECK(st == NULL);
  cov_status_free(st);
  if (l) {
    CHECK(cov_layer_num_inputs(l) == 3);
    const cov_model_arg *a = NULL;
    cov_status_free(cov_layer_model_input(d, 2, &a));
    CHECK(a && a->kind == COV_MODEL_ARG_CONST && !strcmp(a->value, "conv1.bias"));
    st = cov_layer_model_input(d, 3, &a);
    CHECK(st != NULL && a == NULL);
    cov_status_free(st);
  }
  cov_layer_free(l);
  cov_model_group_free(d);
  st = cov_model_group_describe(m, 2, &d);
  CHECK(st != NULL && cov_status_code(st) == COV_INVALID_ARGUMENT && d == NULL);
  cov_status_free(st);
  CHECK(cov_model_find_node_group(m, "relu2") == 1);
  CHECK(cov_model_find_node_group(m, "nope") == -1);
}

static void test_refusals(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/odd.onnx", g_work);
  cov_model *m = load(path);
  if (!m) return;
  cov_model_group *d = NULL;
  char msg[1024];
  cov_status st = cov_model_group_describe(m, 0, &d);
  CHECK(st != NULL && cov_status_code(st) == COV_UNSUPPORTED && d == NULL);
  cov_status_format(st, msg, sizeof msg);
  CHECK(strstr(msg, "layout work") != NULL && strstr(msg, "node 'reshape'") != NULL);
  cov_status_free(st);
  st = cov_model_group_describe(m, 1, &d);
  CHECK(st != NULL && cov_status_code(st) == COV_UNSUPPORTED);
  cov_status_format(st, msg, sizeof msg);
  CHECK(strstr(msg, "node 'sm' (Softmax)") != NULL && strstr(msg, "computed inside the node"));
  cov_status_free(st);
  cov_model_free(m);
}

/* A group hook computing groups on the CPU through the mapper's layer. */
typedef struct cpu_ctx {
  int offers, handled, calls, declined_group, undescribed;
  int decline; /* group index to decline, or -1 */
  /* the input the first described group's call 0 reads first (when a group
   * input): its name and shape, and whether
   * its data is x [2, 3, 4, 5] with axes 1, 2 moved last (test_inner_copy) */
  char in0[128];
  cov_tensor in0_shape;
  bool in0_ok;
} cpu_ctx;

/* Whether t holds x[n][h][w][c] = sin(0.7 * index) of [2, 3, 4, 5] at
 * [n][c][h][w]. */
static bool is_moved_last(const cov_tensor *t) {
  if (!t->data || cov_tensor_numel(t) != 120) return false;
  for (int n = 0; n < 2; n++)
    for (int h = 0; h < 3; h++)
      for (int w = 0; w < 4; w++)
        for (int ch = 0; ch < 5; ch++)
          if (((const float *)t->data)[((n * 5 + ch) * 3 + h) * 4 + w] !=
              (float)sin(0.7 * (((n * 3 + h) * 4 + w) * 5 + ch)))
            return false;
  return true;
}

static cov_status cpu_group(void *user, const cov_model_group_offer *o, cov_tensor *out,
                            size_t n_out, int *handled) {
  cpu_ctx *c = user;
  c->offers++;
  *handled = 0;
  if (!o->desc) {
    /* at run time the transposed input is a group input of its own; the
     * result, transposed back after the call, is what still refuses */
    c->undescribed += o->why_not && strstr(o->why_not, "rearranges it after the call") != NULL;
    return NULL;
  }
  const cov_model_arg *a0 = cov_model_group_num_calls(o->desc) ? cov_model_group_call_at(o->desc, 0)->args : NULL;
  if (!c->in0[0] && a0 && a0->kind == COV_MODEL_ARG_EXTERNAL && (size_t)a0->input < o->n_in) {
    const char *nm = cov_model_group_input(o->desc, (size_t)a0->input, &c->in0_shape);
    snprintf(c->in0, sizeof c->in0, "%s", nm ? nm : "?");
    c->in0_ok = is_moved_last(&o->in[a0->input]);
  }
  if (o->group == c->decline || n_out != 1) return NULL;
  cov_layer *l = NULL;
  COV_RETURN_IF_ERROR(cov_layer_from_model_group(o->desc, &l));
  int n = cov_layer_num_inputs(l);
  cov_tensor in[8];
  cov_status st = NULL;
  for (int i = 0; i < n && i < 8 && !st; i++) {
    const cov_model_arg *a;
    st = cov_layer_model_input(o->desc, i, &a);
    if (!st) st = cov_layer_input(l, i, &in[i]);
    if (!st) in[i].data = a->kind == COV_MODEL_ARG_EXTERNAL ? o->in[a->input].data : a->t.data;
  }
  if (!st) st = cov_layer_reference(l, in, &out[0]);
  cov_layer_free(l);
  if (!st) {
    cov_tensor want;
    cov_model_group_output(o->desc, &want);
    out[0].rank = want.rank;
    memcpy(out[0].shape, want.shape, sizeof want.shape);
    *handled = 1;
    c->handled++;
  }
  return st;
}

static cov_status count_call(void *user, const cov_model_call *call, cov_tensor *out,
                             size_t n_out, int *handled) {
  (void)call, (void)out, (void)n_out;
  ((cpu_ctx *)user)->calls++;
  *handled = 0;
  return NULL;
}

static void test_run_groups(const cov_model *m) {
  cov_tensor x = convnet_input(), ref = {0}, got = {0};
  cov_status st = cov_model_run_ref(m, &x, 1, &ref, 1);
  CHECK(st == NULL);
  cov_status_free(st);
  for (int decline = -1; decline <= 1; decline++) {
    cpu_ctx c = {.decline = decline};
    st = cov_model_run_groups(m, &x, 1, &got, 1, cpu_group, count_call, &c);
    CHECK(st == NULL);
    cov_status_free(st);
    CHECK(c.offers == 2);
    CHECK(c.handled == (decline < 0 ? 2 : 1));
    /* Group 0 makes 4 calls, group 1 three. */
    CHECK(c.calls == (decline < 0 ? 0 : decline == 0 ? 4 : 3));
    CHECK(got.data && cov_tensor_numel(&got) == cov_tensor_numel(&ref) &&
          memcmp(got.data, ref.data, (size_t)cov_tensor_numel(&ref) * sizeof(float)) == 0);
    cov_tensor_release(&got);
  }
  /* odd.onnx: the layout group is not offered; the softmax group is, with
   * the reason it cannot be described, and then runs by calls. */
  char path[4200];
  snprintf(path, sizeof path, "%s/odd.onnx", g_work);
  cov_model *odd = load(path);
  if (odd) {
    cov_tensor xo = {0}, yo = {0}, ro = {0};
    int64_t s[2] = {4, 15};
    cov_status_free(cov_tensor_alloc(&xo, COV_F32, 2, s));
    for (int i = 0; i < 60; i++) ((float *)xo.data)[i] = (float)cos(i);
    cpu_ctx c = {.decline = -1};
    st = cov_model_run_groups(odd, &xo, 1, &yo, 1, cpu_group, count_call, &c);
    CHECK(st == NULL);
    cov_status_free(st);
    CHECK(c.offers == 1 && c.undescribed == 1 && c.calls == 1);
    cov_status_free(cov_model_run_ref(odd, &xo, 1, &ro, 1));
    CHECK(yo.data && ro.data && memcmp(yo.data, ro.data, 60 * sizeof(float)) == 0);
    cov_tensor_release(&xo);
    cov_tensor_release(&yo);
    cov_tensor_release(&ro);
    cov_model_free(odd);
  }
  cov_tensor_release(&x);
  cov_tensor_release(&ref);
}

/* midmean.onnx (ReduceMean over axes 1, 2 of [2, 3, 4, 5]): the node
 * transposes its input before its one call. Described at load time that
 * copy refuses; offered at run time it is a group input, named after
 * the node and call, at the call's view [1, 10, 1, 12], its data the
 * transposed input; computed from it the group matches the reference. */
static void test_inner_copy(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/midmean.onnx", g_work);
  cov_model *m = load(path);
  if (!m) return;
  cov_model_group *d = NULL;
  char msg[1024];
  cov_status st = cov_model_group_describe(m, 0, &d);
  CHECK(st != NULL && d == NULL);
  cov_status_format(st, msg, sizeof msg);
  CHECK(strstr(msg, "node 'mean' (ReduceMean)") && strstr(msg, "computed inside the node"));
  cov_status_free(st);
  cov_tensor x = {0}, y = {0}, ref = {0};
  int64_t s[4] = {2, 3, 4, 5};
  cov_status_free(cov_tensor_alloc(&x, COV_F32, 4, s));
  for (int i = 0; i < 120; i++) ((float *)x.data)[i] = (float)sin(0.7 * i);
  cpu_ctx c = {.decline = -1};
  st = cov_model_run_groups(m, &x, 1, &y, 1, cpu_group, count_call, &c);
  CHECK(st == NULL);
  cov_status_free(st);
  CHECK(c.offers == 1 && c.handled == 1 && c.calls == 0);
  CHECK(strcmp(c.in0, "mean:call0.in0") == 0);
  CHECK(shape_is(&c.in0_shape, 4, (int64_t[]){1, 10, 1, 12}) && c.in0_ok);
  cov_status_free(cov_model_run_ref(m, &x, 1, &ref, 1));
  CHECK(y.data && ref.data && memcmp(y.data, ref.data, 10 * sizeof(float)) == 0);
  cov_tensor_release(&x);
  cov_tensor_release(&y);
  cov_tensor_release(&ref);
  cov_model_free(m);
}

/* Group i compiled, its constants in the program, through a file. */
static cov_status compile_group(const cov_model *m, size_t i, const cov_acg *acg,
                                cov_npu_program **out) {
  cov_model_group *d = NULL;
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  cov_status st = cov_model_group_describe(m, i, &d);
  if (!st) st = cov_layer_from_model_group(d, &l);
  if (!st) st = cov_map(l, acg, NULL, &s);
  if (!st) st = cov_npu_compile(s, &p);
  for (int k = 0; !st && k < cov_layer_num_inputs(l); k++) {
    const cov_model_arg *a;
    cov_tensor t;
    st = cov_layer_model_input(d, k, &a);
    if (!st) st = cov_layer_input(l, k, &t);
    if (st || a->kind != COV_MODEL_ARG_CONST) continue;
    t.data = a->t.data;
    char nm[16];
    snprintf(nm, sizeof nm, "in%d", k);
    st = cov_npu_program_set_data(p, nm, &t);
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/test_group_%zu.npu", g_work, i);
  if (!st) st = cov_npu_program_save(p, path);
  if (!st) st = cov_npu_program_load(path, out);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(l);
  cov_model_group_free(d);
  return st;
}

static void test_compiled_chain(const cov_model *m, const char *target) {
  cov_acg *acg = NULL;
  cov_status st = cov_acg_load_target(target, &acg);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!acg) return;
  cov_tensor x = convnet_input(), ref = {0}, cur = x, next = {0};
  cov_status_free(cov_model_run_ref(m, &x, 1, &ref, 1));
  for (size_t g = 0; g < 2; g++) {
    cov_npu_program *p = NULL;
    cov_npu_sim *sim = NULL;
    st = compile_group(m, g, acg, &p);
    if (!st) st = cov_npu_sim_create(acg, &sim);
    if (!st) st = cov_npu_sim_load(sim, p);
    if (!st) st = cov_npu_sim_write(sim, "in0", &cur); /* the weights are the program's */
    if (!st) st = cov_npu_sim_run(sim, NULL, NULL);
    if (!st) st = cov_npu_sim_read(sim, "out", &next);
    CHECK(st == NULL);
    if (st) {
      char msg[1024];
      cov_status_format(st, msg, sizeof msg);
      fprintf(stderr, "%s group %zu: %s\n", target, g, msg);
    }
    cov_status_free(st);
    CHECK(cov_npu_program_tensor_has_data(p, 1) && !cov_npu_program_tensor_has_data(p, 0));
    cov_npu_sim_free(sim);
    cov_npu_program_free(p);
    if (g > 0) cov_tensor_release(&cur);
    cur = next;
    memset(&next, 0, sizeof next);
  }
  double err = 0, scale = 0;
  for (int64_t i = 0; cur.data && i < cov_tensor_numel(&ref); i++) {
    double a = ((float *)cur.data)[i], b = ((float *)ref.data)[i];
    if (fabs(a - b) > err) err = fabs(a - b);
    if (fabs(b) > scale) scale = fabs(b);
  }
  CHECK(cur.data && cov_tensor_numel(&cur) == cov_tensor_numel(&ref));
  CHECK(err / scale <= 1e-2);
  printf("%s: compiled groups chained, max rel err %.3e\n", target, err / scale);
  cov_tensor_release(&cur);
  cov_tensor_release(&x);
  cov_tensor_release(&ref);
  cov_acg_free(acg);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_model_groups SOURCE_DIR WORK_DIR\n");
    return 2;
  }
  snprintf(g_src, sizeof g_src, "%s", argv[1]);
  snprintf(g_work, sizeof g_work, "%s", argv[2]);
  char path[4200];
  snprintf(path, sizeof path, "%s/examples/convnet.onnx", g_src);
  cov_model *m = load(path);
  if (m) {
    test_describe(m);
    test_run_groups(m);
    test_compiled_chain(m, "npu-16x16");
    test_compiled_chain(m, "npu-32x32-os");
  }
  test_refusals();
  test_inner_copy();
  cov_model_free(m);
  return check_summary();
}

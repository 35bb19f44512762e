/* tests/gpu/test_gpu_model_bind.c: a model run's group -> GPU layer binding,
 * on the CPU (no device needed).
 *
 * examples/convnet.onnx's two conv groups are bound to the layers that
 * gpu_model_layers builds (input, weights and bias found in the group's
 * description, shapes checked); mismatched layers are refused naming the
 * group and node. Then the whole model runs through cov_model_run_groups
 * with each bound group computed by gpu_reference (the GPU kernels' CPU
 * loop nest) from exactly the operands a device run would upload, and must
 * match cov_model_run_ref: the binding (which tensor is the input, the
 * weights' OIHW layout, the bias, the pooled NCHW output) is right. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_model.h"
#include "backends/gpu/gpu_ref.h"
#include "covenant/model.h"

static int failures;
#define CHECK(cond, ...)                         \
  do {                                           \
    if (!(cond)) {                               \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);              \
      fprintf(stderr, "\n");                     \
      failures++;                                \
    }                                            \
  } while (0)

typedef struct ctx {
  const char *path;
  gpu_layer *layers;
  int n_layers;
  int bound, computed, cpu;
} ctx;

/* An error from binding `l` to `o` must contain `want`. */
static void expect_refused(const char *path, const gpu_layer *l, const cov_model_group_offer *o, const char *want) {
  gpu_group_operands ops;
  cov_status st = gpu_bind_group(path, l, o, &ops);
  char msg[512] = "";
  if (st) cov_status_format(st, msg, sizeof msg);
  CHECK(st && strstr(msg, want), "group %d: expected a refusal with '%s', got '%s'", o->group, want, msg);
  cov_status_free(st);
}

static cov_status hook(void *user, const cov_model_group_offer *o, cov_tensor *out, size_t n_out, int *handled) {
  ctx *c = user;
  *handled = 0;
  const gpu_layer *l = NULL;
  for (int i = 0; i < c->n_layers; i++)
    if (c->layers[i].group == o->group) l = &c->layers[i];
  if (!l) {
    c->cpu++;
    return NULL;
  }
  gpu_group_operands ops;
  COV_RETURN_IF_ERROR(gpu_bind_group(c->path, l, o, &ops));
  c->bound++;
  const gpu_problem *q = &l->prob;
  CHECK(ops.x == &o->in[0], "group %d: the input is not the group's input 0", o->group);
  CHECK(ops.w->rank == 4 && ops.w->shape[0] == q->ck && ops.w->shape[2] == q->cr, "group %d: weights", o->group);
  CHECK(ops.bias && cov_tensor_numel(ops.bias) == q->ck, "group %d: bias", o->group);
  if (o->group == 0) {
    CHECK(!strcmp(l->node, "conv1") && q->cc == 3 && q->ck == 10 && q->cr == 3 && q->epi.maxpool2x2,
          "group 0: conv1 3->10 3x3 with a pool");
    CHECK(cov_tensor_numel(&ops.out) == 10 * 15 * 15, "group 0: pooled output");
    /* refusals, each naming the file, group and node */
    gpu_layer bad = *l;
    bad.prob.ck = 12;
    expect_refused(c->path, &bad, o, "layer group 0 (conv+bias+relu+maxpool, node 'conv1'): the weights");
    bad = *l;
    bad.prob.ch = 31;
    expect_refused(c->path, &bad, o, "the input is f32[1, 3, 32, 32], the GPU layer takes f32[1, 3, 31, 32]");
    bad = *l;
    bad.prob.epi.bias = false;
    expect_refused(c->path, &bad, o, "adds a bias the layer does not have");
    bad = *l;
    bad.prob.epi.maxpool2x2 = false;
    expect_refused(c->path, &bad, o, "the GPU layer writes f32[1, 10, 30, 30]");
    bad = *l;
    bad.group = 1;
    expect_refused(c->path, &bad, o, "is offered for GPU layer");
  }
  /* what the device would compute, on the CPU: the kernels' reference
   * loop nest over exactly the bound operands */
  gpu_plan plan;
  gpu_problem p = *q;
  p.in_dtype = COV_F32;
  COV_RETURN_IF_ERROR(gpu_problem_check(&p, &plan));
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(&plan, &na, &nb, &no, &nbias);
  CHECK((int64_t)na == cov_tensor_numel(ops.x) && (int64_t)nb == cov_tensor_numel(ops.w) &&
            (int64_t)no == cov_tensor_numel(&ops.out) && (int64_t)nbias == q->ck,
        "group %d: buffer sizes", o->group);
  if (n_out != 1) return cov_error(COV_INTERNAL, NULL, "%zu results", n_out);
  COV_RETURN_IF_ERROR(cov_tensor_alloc(&out[0], COV_F32, ops.out.rank, ops.out.shape));
  gpu_reference(&plan, ops.x->data, ops.w->data, ops.bias->data, out[0].data);
  c->computed++;
  *handled = 1;
  return NULL;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "examples/convnet.onnx";
  cov_model *m = NULL;
  gpu_layer *layers = NULL;
  int n = 0;
  cov_status st = cov_model_load_file(path, NULL, &m);
  if (!st) st = gpu_model_layers(m, path, COV_F16, 2, NULL, &layers, &n);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    cov_model_free(m);
    return 1;
  }
  CHECK(n == 2 && layers[0].group == 0 && layers[1].group == 1 && !strcmp(layers[1].node, "conv2"),
        "two conv layers, groups 0 and 1");
  cov_tensor in = {0}, got = {0}, want = {0};
  int64_t shape[4] = {1, 3, 32, 32};
  st = cov_tensor_alloc(&in, COV_F32, 4, shape);
  for (int64_t i = 0; !st && i < cov_tensor_numel(&in); i++) ((float *)in.data)[i] = (float)sin(0.37 * (double)i);
  ctx c = {path, layers, n, 0, 0, 0};
  if (!st) st = cov_model_run_groups(m, &in, 1, &got, 1, hook, NULL, &c);
  if (!st) st = cov_model_run_ref(m, &in, 1, &want, 1);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    failures++;
  } else {
    CHECK(c.bound == 2 && c.computed == 2 && c.cpu == 0, "both groups bound and computed (%d, %d, %d)", c.bound,
          c.computed, c.cpu);
    double md = 0, mr = 0;
    int64_t ne = cov_tensor_numel(&want);
    CHECK(cov_tensor_numel(&got) == ne, "output sizes");
    for (int64_t i = 0; i < ne && cov_tensor_numel(&got) == ne; i++) {
      double a = ((float *)got.data)[i], b = ((float *)want.data)[i];
      if (!(fabs(a - b) <= md)) md = fabs(a - b);
      if (fabs(b) > mr) mr = fabs(b);
    }
    CHECK(mr > 0 && md / mr < 1e-5, "bound run vs reference: max rel err %.3g", mr > 0 ? md / mr : -1.0);
    printf("convnet through the group binding: max rel err vs ref %.3g\n", mr > 0 ? md / mr : -1.0);
  }
  cov_tensor_release(&in), cov_tensor_release(&got), cov_tensor_release(&want);
  free(layers);
  cov_model_free(m);
  if (failures) return 1;
  printf("ok: model groups bind to GPU layers\n");
  return 0;
}

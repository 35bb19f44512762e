/* cli/cmd_run_models.c: `covenant run A.onnx B.onnx ... --target T`:
 * models co-scheduled on one target through its backend's run_models
 * (npu-sim: each model on cores of its own of a multi-core NPU, all at
 * once sharing DRAM; backends/npu-sim/README.md "Co-scheduled models").
 *
 * Each model runs on random inputs (--seed); its outputs are printed and
 * checked as `covenant run` checks one model without expected outputs:
 * the backend's own check of its programs, then every output against
 * --target ref on the same inputs (up to ten times the tolerance counts as
 * the datapath's rounding once the programs' check passed). Then the
 * backend's table of the co-scheduled run. Exit 0 when every check passes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"
#include "common/loc.h"
#include "covenant/model.h"
#include "covenant/tensor.h"

typedef struct one_model {
  cov_model *m;
  size_t ni, no;
  cov_tensor *in, *out, *ref;
} one_model;

static void one_free(one_model *x) {
  for (size_t i = 0; x->in && i < x->ni; i++) cov_tensor_release(&x->in[i]);
  for (size_t i = 0; i < x->no; i++) {
    if (x->out) cov_tensor_release(&x->out[i]);
    if (x->ref) cov_tensor_release(&x->ref[i]);
  }
  free(x->in);
  free(x->out);
  free(x->ref);
  cov_model_free(x->m);
}

/* Loads model i and makes its inputs (an input with a default keeps it). */
static cov_status one_load(const cli_corun_opts *o, int i, one_model *x) {
  cov_model_options mo = {.max_memory = o->max_memory};
  COV_RETURN_IF_ERROR(cov_model_load_file(o->models[i], &mo, &x->m));
  x->ni = cov_model_num_inputs(x->m);
  x->no = cov_model_num_outputs(x->m);
  x->in = calloc(x->ni ? x->ni : 1, sizeof *x->in);
  x->out = calloc(x->no ? x->no : 1, sizeof *x->out);
  x->ref = calloc(x->no ? x->no : 1, sizeof *x->ref);
  if (!x->in || !x->out || !x->ref) return cov_error(COV_OUT_OF_MEMORY, NULL, "covenant run: buffers");
  for (size_t k = 0; k < x->ni; k++)
    if (!cov_model_input_has_default(x->m, k)) COV_RETURN_IF_ERROR(cli_random_input(x->m, k, o->seed, &x->in[k]));
  printf("model %d: %s (%zu input%s, %zu output%s, %zu layer groups), random inputs (seed %llu)\n", i,
         o->models[i], x->ni, x->ni == 1 ? "" : "s", x->no, x->no == 1 ? "" : "s", cov_model_num_groups(x->m),
         o->seed);
  return NULL;
}

/* Integer outputs: how many quantisation steps apart at most. */
static double max_steps(const cov_tensor *a, const cov_tensor *b) {
  int64_t n = cov_tensor_numel(b);
  if (cov_tensor_numel(a) != n || a->dtype != b->dtype) return INFINITY;
  double md = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = 0, y = 0;
    switch (b->dtype) {
      case COV_I8: x = ((const int8_t *)a->data)[i], y = ((const int8_t *)b->data)[i]; break;
      case COV_U8: x = ((const uint8_t *)a->data)[i], y = ((const uint8_t *)b->data)[i]; break;
      case COV_I32: x = ((const int32_t *)a->data)[i], y = ((const int32_t *)b->data)[i]; break;
      case COV_I64: x = (double)((const int64_t *)a->data)[i], y = (double)((const int64_t *)b->data)[i]; break;
      default: return INFINITY;
    }
    md = fabs(x - y) > md ? fabs(x - y) : md;
  }
  return md;
}

/* Model i's outputs and checks; 0 when they pass, else 1. */
static int one_check(const cli_corun_opts *o, int i, one_model *x, const backend_info *b,
                     const backend_report *rep) {
  int rc = CLI_EXIT_OK;
  printf("model %d: %s\n", i, o->models[i]);
  for (size_t k = 0; k < x->no; k++) cli_print_output(cov_model_output_name(x->m, k), &x->out[k]);
  int own = rep ? b->report_check(rep, stdout) : -1;
  if (own == 0) rc = CLI_EXIT_INPUT;
  printf("check against --target ref on the same inputs: max|out - ref| / max|ref| <= %g\n", o->tol);
  for (size_t k = 0; k < x->no; k++) {
    const char *name = cov_model_output_name(x->m, k);
    if (!cov_dtype_is_float(x->ref[k].dtype)) {
      double s = max_steps(&x->out[k], &x->ref[k]);
      printf("  %s max %g quantisation steps  %s\n", name, s, s <= 1 ? "PASS" : "FAIL");
      if (!(s <= 1)) rc = CLI_EXIT_INPUT;
      continue;
    }
    double e = cli_rel_err(&x->out[k], &x->ref[k]);
    bool ok = e <= o->tol, rounding = !ok && own == 1 && e <= 10 * o->tol;
    printf("  %s max rel err %.3e  %s\n", name, e,
           ok ? "PASS" : rounding ? "above the tolerance by the datapath's rounding (the programs' check passed)"
                               : "FAIL");
    if (!ok && !rounding) rc = CLI_EXIT_INPUT;
  }
  return rc;
}

static int corun(const cli_corun_opts *o, backend_target *bt, one_model *ms) {
  const backend_info *b = bt->backend;
  if (!b->run_models) return cli_report(backend_lacks(bt, "covenant run (several models)", "run_models"));
  int n = o->n_models;
  backend_model_io io[CLI_MAX_CORUN];
  for (int i = 0; i < n; i++)
    io[i] = (backend_model_io){ms[i].m, o->models[i], ms[i].in, ms[i].ni, ms[i].out, ms[i].no};
  backend_report *each[CLI_MAX_CORUN] = {0}, *joint = NULL;
  cov_status st = b->run_models(bt, io, (size_t)n, o->pipeline, each, &joint);
  for (int i = 0; !st && i < n; i++) st = cov_model_run_ref(ms[i].m, ms[i].in, ms[i].ni, ms[i].ref, ms[i].no);
  int rc = st ? cli_report(st) : CLI_EXIT_OK;
  for (int i = 0; !st && i < n; i++) {
    int r = one_check(o, i, &ms[i], b, each[i]);
    if (r) rc = r;
  }
  if (!st && joint) b->report_details(joint, bt, stdout);
  for (int i = 0; i < n; i++)
    if (each[i]) b->report_free(each[i]);
  if (joint) b->report_free(joint);
  return rc;
}

int cli_run_models(const cli_corun_opts *o) {
  backend_target bt = {0};
  one_model ms[CLI_MAX_CORUN];
  memset(ms, 0, sizeof ms);
  cov_status st = backend_target_open(o->target, &bt);
  int rc = st ? cli_report(st) : -1;
  if (rc < 0) printf("target: %s (%s backend, %s)\n", bt.name, bt.backend->name, bt.acg ? cov_acg_file(bt.acg) : "");
  for (int i = 0; rc < 0 && i < o->n_models; i++)
    if ((st = one_load(o, i, &ms[i]))) rc = cli_report(st);
  if (rc < 0) rc = corun(o, &bt, ms);
  for (int i = 0; i < o->n_models; i++) one_free(&ms[i]);
  if (bt.backend) backend_target_close(&bt);
  return rc;
}

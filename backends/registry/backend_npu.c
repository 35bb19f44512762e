/* backends/registry/backend_npu.c: the npu-sim row: suite layers and
 * models compiled by the NPU compiler's drivers (backends/npu-sim/compile/),
 * models run in the simulator with a per-group report and trace, layers
 * loaded into the simulator for verify. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/compile/npu_compile.h"
#include "backends/registry/backend_rows.h"
#include "common/loc.h"
#include "covenant/npu.h"
#include "covenant/mapper.h"

cov_status backend_npu_compile_layers(const backend_target *t, const backend_options *o, const char *const *layers,
                                      int n, const char *out_dir, FILE *out) {
  if (n != 1) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("backend_npu_compile_layers"), "one layer at a time");
  return npu_compile_layer_dir(t->acg, o->suite, layers[0], o->scale > 0 ? o->scale : 1, out_dir, out);
}

cov_status backend_npu_compile_model(const backend_target *t, const backend_options *o, const char *model,
                                     const char *out_path, FILE *out) {
  cov_model_options mo = {.shapes = o->shapes, .n_shapes = o->n_shapes};
  return npu_compile_model_artifact(t->acg, model, &mo, out_path, out);
}

/* A model run's report (r, owned unless a co-scheduled run's co owns
 * it), or a co-scheduled run's (co). */
struct backend_report {
  cov_npu_report *r;
  cov_npu_corun *co;
  cov_npu_pipeline *pipe;
  bool borrowed;
};

cov_status backend_npu_run_model(const backend_target *t, const backend_options *o, const cov_model *m,
                                 const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                 size_t n_outputs, backend_report **report) {
  (void)name;
  if (report) *report = NULL;
  cov_npu_trace *tr = NULL;
  cov_status st = o && o->trace ? cov_npu_trace_begin(o->trace, t->acg, &tr) : NULL;
  cov_npu_report *r = NULL;
  if (!st) {
    cov_npu_run_options ro = {o ? o->per_call : 0, tr};
    st = cov_npu_run_model_with(m, t->acg, inputs, n_inputs, outputs, n_outputs, &ro, &r);
  }
  if (tr) {
    cov_status te = cov_npu_trace_end(tr);
    if (!st) st = te;
    else cov_status_free(te);
  }
  backend_report *br = r && report ? calloc(1, sizeof *br) : NULL;
  if (br) {
    br->r = r;
    *report = br;
    return st;
  }
  cov_npu_report_free(r); /* where each group ran: nobody asked, or no memory to tell */
  return !st && r && report ? cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory") : st;
}

/* One model pipelined over the cores (run_models with a stream). */
static cov_status run_pipeline(const backend_target *t, const backend_model_io *io, unsigned stream,
                               backend_report **each, backend_report **joint) {
  cov_npu_corun_io cio = {io->inputs, io->n_inputs, io->outputs, io->n_outputs};
  cov_npu_pipeline *p = NULL;
  COV_RETURN_IF_ERROR(cov_npu_pipeline_model(io->model, t->acg, &cio, stream, &p));
  *joint = calloc(1, sizeof **joint);
  each[0] = calloc(1, sizeof *each[0]);
  if (*joint && each[0]) {
    (*joint)->pipe = p;
    each[0]->r = (cov_npu_report *)cov_npu_pipeline_report(p);
    each[0]->borrowed = true;
    return NULL;
  }
  free(*joint), free(each[0]);
  *joint = each[0] = NULL;
  cov_npu_pipeline_free(p);
  for (size_t k = 0; k < io->n_outputs; k++) cov_tensor_release(&io->outputs[k]);
  return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
}

cov_status backend_npu_run_models(const backend_target *t, const backend_model_io *io, size_t n, unsigned stream,
                                  backend_report **each, backend_report **joint) {
  *joint = NULL;
  for (size_t i = 0; i < n; i++) each[i] = NULL;
  if (stream) {
    if (n != 1)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("backend_npu_run_models"), "a pipeline takes one model");
    return run_pipeline(t, io, stream, each, joint);
  }
  const cov_model **models = calloc(n ? n : 1, sizeof *models);
  const char **names = calloc(n ? n : 1, sizeof *names);
  cov_npu_corun_io *cio = calloc(n ? n : 1, sizeof *cio);
  cov_npu_corun *co = NULL;
  cov_status st = models && names && cio ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (size_t i = 0; !st && i < n; i++) {
    models[i] = io[i].model, names[i] = io[i].name;
    cio[i] = (cov_npu_corun_io){io[i].inputs, io[i].n_inputs, io[i].outputs, io[i].n_outputs};
  }
  if (!st) st = cov_npu_corun_models(models, names, n, t->acg, cio, &co);
  free(models);
  free(names);
  free(cio);
  if (st) return st;
  *joint = calloc(1, sizeof **joint);
  for (size_t i = 0; *joint && i < n; i++) {
    each[i] = calloc(1, sizeof *each[i]);
    if (!each[i]) break;
    each[i]->r = (cov_npu_report *)cov_npu_corun_report(co, i);
    each[i]->borrowed = true;
  }
  if (*joint) (*joint)->co = co;
  if (*joint && (!n || each[n - 1])) return NULL;
  for (size_t i = 0; i < n; i++) free(each[i]), each[i] = NULL;
  if (!*joint) cov_npu_corun_free(co);
  else backend_npu_report_free(*joint), *joint = NULL;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < io[i].n_outputs; k++) cov_tensor_release(&io[i].outputs[k]);
  return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
}

void backend_npu_report_summary(const backend_report *r, const backend_target *t, size_t n_compute, FILE *out) {
  if (!r->r) return;
  fprintf(out,
          "ran on %s: %d of %zu compute groups fused (one program each), %d calls one by one on "
          "the NPU, %d on the CPU\n",
          t->name, cov_npu_report_fused_groups(r->r), n_compute, cov_npu_report_calls(r->r),
          cov_npu_report_cpu_calls(r->r));
}

/* Each program against the reference interpreter on its own inputs
 * rounded to the dtypes the schedule multiplies them in (f16, bf16, e4m3,
 * e5m2) where
 * it narrows them, at a tight tolerance. */
int backend_npu_report_check(const backend_report *r, FILE *out) {
  if (!r->r) return -1;
  double ne = cov_npu_report_narrowed_error(r->r);
  if (!(ne >= 0 || ne != ne)) return -1;
  bool ok = ne <= COV_NPU_NARROWED_TOLERANCE;
  char rdt[64] = "none";
  cov_npu_report_narrowed_dtypes(r->r, rdt, sizeof rdt);
  if (strcmp(rdt, "none") == 0)
    fprintf(out,
            "check of every NPU program against the reference on the same inputs (no schedule "
            "narrows them): max rel err %.3e <= %g  %s\n",
            ne, COV_NPU_NARROWED_TOLERANCE, ok ? "PASS" : "FAIL");
  else
    fprintf(out,
            "check of every NPU program against the reference on the same inputs, rounded to %s "
            "where the schedule narrows them: max rel err %.3e <= %g  %s\n",
            rdt, ne, COV_NPU_NARROWED_TOLERANCE, ok ? "PASS" : "FAIL");
  return ok;
}

int backend_npu_report_narrowed_bits(const backend_report *r) {
  return cov_npu_report_narrowed_bits(r->r);
}

void backend_npu_report_details(const backend_report *r, const backend_target *t, FILE *out) {
  if (r->co || r->pipe) {
    if (r->co) cov_npu_corun_print(r->co, out);
    else cov_npu_pipeline_print(r->pipe, out);
    return;
  }
  fprintf(out, "per group on %s (cycles simulated; 'mapper est' is the mapper's cost model):\n", t->name);
  cov_npu_report_print(r->r, out);
}

void backend_npu_report_times(const backend_report *r, double run_s, FILE *out) {
  if (!r->r) return;
  double c, sim;
  cov_npu_report_times(r->r, &c, &sim);
  fprintf(out, ", compile (map + codegen) %.1f ms, simulation %.1f ms, run in all %.1f ms", 1e3 * c, 1e3 * sim,
          1e3 * run_s);
}

void backend_npu_report_free(backend_report *r) {
  if (!r) return;
  if (!r->borrowed) cov_npu_report_free(r->r);
  cov_npu_corun_free(r->co);
  cov_npu_pipeline_free(r->pipe);
  free(r);
}

cov_status backend_npu_open_layer(const backend_target *t, const backend_options *o, const char *name,
                                  backend_layer *out) {
  memset(out, 0, sizeof *out);
  npu_layer_job *j = calloc(1, sizeof *j);
  if (!j) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  out->impl = j;
  COV_RETURN_IF_ERROR(npu_layer_build(j, t->acg, o->suite, name, o->scale > 0 ? o->scale : 1));
  out->layer = j->layer;
  npu_layer_in_dtypes(j, out->in_dtype, 8);
  return npu_layer_load(j, t->acg);
}

cov_status backend_npu_run_layer(backend_layer *l, const cov_tensor *inputs, int n_inputs, cov_tensor *output,
                                 backend_layer_stats *stats) {
  return npu_layer_run(l->impl, inputs, n_inputs, output, &stats->cycles, &stats->array_util);
}

void backend_npu_close_layer(backend_layer *l) {
  if (l->impl) npu_layer_job_free(l->impl);
  free(l->impl);
  memset(l, 0, sizeof *l);
}

/* The first line of an error's message, into why. */
static void say(cov_status st, const char *codelet, char *why, size_t size) {
  const char *m = cov_status_message(st);
  snprintf(why, size, "%s: %.*s", codelet, (int)strcspn(m, "\n"), m);
}

static cov_status npu_takes(const cov_acg *acg, const char *codelet) {
  cov_layer *layer = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  cov_map_options o = {.budget = 2000};
  cov_status st = cov_layer_example(codelet, 8, &layer);
  if (!st) st = cov_map(layer, acg, &o, &s);
  if (!st) st = cov_npu_compile(s, &p);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(layer);
  return st;
}

/* A codelet the NPU path refuses falls back to the CPU; running out of
 * memory while asking is the caller's error. */
cov_status backend_npu_op_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                              size_t size) {
  *where = BACKEND_OP_ACCEL;
  if (op->layout) {
    snprintf(why, size, "layout: moved by the frontend on the host");
    *where = BACKEND_OP_CPU;
    return NULL;
  }
  for (int i = 0; i < op->n_codelets; i++) {
    cov_status st = npu_takes(t->acg, op->codelets[i]);
    if (st && cov_status_code(st) == COV_OUT_OF_MEMORY) return st;
    if (st) {
      say(st, op->codelets[i], why, size);
      cov_status_free(st);
      *where = BACKEND_OP_CPU;
      return NULL;
    }
  }
  return NULL;
}

cov_status backend_npu_report_json(const backend_report *r, char **json) {
  if (r->co) return cov_npu_corun_json(r->co, json, NULL);
  if (!r->r) return cov_error(COV_UNSUPPORTED, COV_AT_CALL("backend_npu_report_json"), "a pipeline's report as JSON");
  return cov_npu_report_json(r->r, json, NULL);
}

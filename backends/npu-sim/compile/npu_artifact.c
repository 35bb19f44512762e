/* backends/npu-sim/compile/npu_artifact.c: a model compiled for an NPU
 * target into one artifact (the npu-sim row's compile_model,
 * backends/registry/backend_npu.c).
 *
 * Each compute layer group of the model is described by the frontend, built
 * into one mapper layer, mapped and compiled into one NPU program with the
 * group's constants (weights, biases) in it. OUT is one artifact
 * (runtime/README.md): the programs as blobs, one buffer per model value
 * the programs exchange (the model's inputs and outputs, the rest
 * intermediates in one arena planned by lifetime), and one `npu` step per
 * group binding each program tensor to its buffer; `covenant-run OUT` runs
 * it in the simulator. A group that is not compiled (layout work the
 * frontend does, a group that does not fuse) is listed in the artifact's
 * `missing` with the reason: the file is still written, for inspection,
 * and the runtime refuses to run it. Output is deterministic: the same
 * model and target give byte-identical files. */
#include "backends/npu-sim/compile/npu_compile.h"

#include <stdlib.h>
#include <string.h>

#include "covenant/mapper.h"
#include "covenant/model.h"
#include "covenant/npu.h"
#include "runtime/crt.h"
#include "backends/npu-sim/compile/npu_control.h"
#include "common/loc.h"

static void first_line(cov_status st, char *buf, size_t n) {
  cov_status_format(st, buf, n);
  char *nl = strchr(buf, '\n');
  if (nl) *nl = '\0';
}

/* The compiled group: program tensors in0.. are the layer's inputs. */
typedef struct group_job {
  cov_model_group *desc;
  cov_layer *layer;
  cov_schedule *sched;
  cov_npu_program *prog;
} group_job;

static void job_free(group_job *j) {
  cov_npu_program_free(j->prog);
  cov_schedule_free(j->sched);
  cov_layer_free(j->layer);
  memset(j, 0, sizeof *j); /* the description is the program's */
}

static cov_status job_build(const cov_model_group *desc, const cov_acg *acg, group_job *j) {
  memset(j, 0, sizeof *j);
  j->desc = (cov_model_group *)desc;
  COV_RETURN_IF_ERROR(cov_layer_from_model_group(j->desc, &j->layer));
  COV_RETURN_IF_ERROR(cov_map(j->layer, acg, NULL, &j->sched));
  /* the same choice as covenant run makes (npu_model.c) */
  COV_RETURN_IF_ERROR(cov_npu_select_by_simulation(j->sched, acg, COV_NPU_SELECT_MAX_OPS, NULL));
  COV_RETURN_IF_ERROR(cov_npu_compile(j->sched, &j->prog));
  /* Constants go into the program (converted to its tensors' dtypes). */
  for (int k = 0; k < cov_layer_num_inputs(j->layer); k++) {
    const cov_model_arg *a;
    COV_RETURN_IF_ERROR(cov_layer_model_input(j->desc, k, &a));
    if (a->kind != COV_MODEL_ARG_CONST) continue;
    cov_tensor t;
    COV_RETURN_IF_ERROR(cov_layer_input(j->layer, k, &t));
    t.data = a->t.data;
    char nm[32];
    snprintf(nm, sizeof nm, "in%d", k);
    COV_RETURN_IF_ERROR(cov_npu_program_set_data(j->prog, nm, &t));
  }
  return NULL;
}

static uint64_t tensor_bytes(const cov_tensor *t) {
  int64_t n = cov_tensor_numel(t);
  return n < 0 ? 0 : (uint64_t)n * cov_dtype_size(t->dtype);
}

/* The model's inputs and outputs as buffers (cov_model_program_io: an
 * input's symbolic dims and integer range recorded, a part output at its
 * capacity), each a value of `vals`. */
static cov_status add_ios(const cov_model *m, const cov_model_program *prog, const char *path, crt_builder *b,
                          npu_values *vals) {
  cov_status st = NULL;
  for (int out = 0; out < 2 && !st; out++) {
    size_t n = out ? cov_model_num_outputs(m) : cov_model_num_inputs(m);
    for (size_t i = 0; i < n && !st; i++) {
      cov_tensor t = {0};
      unsigned dyn = 0; /* an output whose size depends on the data: its capacity */
      const char *name = out ? cov_model_output_name(m, i) : cov_model_input_name(m, i);
      if ((st = cov_model_program_io(prog, m, path, out, i, &t, &dyn))) break;
      int buf = npu_value_find(vals, name);
      if (buf < 0) {
        buf = crt_add_buffer(b, name, out ? CRT_BUF_OUTPUT : CRT_BUF_INPUT, t.dtype, t.rank, t.shape, tensor_bytes(&t));
        if (buf >= 0 && dyn) crt_set_dynamic(b, buf, dyn);
        if (buf >= 0) st = npu_value_add(vals, name, buf);
      }
      if (!st && out) crt_add_output(b, name, t.dtype, t.rank, t.shape, buf);
      if (!st && !out) {
        int io = crt_add_input(b, name, t.dtype, t.rank, t.shape, buf);
        int64_t lo, hi;
        crt_set_symbolic(b, io, cov_model_input_symbolic(m, i));
        if (cov_model_input_range(m, i, &lo, &hi)) crt_set_range(b, io, lo, hi); /* random inputs take it */
      }
    }
  }
  return st;
}

/* One compute group as an NPU program bound to its values' buffers;
 * false (and *why) when it does not compile. */
static bool group_npu(npu_ctl *c, const cov_acg *acg, const cov_model_pstep *p, size_t *compiled, char *why,
                      size_t why_n) {
  group_job j;
  cov_status gs = job_build(p->desc, acg, &j);
  if (gs) {
    if (cov_status_code(gs) == COV_OUT_OF_MEMORY) c->st = gs; /* not a group that does not fuse: an error */
    else first_line(gs, why, why_n), cov_status_free(gs);
    job_free(&j);
    return false;
  }
  void *bytes = NULL;
  size_t size = 0;
  char name[64];
  snprintf(name, sizeof name, "group_%zu.npu", *compiled);
  c->st = cov_npu_program_encode(j.prog, &bytes, &size);
  int blob = c->st ? -1 : crt_add_blob(c->b, name, bytes, size);
  free(bytes);
  crt_bind binds[9];
  static const char *tensors[] = {"in0", "in1", "in2", "in3", "in4", "in5", "in6", "in7"};
  int nb = 0;
  for (int k = 0; k < cov_layer_num_inputs(j.layer) && !c->st; k++) {
    const cov_model_arg *a = NULL;
    if ((c->st = cov_layer_model_input(p->desc, k, &a))) break;
    if (a->kind == COV_MODEL_ARG_CONST) continue; /* in the program */
    cov_tensor shape = {0};
    const char *value = a->kind == COV_MODEL_ARG_EXTERNAL ? cov_model_group_input(p->desc, (size_t)a->input, &shape) : NULL;
    if (!value || k >= 8) {
      c->st = cov_error(value ? COV_UNSUPPORTED : COV_INTERNAL, COV_AT(c->path, p->node),
                        value ? "more than 8 program inputs" : "layer input %d is neither a constant nor a group input", k);
      break;
    }
    binds[nb].tensor = tensors[k];
    binds[nb++].buffer = npu_value_buffer(c, value, &shape);
  }
  if (!c->st) {
    cov_tensor shape = {0};
    const char *value = cov_model_group_output(p->desc, &shape);
    binds[nb].tensor = "out";
    binds[nb++].buffer = npu_value_buffer(c, value, &shape);
  }
  if (!c->st) crt_add_npu(c->b, (int)p->group, p->node, blob, binds, nb);
  (*compiled)++;
  job_free(&j);
  return true;
}

/* The model's inputs and outputs as buffers, then its program's steps:
 * an npu step per group that compiles, host steps for the rest, copies
 * and control. */
static cov_status build_artifact(const cov_model *m, const cov_model_program *prog, const cov_acg *acg,
                                 const char *path, crt_builder *b, size_t *compiled, size_t *on_host) {
  npu_values vals = {0};
  npu_ctl c = {.path = path, .b = b, .prog = prog, .vals = &vals};
  c.st = add_ios(m, prog, path, b, &vals);
  size_t n = cov_model_program_count(prog);
  for (size_t i = 0; i < n && !c.st; i++) {
    const cov_model_pstep *p = cov_model_program_step(prog, i);
    char why[700];
    if (p->kind == COV_PSTEP_MISSING) {
      snprintf(why, sizeof why, "group %zu (node '%s'): %s", p->group, p->node, p->why);
      crt_add_missing(b, why);
    } else if (p->kind == COV_PSTEP_GROUP) {
      if (!group_npu(&c, acg, p, compiled, why, sizeof why) && !c.st) npu_group_on_host(&c, p->desc, (int)p->group), (*on_host)++;
    } else if (p->kind == COV_PSTEP_PART) {
      npu_part_step(&c, p);
    } else {
      npu_control_step(&c, p);
    }
    if (!c.st && crt_builder_status(b)) break;
  }
  cov_status st = npu_ctl_finish(&c);
  npu_ctl_free(&c);
  npu_values_free(&vals);
  return st;
}

/* The ACG the programs were compiled for, in the artifact (its canonical
 * JSON): the runtime takes it from there, so an artifact compiled for an
 * ACG file of the user's runs anywhere, and the manifest's arch is never
 * looked up as a file (runtime/README.md). */
static cov_status embed_acg(const cov_acg *acg, crt_builder *b) {
  char *json = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&json, &n);
  if (!f) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory writing the ACG");
  cov_status st = cov_acg_write_json(acg, f);
  int bad = ferror(f);
  if ((fclose(f) != 0 || bad || !json) && !st) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory writing the ACG");
  if (!st) crt_add_acg(b, json, n); /* a failure stays in the builder: crt_builder_write returns it */
  free(json);
  return st;
}

cov_status npu_compile_model_artifact(const cov_acg *acg, const char *path, const cov_model_options *mo,
                                      const char *out, FILE *msg) {
  cov_model *m = NULL;
  crt_builder *b = NULL;
  cov_model_program *prog = NULL;
  size_t compiled = 0, on_host = 0;
  cov_status st = cov_model_load_file(path, mo, &m);
  if (!st) st = cov_model_program_build_probe(m, path, &prog);
  if (!st) st = crt_builder_new(cov_acg_name(acg), cov_acg_backend(acg), cov_acg_name(acg), path, &b);
  if (!st) st = build_artifact(m, prog, acg, path, b, &compiled, &on_host);
  if (!st) st = embed_acg(acg, b);
  if (!st) st = crt_builder_write(b, out);
  if (!st) {
    size_t n = cov_model_num_groups(m);
    fprintf(msg, "wrote %s: %zu NPU program(s) for %zu layer group(s)", out, compiled, n);
    if (on_host) fprintf(msg, ", %zu group(s) run on the host as codelet calls", on_host);
    size_t parts = 0, missing = 0;
    for (size_t i = 0; i < cov_model_program_count(prog); i++) {
      parts += cov_model_program_step(prog, i)->kind == COV_PSTEP_PART;
      missing += cov_model_program_step(prog, i)->kind == COV_PSTEP_MISSING;
    }
    if (parts) fprintf(msg, ", %zu part(s) of the model run on the host by the reference interpreter", parts);
    if (missing)
      fprintf(msg, "; %zu step(s) not compiled (layout work, groups that do not fuse), listed in the artifact's "
              "'missing': covenant-run refuses it, 'covenant run' runs such models",
              missing);
    fprintf(msg, "\n");
  }
  cov_model_program_free(prog);
  crt_builder_free(b);
  cov_model_free(m);
  return st;
}

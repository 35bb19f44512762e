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
  cov_model_group_free(j->desc);
  memset(j, 0, sizeof *j);
}

static cov_status job_build(const cov_model *m, size_t i, const cov_acg *acg, group_job *j) {
  memset(j, 0, sizeof *j);
  COV_RETURN_IF_ERROR(cov_model_group_describe(m, i, &j->desc));
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

/* Model values and the buffers that hold them. */
typedef struct value_map {
  char **names;
  int *buffers;
  size_t n, cap;
} value_map;

static int value_find(const value_map *v, const char *name) {
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->names[i], name)) return v->buffers[i];
  return -1;
}

static cov_status value_add(value_map *v, const char *name, int buffer) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 32;
    char **nn = realloc(v->names, cap * sizeof *nn);
    if (!nn) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    v->names = nn;
    int *nb = realloc(v->buffers, cap * sizeof *nb);
    if (!nb) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    v->buffers = nb, v->cap = cap;
  }
  v->names[v->n] = strdup(name);
  if (!v->names[v->n]) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  v->buffers[v->n++] = buffer;
  return NULL;
}

static void value_free(value_map *v) {
  for (size_t i = 0; i < v->n; i++) free(v->names[i]);
  free(v->names), free(v->buffers);
}

static uint64_t tensor_bytes(const cov_tensor *t) {
  int64_t n = cov_tensor_numel(t);
  return n < 0 ? 0 : (uint64_t)n * cov_dtype_size(t->dtype);
}

/* The buffer of a value a group reads or writes: known, or a new
 * intermediate with the value's dtype and shape. */
static int value_buffer(crt_builder *b, value_map *v, const char *name, const cov_tensor *shape, cov_status *st) {
  int buf = value_find(v, name);
  if (buf >= 0) return buf;
  buf = crt_add_buffer(b, name, CRT_BUF_INTERMEDIATE, shape->dtype, shape->rank, shape->shape, tensor_bytes(shape));
  if (buf >= 0 && (*st = value_add(v, name, buf))) return -1;
  return buf;
}

/* The model's inputs and outputs as buffers (an input's symbolic dims and
 * integer range recorded), each a value of `vals`. */
static cov_status add_ios(const cov_model *m, const char *path, crt_builder *b, value_map *vals) {
  cov_status st = NULL;
  for (int out = 0; out < 2 && !st; out++) {
    size_t n = out ? cov_model_num_outputs(m) : cov_model_num_inputs(m);
    for (size_t i = 0; i < n && !st; i++) {
      cov_tensor t = {0};
      const char *name = out ? cov_model_output_name(m, i) : cov_model_input_name(m, i);
      if ((st = out ? cov_model_output_info(m, i, &t.dtype, &t.rank, t.shape)
                    : cov_model_input_info(m, i, &t.dtype, &t.rank, t.shape)))
        break;
      if (t.rank < 0) {
        cov_loc loc = {path, 0, 0, name};
        st = cov_error(COV_UNSUPPORTED, &loc, "%s '%s' has no fixed shape", out ? "output" : "input", name);
        break;
      }
      for (int d = 0; d < t.rank && !st; d++)
        if (t.shape[d] < 0) {
          cov_loc loc = {path, 0, 0, name};
          st = cov_error(COV_UNSUPPORTED, &loc, "dim %d of %s '%s' is symbolic%s", d, out ? "output" : "input", name,
                         out ? "" : "; give the input's shape with --shape NAME=DIMS");
        }
      if (st) break;
      int buf = value_find(vals, name);
      if (buf < 0) {
        buf = crt_add_buffer(b, name, out ? CRT_BUF_OUTPUT : CRT_BUF_INPUT, t.dtype, t.rank, t.shape, tensor_bytes(&t));
        if (buf >= 0) st = value_add(vals, name, buf);
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

/* The model's inputs and outputs as buffers, then one npu step per
 * compiled group. */
static cov_status build_artifact(const cov_model *m, const cov_acg *acg, const char *path, crt_builder *b,
                                 size_t *compiled) {
  value_map vals = {0};
  cov_status st = add_ios(m, path, b, &vals);
  size_t n = cov_model_num_groups(m);
  for (size_t i = 0; i < n && !st; i++) {
    cov_model_group_info info;
    if ((st = cov_model_group_get_info(m, i, &info))) break;
    char why[700];
    if (info.layout) {
      snprintf(why, sizeof why, "group %zu (%s): layout work the frontend does; NPU artifacts hold compute groups only",
               i, info.kind);
      crt_add_missing(b, why);
      continue;
    }
    group_job j;
    cov_status gs = job_build(m, i, acg, &j);
    if (gs && cov_status_code(gs) == COV_OUT_OF_MEMORY) { /* not a group that does not fuse: an error */
      st = gs;
      job_free(&j);
      break;
    }
    if (gs) {
      char first[512];
      first_line(gs, first, sizeof first);
      cov_status_free(gs);
      snprintf(why, sizeof why, "group %zu (%s): not one NPU program: %s", i, info.kind, first);
      crt_add_missing(b, why);
      job_free(&j);
      continue;
    }
    void *bytes = NULL;
    size_t size = 0;
    char name[64];
    snprintf(name, sizeof name, "group_%zu.npu", i);
    st = cov_npu_program_encode(j.prog, &bytes, &size);
    int blob = st ? -1 : crt_add_blob(b, name, bytes, size);
    free(bytes);
    crt_bind binds[COV_MAX_RANK + 64];
    int nb = 0;
    const cov_model_group *d = j.desc;
    for (int k = 0; k < cov_layer_num_inputs(j.layer) && !st && nb < 63; k++) {
      const cov_model_arg *a = NULL;
      if ((st = cov_layer_model_input(d, k, &a))) break;
      if (a->kind == COV_MODEL_ARG_CONST) continue; /* in the program */
      cov_tensor shape = {0};
      const char *value = a->kind == COV_MODEL_ARG_EXTERNAL ? cov_model_group_input(d, (size_t)a->input, &shape) : NULL;
      if (!value) {
        cov_loc loc = {path, 0, 0, cov_model_group_name(d)};
        st = cov_error(COV_INTERNAL, &loc, "group %zu: layer input %d is neither a constant nor a group input", i, k);
        break;
      }
      static const char *tensors[] = {"in0", "in1", "in2", "in3", "in4", "in5", "in6", "in7"};
      if (k >= 8) {
        cov_loc loc = {path, 0, 0, cov_model_group_name(d)};
        st = cov_error(COV_UNSUPPORTED, &loc, "group %zu: more than 8 program inputs", i);
        break;
      }
      binds[nb].tensor = tensors[k];
      binds[nb].buffer = value_buffer(b, &vals, value, &shape, &st);
      nb++;
    }
    if (!st) {
      cov_tensor shape = {0};
      const char *value = cov_model_group_output(d, &shape);
      binds[nb].tensor = "out";
      binds[nb].buffer = value_buffer(b, &vals, value, &shape, &st);
      nb++;
    }
    if (!st) crt_add_npu(b, (int)i, cov_model_group_name(d), blob, binds, nb);
    (*compiled)++;
    job_free(&j);
    if (!st && crt_builder_status(b)) break;
  }
  value_free(&vals);
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
  size_t compiled = 0;
  cov_status st = cov_model_load_file(path, mo, &m);
  if (!st) st = crt_builder_new(cov_acg_name(acg), cov_acg_backend(acg), cov_acg_name(acg), path, &b);
  if (!st) st = build_artifact(m, acg, path, b, &compiled);
  if (!st) st = embed_acg(acg, b);
  if (!st) st = crt_builder_write(b, out);
  if (!st) {
    size_t n = cov_model_num_groups(m);
    fprintf(msg, "wrote %s: %zu NPU program(s) for %zu layer group(s)", out, compiled, n);
    if (compiled < n)
      fprintf(msg, "; %zu group(s) not compiled (layout work, groups that do not fuse), listed in the artifact's "
              "'missing': covenant-run refuses it, 'covenant run' runs such models",
              n - compiled);
    fprintf(msg, "\n");
  }
  crt_builder_free(b);
  cov_model_free(m);
  return st;
}

/* backends/gpu/gpu_artifact.c: a compiled model plan (gpu_mplan.h) into
 * the artifact format through the runtime's builder (runtime/crt.h). The
 * plan's buffers map one to one (intermediates no step uses are left out;
 * the builder gives the rest arena offsets by lifetime), its modules become
 * code blobs, its steps launches and fills. */
#include "backends/gpu/gpu_artifact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_tune.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_vendor.h"
#include "common/fileio.h"
#include "covenant/model.h"
#include "runtime/crt.h"

static crt_buf_kind kind_of(gpu_buf_kind k) {
  switch (k) {
    case GPU_BUF_INPUT: return CRT_BUF_INPUT;
    case GPU_BUF_OUTPUT: return CRT_BUF_OUTPUT;
    case GPU_BUF_WEIGHT: return CRT_BUF_WEIGHT;
    default: return CRT_BUF_INTERMEDIATE;
  }
}

/* A launch step's 4 arguments (buffer ids through `map`, the builder's
 * index of each plan buffer; -1: a null pointer); a warp-specialised
 * matrix kernel (plan.tma) takes tensor maps over A and B instead
 * (gpu_tma_dims), which makes the artifact format version 2. */
static void gpu_mstep_args(const gpu_mstep *s, const int *map, crt_arg *args) {
  for (int k = 0; k < s->n_args; k++) {
    crt_arg none = {.kind = CRT_ARG_I64}; /* a null pointer */
    args[k] = s->args[k] < 0 ? none : crt_buf_arg(map[s->args[k]], 0);
  }
  if (s->kkind != GPU_KERNEL_MATRIX || !s->plan.tma || s->pre) return;
  int64_t d[2][4];
  gpu_tma_dims(&s->plan, d[0], d[1]);
  for (int k = 0; k < 2; k++)
    args[k] = crt_tmap_arg(args[k].buffer, 0, (uint64_t)d[k][0], (uint64_t)d[k][1], (uint32_t)d[k][2], (uint32_t)d[k][3]);
}

/* A host step or control step of a model with a Loop or If
 * (gpu_mprogram.c): the artifact's step of the same name, its buffers
 * mapped; its target is set once every step is in (a loop names its later
 * next), the same index in both (one artifact step per plan step).
 * Format version 5. */
static void add_control(crt_builder *b, const gpu_mstep *s, const int *map) {
  static const crt_step_op ops[] = {[GPU_STEP_COPY] = CRT_STEP_COPY, [GPU_STEP_LOOP] = CRT_STEP_LOOP,
                                    [GPU_STEP_NEXT] = CRT_STEP_NEXT, [GPU_STEP_IF] = CRT_STEP_IF,
                                    [GPU_STEP_JUMP] = CRT_STEP_JUMP};
  int refs[GPU_CDL_MAX_ARGS];
  for (int k = 0; k < s->n_args; k++) refs[k] = s->args[k] < 0 ? -1 : map[s->args[k]];
  if (s->op == GPU_STEP_COPY) {
    crt_add_copy(b, s->group, s->label, refs[0], refs[1]);
    return;
  }
  int i = crt_add_control(b, ops[s->op], s->group, s->label, refs, s->n_args);
  if (i >= 0 && s->op == GPU_STEP_NEXT) crt_set_carried(b, i, s->n_carry); /* else the builder keeps the error */
}

/* A part step (gpu_mprogram.c): the artifact's part step, the model file
 * carried once (crt_add_model_part), its values' buffers mapped. */
static cov_status add_part(crt_builder *b, const gpu_model_plan *p, const gpu_mstep *s, const int *map,
                           const char *model_path) {
  const gpu_mpart *pt = &p->parts[s->part];
  int *bufs = malloc(((size_t)pt->n + 1) * sizeof *bufs);
  if (!bufs) return cov_error(COV_OUT_OF_MEMORY, GPU_LOC(model_path, s->label), "out of memory");
  for (int k = 0; k < pt->n; k++) bufs[k] = map[pt->bufs[k]];
  cov_status st = crt_add_model_part(b, model_path, s->group, s->label, (const char *const *)pt->values, bufs,
                                     pt->n_in, pt->n - pt->n_in);
  free(bufs);
  return st;
}

cov_status gpu_model_artifact(const gpu_model_plan *p, const char *model_path, uint8_t **out, size_t *size) {
  *out = NULL;
  *size = 0;
  if (!p->vendor)
    return cov_error(COV_INTERNAL, GPU_LOC(model_path, NULL), "artifact of a plan compiled for no target");
  int text = p->vendor->code_text;
  crt_builder *b = NULL;
  COV_RETURN_IF_ERROR(crt_builder_new(p->target, p->backend, p->mcpu, model_path, &b));
  int *map = malloc((size_t)(p->n_bufs + 1) * sizeof *map);
  char *used = calloc((size_t)p->n_bufs + 1, 1);
  if (!map || !used) {
    free(map), free(used);
    crt_builder_free(b);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op == GPU_STEP_FILL && s->fill_buf >= 0 && s->fill_buf < p->n_bufs) used[s->fill_buf] = 1;
    for (int k = 0; s->op != GPU_STEP_FILL && k < s->n_args; k++)
      if (s->args[k] >= 0 && s->args[k] < p->n_bufs) used[s->args[k]] = 1;
  }
  for (int i = 0; i < p->n_parts; i++)
    for (int k = 0; k < p->parts[i].n; k++)
      if (p->parts[i].bufs[k] >= 0 && p->parts[i].bufs[k] < p->n_bufs) used[p->parts[i].bufs[k]] = 1;
  cov_status st = NULL;
  for (int i = 0; i < p->n_bufs && !st; i++) {
    const gpu_mbuf *x = &p->bufs[i];
    uint64_t bytes = (uint64_t)x->numel * cov_dtype_size(x->dtype);
    map[i] = -1;
    if (x->kind == GPU_BUF_INTERMEDIATE && !used[i]) continue;
    if (x->kind == GPU_BUF_WEIGHT) {
      if (!x->data) st = cov_error(COV_INTERNAL, GPU_LOC(model_path, x->name), "weight '%s' has no data", x->name);
      else map[i] = crt_add_weight(b, x->name, x->dtype, x->rank, x->shape, x->data, bytes);
    } else {
      map[i] = crt_add_buffer(b, x->name, kind_of(x->kind), x->dtype, x->rank, x->shape, bytes);
      if (x->dynamic) crt_set_dynamic(b, map[i], x->dynamic);
    }
  }
  for (int k = 0; k < p->n_inputs && !st; k++) {
    const gpu_mbuf *x = &p->bufs[p->input_buf[k]];
    cov_dtype dt = p->in_io[k] != COV_DTYPE_INVALID ? p->in_io[k] : x->dtype;
    int io = crt_add_input(b, x->name, dt, x->rank, x->shape, map[p->input_buf[k]]);
    crt_set_symbolic(b, io, p->in_symbolic[k]);
    if (p->in_has_range[k]) crt_set_range(b, io, p->in_lo[k], p->in_hi[k]); /* random inputs take it */
  }
  for (int k = 0; k < p->n_outputs && !st; k++) {
    const gpu_mbuf *x = &p->bufs[p->output_buf[k]];
    crt_add_output(b, x->name, p->out_io[k] != COV_DTYPE_INVALID ? p->out_io[k] : x->dtype, x->rank, x->shape,
                   map[p->output_buf[k]]);
  }
  int *mods = malloc((size_t)(p->n_mods + 1) * sizeof *mods);
  if (!mods && !st) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < p->n_mods && !st; i++) {
    const gpu_mmodule *md = &p->mods[i];
    /* a text code object (PTX) is read to its NUL, which the emitter keeps */
    mods[i] = crt_add_module(b, md->name, p->vendor->code_ext, md->code, text ? md->size + 1 : md->size);
  }
  for (int i = 0; i < p->n_steps && !st; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op == GPU_STEP_PART) {
      st = add_part(b, p, s, map, model_path);
      continue;
    }
    if (s->op >= GPU_STEP_COPY) {
      add_control(b, s, map);
      continue;
    }
    if (s->op == GPU_STEP_FILL) {
      const gpu_mbuf *x = &p->bufs[s->fill_buf];
      crt_add_fill(b, s->group, s->label, map[s->fill_buf], 0, (uint64_t)x->numel * cov_dtype_size(x->dtype), 0);
      continue;
    }
    if (s->module < 0 || s->module >= p->n_mods) {
      st = cov_error(COV_INTERNAL, GPU_LOC(model_path, s->kernel), "step %d (%s) has no code module", i, s->kernel);
      break;
    }
    crt_arg args[GPU_CDL_MAX_ARGS];
    gpu_mstep_args(s, map, args);
    crt_add_launch(b, s->group, s->label, mods[s->module], s->kernel, s->grid, s->block, s->shared_bytes, args,
                   s->n_args);
  }
  for (int i = 0; i < p->n_steps && !st; i++)
    if (p->steps[i].op > GPU_STEP_COPY && p->steps[i].op != GPU_STEP_PART) crt_set_target(b, i, p->steps[i].target);
  free(mods), free(map), free(used);
  if (st) {
    crt_builder_free(b);
    return st;
  }
  st = crt_builder_finish(b, out, size);
  crt_builder_free(b);
  return st ? cov_status_annotate(st, "%s: ", model_path) : NULL;
}

cov_status gpu_model_artifact_write(const gpu_model_plan *p, const char *model_path, const char *out_path) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  COV_RETURN_IF_ERROR(gpu_model_artifact(p, model_path, &bytes, &n));
  cov_status st = common_write_file(out_path, bytes, n);
  free(bytes);
  return st;
}

/* Says which symbolic input dims no --shape bound (compiled as 1). */
static void note_unbound(const cov_model *m, FILE *notes) {
  for (size_t i = 0; notes && i < cov_model_num_inputs(m); i++) {
    cov_dtype dt;
    int rank;
    int64_t shape[COV_MAX_RANK];
    if (cov_model_input_info(m, i, &dt, &rank, shape)) continue;
    char dims[160] = "";
    size_t k = 0;
    int unbound = 0;
    for (int d = 0; d < rank && k < sizeof dims; d++) {
      unbound |= shape[d] < 0;
      k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%lld", d ? "x" : "", (long long)(shape[d] < 0 ? 1 : shape[d]));
    }
    if (unbound)
      fprintf(notes, "note: input '%s' has symbolic dims, compiled as 1 (%s); --shape %s=DIMS compiles another shape\n",
              cov_model_input_name(m, i), dims, cov_model_input_name(m, i));
  }
}

cov_status gpu_compile_artifact(gpu_vendors vendors, const cov_gpu_options *opts, const char *model_path,
                                const char *out_path) {
  gpu_target t;
  COV_RETURN_IF_ERROR(gpu_target_open(vendors, opts->target, opts->dtype ? opts->dtype : COV_F16, &t));
  cov_model *m = NULL;
  gpu_model_plan mp;
  int have_plan = 0;
  cov_status st = gpu_tuning_attach(&t, opts);
  t.f32_activations = opts->f32_activations;
  t.f16_operands = opts->f16_operands;
  cov_model_options mo = {.shapes = opts->shapes, .n_shapes = opts->n_shapes};
  cov_model *wide = NULL;
  if (!st) st = cov_model_load_file(model_path, &mo, &m);
  if (!st) st = gpu_widened(m, model_path, &wide);
  if (!st) st = gpu_model_compile_with(wide ? wide : m, model_path, &t, 1, &mp);
  cov_model_free(wide);
  have_plan = !st;
  if (!st) gpu_tune_note_model(&t, &mp, opts->notes);
  if (!st) gpu_mprec_note(&mp, opts->notes);
  if (!st) note_unbound(m, opts->notes);
  if (!st) st = gpu_model_artifact_write(&mp, model_path, out_path);
  if (have_plan) gpu_model_plan_free(&mp);
  cov_model_free(m);
  gpu_target_close(&t);
  return st;
}

static int is16(cov_dtype d) { return d == COV_F16 || d == COV_BF16; }

cov_status gpu_widened(const cov_model *m, const char *path, cov_model **out) {
  *out = NULL;
  size_t ni = cov_model_num_inputs(m), no = cov_model_num_outputs(m);
  int need = 0;
  cov_model_shape shapes[16];
  size_t n = 0;
  for (size_t i = 0; i < ni + no; i++) {
    cov_model_shape s = {.name = i < ni ? cov_model_input_name(m, i) : NULL};
    cov_dtype dt;
    COV_RETURN_IF_ERROR(i < ni ? cov_model_input_info(m, i, &dt, &s.rank, s.dims)
                               : cov_model_output_info(m, i - ni, &dt, &s.rank, s.dims));
    need |= is16(dt);
    int bound = i < ni && cov_model_input_symbolic(m, i) && n < 16;
    for (int d = 0; d < s.rank && bound; d++) bound = s.dims[d] >= 1;
    if (bound) shapes[n++] = s; /* the shapes m was loaded with */
  }
  /* a model compiled as a program keeps the unrolled steps: its part steps
   * name values of the graph the runtime loads from the carried model,
   * which is loaded without recurrent_cells */
  int cells = cov_model_unrolls_recurrence(m) && !gpu_model_has_control(m);
  if (!need && !cells) return NULL;
  cov_model_options mo = {.shapes = shapes, .n_shapes = n, .compute_f32 = need, .recurrent_cells = cells};
  return cov_model_load_file(path, &mo, out);
}

cov_status gpu_run_model_on_device(gpu_vendors vendors, const char *target, cov_dtype dtype, const cov_model *m,
                                   const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                   size_t n_outputs) {
  gpu_target t;
  COV_RETURN_IF_ERROR(gpu_target_open(vendors, target, dtype ? dtype : COV_F16, &t));
  gpu_model_plan mp;
  uint8_t *bytes = NULL;
  size_t n = 0;
  crt_artifact *a = NULL;
  crt_session *s = NULL;
  cov_model *wide = NULL;
  cov_status st = gpu_widened(m, name, &wide);
  if (!st) st = gpu_model_compile_with(wide ? wide : m, name, &t, 1, &mp);
  cov_model_free(wide);
  if (!st) {
    st = gpu_model_artifact(&mp, name, &bytes, &n);
    gpu_model_plan_free(&mp);
  }
  if (!st) st = crt_artifact_read(bytes, n, name, &a);
  free(bytes);
  crt_options ro = {.expect_target = cov_acg_name(t.acg)};
  if (!st) st = crt_session_open(a, &ro, &s);
  if (!st) st = crt_session_run(s, inputs, n_inputs, outputs, n_outputs);
  if (s) crt_session_close(s);
  if (a) crt_artifact_free(a);
  gpu_target_close(&t);
  return st;
}

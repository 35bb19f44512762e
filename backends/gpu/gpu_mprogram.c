/* backends/gpu/gpu_mprogram.c: a model with control flow (a Loop or If)
 * compiled for a GPU as straight stretches of kernel launches joined by
 * host steps (runtime/README.md, "Host steps and control").
 *
 * The frontend gives the model as a program (cov_model_program_build):
 * its groups in execution order, a Loop or If opened into its subgraphs'
 * groups between markers, byte moves as copies, every value at one shape.
 * Each value is one plan buffer (a constant a weight, as stored); each
 * compute group is lowered exactly as gpu_model_compile_fixed lowers a
 * group of a straight model (gpu_mcompile.c), its inputs whole buffers:
 * the capture that traces element provenance through layout operations
 * runs the model once per pass and cannot follow a loop, and inside a
 * program every layout operation is already a copy or a group. Copies,
 * loops and branches become the artifact's copy / loop / next / if / jump
 * steps, which the runtime drives from values it reads back from the
 * device (runtime/crt_run.c): the launches between two host steps are
 * one straight segment. The program's part steps (a layout node it has
 * no other step for; last, the part whose sizes depend on the data) are
 * plan steps GPU_STEP_PART, the runtime's part steps: the reference
 * interpreter runs them on the host, the data-dependent outputs at their
 * capacities (cov_model_program_io), which no device step touches. A
 * model without control flow whose outputs' sizes depend on the data is
 * compiled this way too. The plan-level passes that rewrite launches
 * across groups (channels-last activations, fusions) are not run: they
 * assume one straight line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/grow.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_vendor.h"

enum { PROG_MAX_DEPTH = 16 };

typedef struct prog_ctx {
  gpu_model_plan *p;
  const cov_model_program *prog;
  const gpu_target *t;
  const char *path;
  gpu_capture cap; /* one buffer id per value (id_numel); groups unused */
  int *id_buf;     /* id -> plan buffer */
  char **names;    /* id -> value name */
  int cap_names;
  int open[PROG_MAX_DEPTH], depth;
  cov_status errs; /* groups and work that cannot be compiled, each located */
} prog_ctx;

/* Whether an output's size depends on the data: every input's shape is
 * fixed and an output's is not (an operator whose output size depends on
 * the values, NonZero, NonMaxSuppression, a TopK with a run-time k). */
static int data_dependent(const cov_model *m) {
  cov_dtype dt;
  int rank;
  int64_t shape[COV_MAX_RANK];
  for (size_t i = 0; i < cov_model_num_inputs(m); i++) {
    if (cov_model_input_info(m, i, &dt, &rank, shape) || rank < 0) return 0;
    for (int d = 0; d < rank; d++)
      if (shape[d] < 0) return 0; /* compiled at 1 by the straight path, or refused naming --shape */
  }
  for (size_t i = 0; i < cov_model_num_outputs(m); i++) {
    if (cov_model_output_info(m, i, &dt, &rank, shape)) return 0;
    for (int d = 0; d < rank; d++)
      if (shape[d] < 0) return 1;
    if (rank < 0) return 1;
  }
  return 0;
}

int gpu_model_has_control(const cov_model *m) {
  if (data_dependent(m)) return 1;
  static const char *const kinds[] = {"loop", "if", "scan", NULL};
  for (size_t i = 0; i < cov_model_num_groups(m); i++) {
    cov_model_group_info info;
    if (cov_model_group_get_info(m, i, &info)) return 0; /* the capture reports it */
    for (const char *const *k = kinds; info.layout && *k; k++)
      if (!strcmp(info.kind, *k)) return 1;
  }
  return 0;
}

static cov_status oom(void) { return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory compiling the model"); }

static int find_value(const prog_ctx *c, const char *name) {
  for (int i = 0; i < c->cap.n_ids; i++)
    if (!strcmp(c->names[i], name)) return i;
  return -1;
}

/* A new id for plan buffer b holding value `name`. */
static cov_status add_id(prog_ctx *c, const char *name, int b) {
  if (c->cap.n_ids == c->cap_names) {
    int n = c->cap_names ? 2 * c->cap_names : 32;
    int64_t *numel = realloc(c->cap.id_numel, (size_t)n * sizeof *numel);
    if (numel) c->cap.id_numel = numel;
    int *ib = numel ? realloc(c->id_buf, (size_t)n * sizeof *ib) : NULL;
    if (ib) c->id_buf = ib;
    char **nm = ib ? realloc(c->names, (size_t)n * sizeof *nm) : NULL;
    if (!nm) return oom();
    c->names = nm, c->cap_names = n, c->cap.cap_ids = n;
  }
  char *d = strdup(name);
  if (!d) return oom();
  int id = c->cap.n_ids++;
  c->names[id] = d, c->id_buf[id] = b, c->cap.id_numel[id] = c->p->bufs[b].numel;
  return NULL;
}

/* A constant as a weight holding its elements as stored. */
static int const_buffer(prog_ctx *c, const char *name, const cov_tensor *t, cov_status *st) {
  int b = gpu_mplan_add_buf(c->p, name, GPU_BUF_WEIGHT, t->dtype, t->rank, t->shape, st);
  if (b < 0) return -1;
  size_t bytes = (size_t)c->p->bufs[b].numel * cov_dtype_size(t->dtype);
  void *d = malloc(bytes + 1);
  if (!d) {
    *st = oom();
    return -1;
  }
  if (bytes) memcpy(d, t->data, bytes);
  c->p->bufs[b].data = d;
  return b;
}

/* The id of value `name`: known, or a new buffer at the program's shape
 * for it (a constant a weight), else at `fallback`'s. */
static int value_id(prog_ctx *c, const char *name, const cov_tensor *fallback, cov_status *st) {
  int id = find_value(c, name);
  if (id >= 0) return id;
  cov_tensor t = {0};
  if (!cov_model_program_value(c->prog, name, &t) || t.rank < 0) {
    if (!fallback) {
      *st = cov_error(COV_INTERNAL, GPU_LOC(c->path, name), "value '%s' has no shape in the program", name);
      return -1;
    }
    t = *fallback;
    t.data = NULL;
  }
  int b = t.data ? const_buffer(c, name, &t, st)
                 : gpu_mplan_add_buf(c->p, name, GPU_BUF_INTERMEDIATE, t.dtype, t.rank, t.shape, st);
  if (b < 0) return -1;
  if ((*st = add_id(c, name, b))) return -1;
  return c->cap.n_ids - 1;
}

/* The model's inputs and outputs first, as buffers of their own. */
static cov_status add_ios(prog_ctx *c, const cov_model *m) {
  gpu_model_plan *p = c->p;
  size_t ni = cov_model_num_inputs(m), no = cov_model_num_outputs(m);
  if (ni > 16 || no > 16)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, NULL), "the GPU model path takes at most 16 inputs and outputs");
  p->n_inputs = (int)ni, p->n_outputs = (int)no;
  cov_status st = NULL;
  for (size_t k = 0; k < ni + no && !st; k++) {
    int out = k >= ni;
    size_t i = out ? k - ni : k;
    const char *name = out ? cov_model_output_name(m, i) : cov_model_input_name(m, i);
    cov_tensor t = {0};
    unsigned dyn = 0; /* an output whose size depends on the data: at its capacity */
    st = cov_model_program_io(c->prog, m, c->path, out, i, &t, &dyn);
    if (!st && !out && t.dtype != COV_F32 && t.dtype != COV_I64)
      st = cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, name),
                     "model input '%s' is %s; the GPU model path takes f32 and i64 inputs", name, cov_dtype_name(t.dtype));
    int b = st ? -1 : gpu_mplan_add_buf(p, name, out ? GPU_BUF_OUTPUT : GPU_BUF_INPUT, t.dtype, t.rank, t.shape, &st);
    if (b < 0) break;
    p->bufs[b].io = (int)i, p->bufs[b].dynamic = dyn;
    if (out) {
      p->output_buf[i] = b, p->out_io[i] = cov_model_io_dtype(m, 1, i);
    } else {
      p->input_buf[i] = b, p->in_io[i] = cov_model_io_dtype(m, 0, i);
      p->in_symbolic[i] = cov_model_input_symbolic(m, i);
      p->in_has_range[i] = cov_model_input_range(m, i, &p->in_lo[i], &p->in_hi[i]);
    }
    st = add_id(c, name, b);
  }
  return st;
}

/* Group input k as one run over all of its value's buffer. */
static cov_status bind_input(prog_ctx *c, gpu_cap_input *in) {
  cov_status st = NULL;
  int id = value_id(c, in->name, &in->t, &st);
  if (id < 0) return st;
  int64_t n = cov_tensor_numel(&in->t);
  if (n != c->cap.id_numel[id] || in->t.dtype != c->p->bufs[c->id_buf[id]].dtype)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, in->name), "input '%s' is read as %s[%lld] from a %s[%lld] value",
                     in->name, cov_dtype_name(in->t.dtype), (long long)n,
                     cov_dtype_name(c->p->bufs[c->id_buf[id]].dtype), (long long)c->cap.id_numel[id]);
  in->v.runs = malloc(sizeof *in->v.runs);
  if (!in->v.runs) return oom();
  in->v.runs[0] = (gpu_cap_run){id, 0, 0, n};
  in->v.n_runs = 1, in->v.numel = n, in->v.ok = 1;
  return NULL;
}

/* A compute group lowered into launches; an error of the group's (not
 * the tuning file's) is collected, located at its node. */
static cov_status group_step(prog_ctx *c, const cov_model_pstep *ps, size_t at) {
  gpu_cap_group g;
  memset(&g, 0, sizeof g);
  g.group = (int)ps->group, g.described = 1;
  snprintf(g.kind, sizeof g.kind, "%s", ps->kind_name ? ps->kind_name : "");
  snprintf(g.node, sizeof g.node, "%s", cov_model_group_name(ps->desc));
  cov_status st = gpu_cap_describe(&g, ps->desc), gs = NULL;
  for (size_t k = 0; k < g.n_in && !st && !gs; k++) gs = bind_input(c, &g.in[k]);
  int id = st || gs ? -1 : value_id(c, g.out_name, &g.out, &st);
  if (id >= 0 && (cov_tensor_numel(&g.out) != c->cap.id_numel[id] || g.out.dtype != c->p->bufs[c->id_buf[id]].dtype))
    gs = cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, g.node), "its result is %s[%lld]; its value '%s' is %s[%lld]",
                   cov_dtype_name(g.out.dtype), (long long)cov_tensor_numel(&g.out), g.out_name,
                   cov_dtype_name(c->p->bufs[c->id_buf[id]].dtype), (long long)c->cap.id_numel[id]);
  if (id >= 0 && !gs) {
    int file_error = 0, first = c->p->n_steps;
    g.buf_id = id;
    gs = gpu_model_lower_group(c->p, &c->cap, c->t, c->path, c->id_buf, 0, &g, &file_error);
    if (gs && file_error) st = gs, gs = NULL;
    /* group numbers restart in each subgraph: the program step makes the
     * kernel names (and the modules named after them) unique */
    for (int s = first; s < c->p->n_steps && !gs && !st; s++) {
      char *k = c->p->steps[s].kernel, tmp[sizeof c->p->steps[s].kernel];
      if (strncmp(k, "covenant_", 9)) continue;
      snprintf(tmp, sizeof tmp, "covenant_p%zu_%s", at, k + 9);
      memcpy(k, tmp, sizeof tmp);
    }
  }
  if (gs) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cov_status_message(gs));
    cov_status_free(gs);
    c->errs = cov_status_join(c->errs, cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, g.node[0] ? g.node : NULL),
                                                 "layer group %d (%s, node '%s'): %s", g.group, g.kind, g.node, msg));
  }
  gpu_cap_group_free(&g);
  return st;
}

/* A PART step: the model's part the reference interpreter runs on the
 * host (the runtime's part step), its values' buffers: an input or a
 * value an earlier step made, an output at its capacity (add_ios), or a
 * new intermediate at the program's shape. */
static cov_status part_step(prog_ctx *c, const cov_model_pstep *ps) {
  gpu_model_plan *p = c->p;
  cov_status st = common_grow((void **)&p->parts, &p->cap_parts, p->n_parts + 1, sizeof *p->parts, 8,
                              "compiling the model");
  if (st) return st;
  gpu_mpart *pt = &p->parts[p->n_parts++];
  memset(pt, 0, sizeof *pt);
  pt->values = calloc(ps->n_vals + 1, sizeof *pt->values);
  pt->bufs = calloc(ps->n_vals + 1, sizeof *pt->bufs);
  if (!pt->values || !pt->bufs) return oom();
  pt->n_in = (int)ps->n_in;
  for (size_t k = 0; k < ps->n_vals; k++, pt->n++) {
    int id = value_id(c, ps->vals[k], NULL, &st);
    if (id < 0) return st;
    if (!(pt->values[k] = strdup(ps->vals[k]))) return oom();
    pt->bufs[k] = c->id_buf[id];
  }
  gpu_mstep *s = gpu_mplan_add_step(p, (int)ps->group, ps->node ? ps->node : "", &st);
  if (!s) return st;
  s->op = GPU_STEP_PART, s->n_args = 0, s->part = p->n_parts - 1;
  return NULL;
}

static cov_status control_args(prog_ctx *c, const cov_model_pstep *ps, gpu_mstep *s) {
  cov_status st = NULL;
  if (ps->n_vals > GPU_CDL_MAX_ARGS)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, ps->node), "%s '%s' joins %zu values (%d at most)",
                     ps->kind_name, ps->node, ps->n_vals, GPU_CDL_MAX_ARGS);
  s->n_args = (int)ps->n_vals;
  for (size_t k = 0; k < ps->n_vals && !st; k++) {
    int id = ps->vals[k] ? value_id(c, ps->vals[k], NULL, &st) : -1;
    s->args[k] = id < 0 ? -1 : c->id_buf[id];
  }
  return st;
}

/* copy, loop / next, if / jump from the program's markers. */
static cov_status control_step(prog_ctx *c, const cov_model_pstep *ps) {
  static const gpu_step_op ops[] = {[COV_PSTEP_COPY] = GPU_STEP_COPY, [COV_PSTEP_LOOP] = GPU_STEP_LOOP,
                                    [COV_PSTEP_NEXT] = GPU_STEP_NEXT, [COV_PSTEP_IF] = GPU_STEP_IF,
                                    [COV_PSTEP_ELSE] = GPU_STEP_JUMP};
  gpu_model_plan *p = c->p;
  if (ps->kind == COV_PSTEP_END) {
    if (c->depth > 0) p->steps[c->open[--c->depth]].target = p->n_steps;
    return NULL;
  }
  int opens = ps->kind == COV_PSTEP_LOOP || ps->kind == COV_PSTEP_IF;
  if (opens && c->depth >= PROG_MAX_DEPTH)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, ps->node), "control nested deeper than %d", PROG_MAX_DEPTH);
  if (!opens && ps->kind != COV_PSTEP_COPY && c->depth == 0)
    return cov_error(COV_INTERNAL, GPU_LOC(c->path, ps->node), "a %s marker outside any Loop or If", ps->kind_name);
  cov_status st = NULL;
  gpu_mstep *s = gpu_mplan_add_step(p, (int)ps->group, ps->node ? ps->node : "", &st);
  if (!s) return st;
  int si = p->n_steps - 1;
  s->op = ops[ps->kind];
  s->target = -1;
  s->n_args = 0;
  if (ps->kind != COV_PSTEP_ELSE) COV_RETURN_IF_ERROR(control_args(c, ps, s)); /* adds buffers, never steps */
  if (ps->kind == COV_PSTEP_COPY) {
    if (s->n_args != 2 || s->args[0] < 0 || s->args[1] < 0)
      return cov_error(COV_INTERNAL, GPU_LOC(c->path, ps->node), "a copy without its two values");
    const gpu_mbuf *a = &p->bufs[s->args[0]], *b = &p->bufs[s->args[1]];
    if (a->numel * (int64_t)cov_dtype_size(a->dtype) != b->numel * (int64_t)cov_dtype_size(b->dtype))
      return cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, ps->node), "a copy from '%s' into '%s' of another size",
                       a->name, b->name);
  } else if (opens) {
    c->open[c->depth++] = si;
  } else if (ps->kind == COV_PSTEP_NEXT) {
    int l = c->open[--c->depth];
    s->n_carry = (int)ps->n_carried, s->target = l, p->steps[l].target = si;
  } else { /* ELSE: the then branch ends with this jump; the If goes to the step after it */
    p->steps[c->open[c->depth - 1]].target = si + 1;
    c->open[c->depth - 1] = si;
  }
  return NULL;
}

static cov_status build(prog_ctx *c, const cov_model *m) {
  cov_status st = add_ios(c, m);
  size_t n = cov_model_program_count(c->prog);
  for (size_t i = 0; i < n && !st; i++) {
    const cov_model_pstep *ps = cov_model_program_step(c->prog, i);
    if (ps->kind == COV_PSTEP_GROUP) {
      st = group_step(c, ps, i);
    } else if (ps->kind == COV_PSTEP_MISSING) {
      c->errs = cov_status_join(c->errs, cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, ps->node),
                                                   "layer group %zu (%s, node '%s'): %s", ps->group,
                                                   ps->kind_name ? ps->kind_name : "", ps->node ? ps->node : "",
                                                   ps->why ? ps->why : "not compiled"));
    } else if (ps->kind == COV_PSTEP_PART) {
      st = part_step(c, ps);
    } else {
      st = control_step(c, ps);
    }
  }
  return st;
}

/* Only part steps touch a buffer whose size is set at run time: the
 * frontend puts what depends on such a value in the last part, and the
 * runtime refuses any other step on one (runtime/crt_artifact.c). */
static cov_status check_dynamic(const prog_ctx *c) {
  const gpu_model_plan *p = c->p;
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    int n = s->op == GPU_STEP_PART ? 0 : s->op == GPU_STEP_FILL ? 1 : s->n_args;
    for (int k = 0; k < n; k++) {
      int b = s->op == GPU_STEP_FILL ? s->fill_buf : s->args[k];
      if (b >= 0 && p->bufs[b].dynamic)
        return cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, s->label),
                         "step '%s' reads or writes '%s', whose size depends on the data: only the part run on the "
                         "host may", s->label, p->bufs[b].name);
    }
  }
  return NULL;
}

cov_status gpu_model_compile_program(const cov_model *m, const char *path, const gpu_target *t, int emit,
                                     gpu_model_plan *p) {
  memset(p, 0, sizeof *p);
  if (t) {
    snprintf(p->target, sizeof p->target, "%s", cov_acg_name(t->acg));
    snprintf(p->backend, sizeof p->backend, "%s", t->vendor->backend);
    p->vendor = t->vendor;
    snprintf(p->mcpu, sizeof p->mcpu, "%s", t->acg->backend.mcpu ? t->acg->backend.mcpu : "");
  }
  p->model = m;
  prog_ctx c = {.p = p, .t = t, .path = path};
  cov_model_program *prog = NULL;
  cov_status st = cov_model_num_inputs(m) > 16
                      ? cov_error(COV_UNSUPPORTED, GPU_LOC(path, NULL), "the GPU model path takes at most 16 inputs")
                      : cov_model_program_build_probe(m, path, &prog);
  c.prog = prog;
  if (!st) st = build(&c, m);
  if (!st) st = check_dynamic(&c);
  if (!st && c.errs) {
    size_t n = cov_status_count(c.errs);
    st = cov_status_join(cov_error(COV_UNSUPPORTED, GPU_LOC(path, NULL), "%zu layer group%s cannot be compiled for %s:",
                                   n, n == 1 ? "" : "s", t ? cov_acg_name(t->acg) : "the GPU"),
                         c.errs);
    c.errs = NULL;
  }
  cov_status_free(c.errs);
  if (!st && t && emit) st = gpu_model_build_modules(p, t);
  for (int i = 0; i < c.cap.n_ids; i++) free(c.names[i]);
  free(c.names), free(c.id_buf), free(c.cap.id_numel);
  cov_model_program_free(prog);
  if (st) gpu_model_plan_free(p);
  return st;
}

cov_status gpu_model_compile_fixed(const cov_model *m, const char *path, const gpu_target *t, int emit,
                                   gpu_model_plan *out) {
  /* The model plan's 16-bit activations, operand copies, LayerNorm and
   * attention kernels are f16 (operand_dtype); a bf16 request would be
   * compiled as f16, so it is refused rather than silently changed. */
  cov_loc opt = {.file = path, .path = "--dtype"};
  if (t && t->dtype == COV_BF16)
    return cov_error(COV_UNSUPPORTED, &opt,
                     "bf16: GPU models compile with f16 (default) or f32 matrix operands; bf16 is taken "
                     "for single layers (covenant compile LAYER --dtype bf16)");
  return gpu_model_has_control(m) ? gpu_model_compile_program(m, path, t, emit, out)
                                  : gpu_model_compile_straight(m, path, t, emit, out);
}

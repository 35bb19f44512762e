/* backends/npu-sim/compile/npu_control.c: a model's program
 * (cov_model_program_build) into an NPU artifact's steps.
 *
 * Each compute group that maps and compiles is one NPU program (an `npu`
 * step); one that does not runs on the host as its codelet calls (`host`
 * steps, the codelets' source carried in the artifact), so that what
 * `covenant run` runs call by call on the CPU the artifact runs too. Data
 * movement that only moves bytes is a `copy`; a Loop is `loop` ... `next`
 * around its body's steps and an If is `if` ... `jump` around its
 * branches (runtime/README.md, "Host steps and control"). Work the
 * program cannot hold is listed in the artifact's `missing`. Each model
 * value is one buffer, found by name; constants read by host steps or
 * control are weights. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/compile/npu_control.h"
#include "common/loc.h"
#include "covenant/codelet.h"

static cov_status grow_error(const char *path) {
  return cov_error(COV_OUT_OF_MEMORY, COV_AT_FILE(path), "out of memory");
}

int npu_value_find(const npu_values *v, const char *name) {
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->names[i], name)) return v->buffers[i];
  return -1;
}

cov_status npu_value_add(npu_values *v, const char *name, int buffer) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 32;
    char **nn = realloc(v->names, cap * sizeof *nn);
    if (!nn) return grow_error(name);
    v->names = nn;
    int *nb = realloc(v->buffers, cap * sizeof *nb);
    if (!nb) return grow_error(name);
    v->buffers = nb, v->cap = cap;
  }
  v->names[v->n] = strdup(name);
  if (!v->names[v->n]) return grow_error(name);
  v->buffers[v->n++] = buffer;
  return NULL;
}

void npu_values_free(npu_values *v) {
  for (size_t i = 0; i < v->n; i++) free(v->names[i]);
  free(v->names), free(v->buffers);
  memset(v, 0, sizeof *v);
}

static uint64_t tensor_bytes(const cov_tensor *t) {
  int64_t n = cov_tensor_numel(t);
  return n < 0 ? 0 : (uint64_t)n * cov_dtype_size(t->dtype);
}

/* The buffer of a value: known, a weight (a constant), or a new
 * intermediate at the program's shape for it. */
int npu_value_buffer(npu_ctl *c, const char *name, const cov_tensor *fallback) {
  int buf = npu_value_find(c->vals, name);
  if (buf >= 0 || c->st) return buf;
  cov_tensor t = {0};
  if (!c->prog || !cov_model_program_value(c->prog, name, &t) || t.rank < 0) {
    if (!fallback) {
      c->st = cov_error(COV_INTERNAL, COV_AT_FILE(c->path), "value '%s' has no shape in the program", name);
      return -1;
    }
    t = *fallback;
    t.data = NULL;
  }
  buf = t.data ? crt_add_weight(c->b, name, t.dtype, t.rank, t.shape, t.data, tensor_bytes(&t))
               : crt_add_buffer(c->b, name, CRT_BUF_INTERMEDIATE, t.dtype, t.rank, t.shape, tensor_bytes(&t));
  if (buf >= 0) c->st = npu_value_add(c->vals, name, buf);
  return buf;
}

/* A codelet the host steps call, once in the artifact's codelet text. */
static void need_codelet(npu_ctl *c, const cov_codelet_lib *lib, const char *name) {
  for (size_t i = 0; i < c->n_codelets; i++)
    if (!strcmp(c->codelets[i], name)) return;
  const cov_codelet *cd = cov_codelet_lib_find(lib, name);
  if (!cd) {
    c->st = cov_error(COV_INTERNAL, COV_AT_FILE(c->path), "codelet '%s' is not in the model's library", name);
    return;
  }
  if (c->n_codelets == sizeof c->codelets / sizeof c->codelets[0]) {
    c->st = cov_error(COV_UNSUPPORTED, COV_AT_FILE(c->path), "host steps call more than %zu codelets",
                      sizeof c->codelets / sizeof c->codelets[0]);
    return;
  }
  c->codelets[c->n_codelets++] = name;
  if (!c->text) c->text = open_memstream(&c->text_buf, &c->text_len);
  if (!c->text) c->st = grow_error(c->path);
  else c->st = cov_codelet_print(cd, c->text);
}

static crt_view view_of(int buffer, const cov_tensor *t) {
  crt_view v = {.buffer = buffer, .dtype = t->dtype, .rank = t->rank};
  memcpy(v.shape, t->shape, sizeof v.shape);
  return v;
}

/* One call's operand: a value's buffer, a constant as a weight (named by
 * the group and call), or the previous call's result. */
static int arg_buffer(npu_ctl *c, const cov_model_group *d, size_t call, size_t k, int prev) {
  const cov_model_arg *a = &cov_model_group_call_at(d, call)->args[k];
  if (a->kind == COV_MODEL_ARG_PREV) return prev;
  if (a->kind == COV_MODEL_ARG_EXTERNAL) {
    cov_tensor shape = {0};
    const char *value = cov_model_group_input(d, (size_t)a->input, &shape);
    if (!value) {
      c->st = cov_error(COV_INTERNAL, COV_AT(c->path, cov_model_group_name(d)), "call %zu reads no group input", call);
      return -1;
    }
    return npu_value_buffer(c, value, &shape);
  }
  char name[256];
  snprintf(name, sizeof name, "%s:%zu:%zu", cov_model_group_name(d), call, k);
  return crt_add_weight(c->b, name, a->t.dtype, a->t.rank, a->t.shape, a->t.data, tensor_bytes(&a->t));
}

/* A compute group on the host: one host step per codelet call, results
 * between calls in intermediates, the last into the group's output. */
void npu_group_on_host(npu_ctl *c, const cov_model_group *d, int group) {
  int prev = -1;
  size_t n = cov_model_group_num_calls(d);
  for (size_t i = 0; i < n && !c->st; i++) {
    const cov_model_group_call *call = cov_model_group_call_at(d, i);
    crt_view views[65];
    if (call->n_args > 64) {
      c->st = cov_error(COV_UNSUPPORTED, COV_AT(c->path, call->node), "a call with %zu operands", call->n_args);
      return;
    }
    need_codelet(c, cov_model_group_codelets(d), call->codelet);
    for (size_t k = 0; k < call->n_args && !c->st; k++)
      views[k] = view_of(arg_buffer(c, d, i, k, prev), &call->args[k].t);
    int out;
    if (i + 1 < n) {
      char name[256];
      snprintf(name, sizeof name, "%s:%zu", cov_model_group_name(d), i);
      out = crt_add_buffer(c->b, name, CRT_BUF_INTERMEDIATE, call->out.dtype, call->out.rank, call->out.shape,
                           tensor_bytes(&call->out));
    } else {
      cov_tensor shape = {0};
      const char *value = cov_model_group_output(d, &shape);
      out = npu_value_buffer(c, value, &shape);
    }
    views[call->n_args] = view_of(out, &call->out);
    crt_attr attrs[64];
    size_t na = call->n_attrs < 64 ? call->n_attrs : 64;
    for (size_t k = 0; k < na; k++)
      attrs[k] = (crt_attr){call->attrs[k].name, call->attrs[k].is_float, call->attrs[k].i, call->attrs[k].f};
    if (!c->st)
      crt_add_host(c->b, group, call->node, call->codelet, attrs, (int)na, views, (int)call->n_args + 1);
    prev = out;
  }
}

static int ref(npu_ctl *c, const char *name) { return name ? npu_value_buffer(c, name, NULL) : -1; }

/* loop/next, if/jump from the program's markers. */
void npu_control_step(npu_ctl *c, const cov_model_pstep *p) {
  int refs[1 + 2 * 256], g = (int)p->group;
  if (p->n_vals > sizeof refs / sizeof refs[0]) {
    c->st = cov_error(COV_UNSUPPORTED, COV_AT(c->path, p->node), "more than 256 loop-carried values");
    return;
  }
  for (size_t k = 0; k < p->n_vals && !c->st; k++) refs[k] = ref(c, p->vals[k]);
  if (c->st) return;
  if (c->depth >= NPU_CTL_MAX_DEPTH && (p->kind == COV_PSTEP_LOOP || p->kind == COV_PSTEP_IF)) {
    c->st = cov_error(COV_UNSUPPORTED, COV_AT(c->path, p->node), "control nested deeper than %d", NPU_CTL_MAX_DEPTH);
    return;
  }
  int s;
  switch (p->kind) {
    case COV_PSTEP_COPY: crt_add_copy(c->b, g, p->node, refs[0], refs[1]); break;
    case COV_PSTEP_LOOP:
    case COV_PSTEP_IF:
      s = crt_add_control(c->b, p->kind == COV_PSTEP_LOOP ? CRT_STEP_LOOP : CRT_STEP_IF, g, p->node, refs,
                          (int)p->n_vals);
      c->open[c->depth++] = s;
      break;
    case COV_PSTEP_NEXT:
      s = crt_add_control(c->b, CRT_STEP_NEXT, g, p->node, refs, (int)p->n_vals);
      if (s >= 0) crt_set_carried(c->b, s, (int)p->n_carried);
      if (c->depth > 0 && s >= 0) crt_set_target(c->b, s, c->open[c->depth - 1]);
      if (c->depth > 0 && s >= 0) crt_set_target(c->b, c->open[--c->depth], s);
      break;
    case COV_PSTEP_ELSE:
      s = crt_add_control(c->b, CRT_STEP_JUMP, g, p->node, NULL, 0);
      if (c->depth > 0 && s >= 0) crt_set_target(c->b, c->open[c->depth - 1], s + 1), c->open[c->depth - 1] = s;
      break;
    case COV_PSTEP_END:
      if (c->depth > 0) crt_set_target(c->b, c->open[--c->depth], crt_builder_num_steps(c->b));
      break;
    default: break;
  }
}

void npu_part_step(npu_ctl *c, const cov_model_pstep *p) {
  if (c->st) return;
  int *bufs = calloc(p->n_vals + 1, sizeof *bufs);
  if (!bufs) {
    c->st = grow_error(c->path);
    return;
  }
  for (size_t k = 0; k < p->n_vals && !c->st; k++) {
    bufs[k] = npu_value_buffer(c, p->vals[k], NULL); /* outputs with a capacity: add_ios made them */
    if (bufs[k] < 0 && !c->st)
      c->st = cov_error(COV_INTERNAL, COV_AT(c->path, p->vals[k]), "value '%s' has no buffer", p->vals[k]);
  }
  if (!c->st)
    c->st = crt_add_model_part(c->b, c->path, (int)p->group, p->node, p->vals, bufs, (int)p->n_in,
                               (int)(p->n_vals - p->n_in));
  free(bufs);
}

cov_status npu_ctl_finish(npu_ctl *c) {
  if (c->st || !c->text) return c->st;
  int bad = ferror(c->text);
  if (fclose(c->text) != 0 || bad || !c->text_buf) return grow_error(c->path);
  c->text = NULL;
  crt_add_codelets(c->b, c->text_buf, c->text_len);
  return NULL;
}

void npu_ctl_free(npu_ctl *c) {
  if (c->text) fclose(c->text);
  free(c->text_buf);
}

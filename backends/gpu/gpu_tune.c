/* backends/gpu/gpu_tune.c: tuning keys, schedules as text, the tuning file
 * and the one hook where a GPU compile picks a matrix or depthwise
 * kernel's plan (gpu_tune.h). */
#include "backends/gpu/gpu_tune.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_tune_json.h"
#include "common/fileio.h"
#include "common/json_pos.h"
#include "covenant/acg.h"
#include "covenant/arena.h"

static const char *act_name(gpu_act a) {
  switch (a) {
    case GPU_ACT_RELU: return "relu";
    case GPU_ACT_CLIP: return "clip";
    case GPU_ACT_GELU: return "gelu";
    case GPU_ACT_HSWISH: return "hswish";
    case GPU_ACT_SILU: return "silu";
    case GPU_ACT_GELU_TANH: return "gelu_tanh";
    case GPU_ACT_HSIGMOID: return "hsigmoid";
    default: return NULL;
  }
}

void gpu_tune_key(const gpu_problem *q, const char *target, char *out, size_t size) {
  char epi[96] = "";
  const gpu_epilogue *e = &q->epi;
  size_t n = 0;
#define EPI(...) n += (size_t)snprintf(epi + n, n < sizeof epi ? sizeof epi - n : 0, __VA_ARGS__)
  if (e->bias) EPI("bias-");
  if (act_name(e->act)) EPI("%s-", act_name(e->act));
  if (e->act == GPU_ACT_CLIP || e->act == GPU_ACT_HSIGMOID) EPI("%g,%g-", (double)e->clip_lo, (double)e->clip_hi);
  if (e->maxpool2x2) EPI("pool2-");
  if (e->softmax) EPI("softmax-");
  /* channels-last tensors: another kernel, its own entry (the depthwise
   * kernel takes nothing else) */
  if (q->nhwc_io && !gpu_is_dw(q)) EPI("cl-");
  if (q->nhwc_out) EPI("nhwc-out-");
#undef EPI
  if (n && n < sizeof epi) epi[n - 1] = '\0';
  const char *dt = cov_dtype_name(q->in_dtype), *ep = epi[0] ? epi : "none";
  if (gpu_is_dw(q))
    snprintf(out, size, "%s:dwconv:n%lldc%lldh%lldw%lld:r%llds%lld:s%lldp%lldd%lld:%s:%s", target, (long long)q->cn,
             (long long)q->cc, (long long)q->ch, (long long)q->cw, (long long)q->cr, (long long)q->cs,
             (long long)q->stride, (long long)q->pad, (long long)q->dilation, dt, ep);
  else if (q->kind == GPU_OP_MATMUL)
    snprintf(out, size, "%s:matmul:b%lld:m%lld:n%lld:k%lld:%s:%s%s", target, (long long)q->batch, (long long)q->m,
             (long long)q->n, (long long)q->k, dt, ep, q->out_f16 ? ":out-f16" : "");
  else if (q->kind == GPU_OP_CONV2D)
    snprintf(out, size, "%s:conv2d:n%lldc%lldh%lldw%lld:k%lldr%llds%lld:s%lldp%lldd%lldg%lld:%s:%s", target,
             (long long)q->cn, (long long)q->cc, (long long)q->ch, (long long)q->cw, (long long)q->ck,
             (long long)q->cr, (long long)q->cs, (long long)q->stride, (long long)q->pad, (long long)q->dilation,
             (long long)q->groups, dt, ep);
  else
    snprintf(out, size, "%s:maxpool:n%lldc%lldh%lldw%lld:r%llds%lld:s%lldp%lld:%s", target, (long long)q->cn,
             (long long)q->cc, (long long)q->ch, (long long)q->cw, (long long)q->cr, (long long)q->cs,
             (long long)q->stride, (long long)q->pad, dt);
}

void gpu_tune_key_kind(const char *key, char *out, size_t size) {
  const char *a = strchr(key, ':'), *b = a ? strchr(a + 1, ':') : NULL;
  if (!b || b == a + 1 || b - a > 32) snprintf(out, size, "?");
  else snprintf(out, size, "%.*s", (int)(b - a - 1), a + 1);
}

/* "dwP": the depthwise kernel with P output pixels per thread */
static int parse_dw(const char *text, gpu_sched *out) {
  int pw = 0, end = 0;
  if (sscanf(text, "dw%d%n", &pw, &end) != 1 || text[end] || pw < 1 || pw > 8 || text[2] < '1' || text[2] > '9') return 0;
  *out = (gpu_sched){GPU_SCHED_DW, {pw}};
  return 1;
}

cov_status gpu_sched_parse(const char *text, const cov_loc *where, gpu_sched *out) {
  if (!strncmp(text, "dw", 2)) {
    if (parse_dw(text, out)) return NULL;
    return cov_error(COV_INVALID_ARGUMENT, where, "schedule '%s': a depthwise schedule is written dwP (P pixels per thread, 1 to 8)",
                     text);
  }
  int bm = 0, bn = 0, bk = 0, wm = 0, wn = 0, stages = 0, wg = 0, inflight = -1, end = 0;
  int n = sscanf(text, "%dx%dx%d:%dx%d:%d%n", &bm, &bn, &bk, &wm, &wn, &stages, &end);
  const char *rest = n == 6 ? text + end : "?";
  if (!strcmp(rest, ":wg"))
    wg = 1;
  else if (!strcmp(rest, ":wg0") || !strcmp(rest, ":wg1"))
    wg = 1, inflight = rest[3] - '0';
  else if (!strcmp(rest, ":ws") || !strcmp(rest, ":ws0") || !strcmp(rest, ":wsp"))
    /* plan.tma with / without setmaxnreg, with ping-pong consumers */
    wg = rest[3] == '0' ? 2 : rest[3] == 'p' ? 4 : 3, inflight = 0;
  if ((*rest && !wg) || bm < 1 || bn < 1 || bk < 1 || wm < 1 || wn < 1 || stages < 2 || bm > 1024 || bn > 1024 ||
      bk > 1024 || wm > bm || wn > bn || stages > 16)
    return cov_error(COV_INVALID_ARGUMENT, where, "schedule '%s': a schedule is written BMxBNxBK:WMxWN:STAGES[:wg[D]|:ws[0|p]] "
                     "(tiles 1 to 1024, the warp tile within the workgroup tile, 2 to 16 stages), or dwP for a "
                     "depthwise kernel", text);
  *out = (gpu_sched){GPU_SCHED_MATRIX, {bm, bn, bk, wm, wn, stages, wg, inflight}};
  return NULL;
}

void gpu_sched_format(const gpu_sched *s, char *out, size_t size) {
  const int *v = s->s;
  if (s->kind == GPU_SCHED_DW) {
    snprintf(out, size, "dw%d", v[0]);
    return;
  }
  snprintf(out, size, "%dx%dx%d:%dx%d:%d%s", v[0], v[1], v[2], v[3], v[4], v[5],
           !v[6] ? "" : v[6] == 2 ? ":ws0" : v[6] == 3 ? ":ws" : v[6] == 4 ? ":wsp" : v[7] < 0 ? ":wg" : v[7] ? ":wg1" : ":wg0");
}

/* ---- the tuning file ---------------------------------------------------- */

cov_status gpu_tdoc_open(const char *path, gpu_tdoc *d) {
  memset(d, 0, sizeof *d);
  d->file = path;
  size_t size = 0;
  COV_RETURN_IF_ERROR(common_read_file(path, (size_t)64 << 20, &d->text, &size));
  d->arena = cov_arena_create();
  if (!d->arena) return cov_error(COV_OUT_OF_MEMORY, GPU_LOC(path, NULL), "out of memory");
  common_jpos_build(&d->pos, d->text, size, d->arena);
  json_error_t jerr;
  d->root = json_loadb(d->text, size, JSON_REJECT_DUPLICATES, &jerr);
  if (d->root) return NULL;
  cov_loc loc = {.file = path, .line = jerr.line > 0 ? (unsigned)jerr.line : 1,
                 .col = jerr.column > 0 ? (unsigned)jerr.column : 1};
  loc.path = common_jpos_path_at(&d->pos, loc.line, loc.col);
  return cov_error(COV_PARSE_ERROR, &loc, "invalid JSON: %s", jerr.text);
}

void gpu_tdoc_close(gpu_tdoc *d) {
  json_decref(d->root);
  cov_arena_destroy(d->arena);
  free(d->text);
  memset(d, 0, sizeof *d);
}

cov_status gpu_tdoc_fail(const gpu_tdoc *d, const char *path, const char *fmt, ...) {
  cov_loc loc = {.file = d->file, .path = path};
  const cov_jpos_entry *e = common_jpos_find(&d->pos, path);
  if (e) loc.line = e->line, loc.col = e->col;
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(COV_INVALID_INPUT, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return st;
}

const char *gpu_tdoc_key(gpu_tdoc *d, const char *base, const char *key) {
  const char *p = common_jpath_key(d->arena, base, key);
  return p ? p : base;
}

const char *gpu_tdoc_index(gpu_tdoc *d, const char *base, size_t i) {
  const char *p = common_jpath_index(d->arena, base, i);
  return p ? p : base;
}

static int by_key(const void *a, const void *b) {
  return strcmp(((const gpu_tune_entry *)a)->key, ((const gpu_tune_entry *)b)->key);
}

static cov_status load_entries(gpu_tdoc *L, json_t *root, const char *target, gpu_tuning *t) {
  if (!json_is_object(root)) return gpu_tdoc_fail(L, "$", "a tuning file is a JSON object");
  json_t *v = json_object_get(root, "covenant_tuning");
  if (!json_is_integer(v) || json_integer_value(v) != 1)
    return gpu_tdoc_fail(L, v ? "$.covenant_tuning" : "$", "expected \"covenant_tuning\": 1 (the format version)");
  v = json_object_get(root, "target");
  if (!json_is_string(v)) return gpu_tdoc_fail(L, v ? "$.target" : "$", "expected \"target\": the target's name");
  if (strcmp(json_string_value(v), target))
    return gpu_tdoc_fail(L, "$.target", "the file tunes target '%s', not '%s'", json_string_value(v), target);
  snprintf(t->target, sizeof t->target, "%s", target);
  json_t *es = json_object_get(root, "entries");
  if (!json_is_array(es)) return gpu_tdoc_fail(L, es ? "$.entries" : "$", "expected \"entries\": an array");
  size_t n = json_array_size(es);
  if (n > GPU_TUNE_MAX_ENTRIES) return gpu_tdoc_fail(L, "$.entries", "%zu entries (at most %d)", n, GPU_TUNE_MAX_ENTRIES);
  t->e = calloc(n + 1, sizeof *t->e);
  if (!t->e) return cov_error(COV_OUT_OF_MEMORY, GPU_LOC(L->file, NULL), "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *x = json_array_get(es, i);
    const char *at = gpu_tdoc_index(L, "$.entries", i);
    if (!json_is_object(x)) return gpu_tdoc_fail(L, at, "an entry is an object {\"key\", \"schedule\"}");
    json_t *k = json_object_get(x, "key"), *s = json_object_get(x, "schedule");
    const char *kp = gpu_tdoc_key(L, at, "key"), *sp = gpu_tdoc_key(L, at, "schedule");
    if (!json_is_string(k) || json_string_length(k) >= GPU_TUNE_KEY_MAX)
      return gpu_tdoc_fail(L, k ? kp : at, "expected \"key\": a string under %d bytes", GPU_TUNE_KEY_MAX);
    if (strncmp(json_string_value(k), target, strlen(target)) || json_string_value(k)[strlen(target)] != ':')
      return gpu_tdoc_fail(L, kp, "key '%s' is not one of target %s", json_string_value(k), target);
    if (!json_is_string(s) || json_string_length(s) >= sizeof t->e[i].schedule)
      return gpu_tdoc_fail(L, s ? sp : at, "expected \"schedule\": BMxBNxBK:WMxWN:STAGES[:wgD] or dwP");
    cov_loc loc = {.file = L->file, .path = sp};
    const cov_jpos_entry *pe = common_jpos_find(&L->pos, sp);
    if (pe) loc.line = pe->line, loc.col = pe->col;
    COV_RETURN_IF_ERROR(gpu_sched_parse(json_string_value(s), &loc, &t->e[i].sched));
    /* the schedule's kind is the key's, checked here: a compile that asks
     * whether a layout plans must never see the file's error as a "no" */
    char kind[32];
    gpu_tune_key_kind(json_string_value(k), kind, sizeof kind);
    if ((t->e[i].sched.kind == GPU_SCHED_DW) != !strcmp(kind, "dwconv"))
      return gpu_tdoc_fail(L, sp, "schedule '%s' of key '%s': %s", json_string_value(s), json_string_value(k),
                           t->e[i].sched.kind == GPU_SCHED_DW ? "dwP is a depthwise kernel's schedule, the key a matrix kernel's"
                                                              : "a depthwise kernel's schedule is dwP");
    snprintf(t->e[i].key, sizeof t->e[i].key, "%s", json_string_value(k));
    t->e[i].index = (int)i, t->e[i].line = loc.line, t->e[i].col = loc.col;
    snprintf(t->e[i].schedule, sizeof t->e[i].schedule, "%s", json_string_value(s));
    for (size_t j = 0; j < i; j++)
      if (!strcmp(t->e[j].key, t->e[i].key))
        return gpu_tdoc_fail(L, kp, "key '%s' again (first at $.entries[%zu])", t->e[i].key, j);
    t->n++;
  }
  qsort(t->e, (size_t)t->n, sizeof *t->e, by_key);
  return NULL;
}

cov_status gpu_tuning_load(const char *path, const char *target, gpu_tuning **out) {
  *out = NULL;
  gpu_tdoc d;
  gpu_tuning *t = NULL;
  cov_status st = gpu_tdoc_open(path, &d);
  if (!st) t = calloc(1, sizeof *t);
  if (!st && !t) st = cov_error(COV_OUT_OF_MEMORY, GPU_LOC(path, NULL), "out of memory");
  if (!st) {
    snprintf(t->file, sizeof t->file, "%s", path);
    st = load_entries(&d, d.root, target, t);
  }
  gpu_tdoc_close(&d);
  if (st) {
    gpu_tuning_free(t);
    return st;
  }
  *out = t;
  return NULL;
}

void gpu_tuning_free(gpu_tuning *t) {
  if (!t) return;
  free(t->e);
  free(t);
}

const gpu_tune_entry *gpu_tuning_find(const gpu_tuning *t, const char *key) {
  if (!t || !t->n) return NULL;
  gpu_tune_entry k;
  snprintf(k.key, sizeof k.key, "%s", key);
  return bsearch(&k, t->e, (size_t)t->n, sizeof *t->e, by_key);
}

cov_status gpu_tuning_attach(gpu_target *t, const cov_gpu_options *opts) {
  if (!opts->tuning) return NULL;
  return gpu_tuning_load(opts->tuning, cov_acg_name(t->acg), &t->tuning);
}

void gpu_tune_note_model(const gpu_target *t, const gpu_model_plan *mp, FILE *notes) {
  if (!t->tuning || !notes) return;
  int n = 0;
  for (int i = 0; i < mp->n_steps; i++) {
    const gpu_mstep *s = &mp->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->kkind != GPU_KERNEL_MATRIX || s->pre) continue;
    char key[GPU_TUNE_KEY_MAX], kind[32];
    gpu_tune_key(&s->plan.prob, cov_acg_name(t->acg), key, sizeof key);
    const gpu_tune_entry *e = gpu_tuning_find(t->tuning, key);
    if (!e) continue;
    gpu_tune_key_kind(key, kind, sizeof kind);
    fprintf(notes, "note: %s (%s, %s): schedule %s from the tuning file %s\n", s->kernel, s->label, kind, e->schedule,
            t->tuning->file);
    n++;
  }
  fprintf(notes, "note: %d kernel%s from the tuning file %s, the others the compiler's pick\n", n, n == 1 ? "" : "s",
          t->tuning->file);
}

/* ---- the hook ----------------------------------------------------------- */

cov_status gpu_plan_scheduled(const gpu_target *t, const gpu_problem *q, const gpu_sched *s, gpu_plan *plan) {
  const int *v = s->s;
  if ((s->kind == GPU_SCHED_DW) != gpu_is_dw(q))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(q), "a %s schedule for a %s kernel",
                     s->kind == GPU_SCHED_DW ? "depthwise" : "matrix", gpu_is_dw(q) ? "depthwise" : "matrix");
  if (s->kind == GPU_SCHED_DW) {
    gpu_plan checked;
    COV_RETURN_IF_ERROR(gpu_problem_check(q, &checked));
    return gpu_plan_dw(&checked, &t->caps, v[0], plan);
  }
  gpu_fixed_tile f = {.bm = v[0], .bn = v[1], .bk = v[2], .wm = v[3], .wn = v[4], .stages = v[5], .wgmma = v[6] != 0,
                      .inflight = v[7], .tma = v[6] >= 2, .ws_regs = v[6] >= 3 ? GPU_TMA_CONSUMER_REGS : 0,
                      .pingpong = v[6] == 4};
  return gpu_plan_fixed(q, &t->caps, (const int (*)[3])t->shapes, t->n_shapes, &f, plan);
}

cov_status gpu_plan_pick(const gpu_target *t, const gpu_problem *q, gpu_plan *plan, const gpu_tune_entry **tuned) {
  *tuned = NULL;
  if (t->tuning && q->kind != GPU_OP_MAXPOOL) {
    char key[GPU_TUNE_KEY_MAX];
    gpu_tune_key(q, cov_acg_name(t->acg), key, sizeof key);
    const gpu_tune_entry *e = gpu_tuning_find(t->tuning, key);
    if (e) {
      *tuned = e;
      cov_status st = gpu_plan_scheduled(t, q, &e->sched, plan);
      if (!st) return NULL;
      /* the file's error, located at the entry's schedule */
      char path[64];
      snprintf(path, sizeof path, "$.entries[%d].schedule", e->index);
      cov_loc loc = {t->tuning->file, e->line, e->col, path};
      cov_status bad = cov_error(COV_INVALID_INPUT, &loc, "schedule %s of key '%s'%s%s%s does not plan: %s", e->schedule,
                                 key, q->node[0] ? " (" : "", q->node, q->node[0] ? ")" : "", cov_status_message(st));
      cov_status_free(st);
      return bad;
    }
  }
  /* the mapper's GPU search: its cheapest schedule that the lowering takes */
  return gpu_plan_map(q, t->acg, &t->caps, (const int (*)[3])t->shapes, t->n_shapes, plan, NULL);
}

/* ---- candidates --------------------------------------------------------- */

/* The depthwise kernel's candidates: map_gpu_dw_plan's ranking of the
 * pixels per thread, each checked by the lowering's plan. */
static cov_status dw_candidates(const gpu_target *t, const gpu_problem *q, int top, gpu_tune_cand *out, int *n) {
  gpu_plan base, p;
  COV_RETURN_IF_ERROR(gpu_problem_check(q, &base));
  map_gpu_dw_problem dp = {q->cn, q->cc, q->ch, q->cw, base.oh, base.ow, (int)q->cr, (int)q->cs, (int)q->stride,
                           (int)cov_dtype_size(q->in_dtype)};
  map_gpu_dw_sched c[MAP_GPU_DW_MAX];
  int m = 0;
  COV_RETURN_IF_ERROR(map_gpu_dw_plan(t->acg, &dp, q->node, c, &m));
  for (int i = 0; i < m && *n < top; i++) {
    cov_status e = gpu_plan_dw(&base, &t->caps, c[i].pw, &p);
    if (e) {
      cov_status_free(e);
      continue;
    }
    out[*n] = (gpu_tune_cand){{GPU_SCHED_DW, {c[i].pw}}, i, c[i].cycles};
    (*n)++;
  }
  return NULL;
}

cov_status gpu_tune_candidates(const gpu_target *t, const gpu_problem *q, int top, gpu_tune_cand *out, int *n) {
  *n = 0;
  if (q->kind == GPU_OP_MAXPOOL)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "a pool has no schedule to search");
  if (gpu_is_dw(q)) return dw_candidates(t, q, top, out, n);
  map_gpu_result *r = malloc(sizeof *r);
  if (!r) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  gpu_plan chosen, base;
  cov_status st = gpu_plan_map(q, t->acg, &t->caps, (const int (*)[3])t->shapes, t->n_shapes, &chosen, r);
  if (!st) st = gpu_problem_check(q, &base);
  base.warp_size = t->caps.warp_size;
  for (int i = 0; !st && i < r->n && *n < top; i++) {
    const map_gpu_sched *c = &r->c[i];
    gpu_plan p = base;
    cov_status e = gpu_plan_from_candidate(&p, c, &t->caps);
    /* a hand-fixed schedule takes channels-last wherever it fits: the NCHW
     * alternative of a layer that fits it is not expressible */
    gpu_plan h = base;
    if (!e) h = p, h.keep_nchw = false, e = gpu_plan_derive(&h, &t->caps);
    if (!e && h.nhwc != p.nhwc) e = cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(q), "layout");
    if (e) {
      cov_status_free(e);
      continue;
    }
    /* [6]: 1 warpgroup MMA, 2 / 3 the tma kernel without / with setmaxnreg */
    int wg = c->tma ? (c->pingpong ? 4 : p.ws_regs ? 3 : 2) : c->warpgroup;
    gpu_sched s = {GPU_SCHED_MATRIX, {c->bm, c->bn, c->bk, c->wm, c->wn, c->stages, wg, c->warpgroup ? p.wg_inflight : -1}};
    /* a hand-fixed schedule does not name the matrix instruction: the next
     * best with another instruction compiles to the same kernel */
    if (*n && !memcmp(&out[*n - 1].sched, &s, sizeof s)) continue;
    out[*n] = (gpu_tune_cand){s, i, c->cycles};
    (*n)++;
  }
  free(r);
  return st;
}

/* backends/npu-sim/npu_model.c: a whole ONNX model on the simulated NPU.
 *
 * Through the frontend's group hook (cov_model_run_groups), each compute
 * layer group is offered whole: its chain of codelet calls becomes one
 * mapper layer (the main loop nest, the later calls an epilogue on the
 * output tile), mapped onto the ACG, compiled to one NPU program and run in
 * the simulator, so the intermediates between the calls never go to DRAM.
 * A group that cannot be fused that way (not a chain the mapper takes, an
 * epilogue it cannot lower, no schedule, a code generator limit) runs call
 * by call through the per-call hook, each call its own program, and its rows
 * say why the group was not fused; a call the NPU path cannot take either
 * runs on the CPU reference interpreter, reported with the reason. Layout
 * operations run in the frontend. For co-scheduled and pipelined runs
 * (npu_corun.c, npu_pipe.c) a run also records each program with the DRAM
 * image it started on, and maps each layer on other ACGs for the mapper's
 * estimates (npu_model_rec).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"
#include "backends/npu-sim/npu_report.h"
#include "covenant/tensor.h"
#include "mapper/map_ir.h"
#include "covenant/mapper.h"
#include "covenant/model.h"

#define MAX_LAYER_INPUTS 8

typedef struct hook_ctx {
  const cov_acg *acg;
  cov_npu_report *rep;
  const cov_npu_run_options *opt;
  npu_model_rec *rec; /* NULL, or what the co-scheduler asks for */
  /* The group being run call by call: why it was not fused, and whether
   * its one call already failed as a layer (then the CPU runs it). */
  int group;
  char why[256];
  bool single_failed;
  const cov_model *model;
  int cpu_group; /* the last group whose MACs a CPU row counted whole */
} hook_ctx;

/* The MACs of a call the CPU runs: its layer's, else (no layer formed) its
 * whole group's, once per group. */
static int64_t cpu_call_macs(hook_ctx *h, int group, int64_t layer_macs) {
  if (layer_macs >= 0) return layer_macs;
  if (group == h->cpu_group) return 0;
  /* a call inside a Loop's or If's body names a group of its subgraph,
   * which the model's group table does not have: counted per layer only */
  cov_model_group_info gi;
  cov_status st = cov_model_group_get_info(h->model, (size_t)group, &gi);
  if (st) {
    cov_status_free(st);
    return 0;
  }
  h->cpu_group = group;
  return gi.macs > 0 ? gi.macs : 0;
}

/* The model's MACs: its groups' sum, -1 where one is unknown. */
static int64_t model_macs(const cov_model *m) {
  int64_t sum = 0;
  for (size_t i = 0; i < cov_model_num_groups(m); i++) {
    cov_model_group_info gi;
    cov_status st = cov_model_group_get_info(m, i, &gi);
    if (st || gi.macs < 0) {
      cov_status_free(st);
      return -1;
    }
    sum += gi.macs;
  }
  return sum;
}

/* First line of a status message, cut to fit (a summary for the table). */
static void first_line(char *buf, size_t n, const char *prefix, cov_status st, const char *node) {
  char msg[512];
  cov_status_format(st, msg, sizeof msg);
  char *nl = strchr(msg, '\n');
  if (nl) *nl = 0;
  /* The table is about this model: drop the "FILE:LINE: error: " location
   * (the node and codelet are named in the message itself). */
  const char *body = strstr(msg, "error: ");
  body = body ? body + 7 : msg;
  /* and the node or layer the location names, where the row or the
   * message names it already */
  cov_loc at = cov_status_loc(st);
  size_t pl = at.path ? strlen(at.path) : 0;
  if (pl && (strstr(cov_status_message(st), at.path) || (node && !strcmp(node, at.path))) &&
      !strncmp(body, at.path, pl) && !strncmp(body + pl, ": ", 2))
    body += pl + 2;
  /* Cut to fit by hand: a summary, and snprintf's truncation is a warning. */
  size_t k = 0;
  for (const char *p = prefix; *p && k + 1 < n; p++) buf[k++] = *p;
  for (const char *p = body; *p && k + 1 < n; p++) buf[k++] = *p;
  if (n) buf[k] = '\0';
}

/* An integer layer's result read back in the dtype the model expects: an
 * integer array leaves it in i32 already; a float array (the f16 array of
 * an ACG without an integer mac, taken only where that is exact) leaves it
 * in f32, every value an integer below 2^24, converted here. */
static cov_status to_dtype(cov_tensor *t, cov_dtype want, const char *node) {
  if (t->dtype == want) return NULL;
  if (t->dtype != COV_F32 || want != COV_I32)
    return cov_error(COV_INTERNAL, COV_AT(NULL, node), "the program's result is %s, the model expects %s",
                     cov_dtype_name(t->dtype), cov_dtype_name(want));
  int64_t n = cov_tensor_numel(t);
  float *f = t->data;
  int32_t *o = t->data; /* same size: converted in place */
  for (int64_t i = 0; i < n; i++) {
    float v = f[i];
    if (!(v == (float)(int32_t)v) || v >= 16777216.0f || v <= -16777216.0f)
      return cov_error(COV_INTERNAL, COV_AT(NULL, node),
                       "element %lld of an integer layer's f32 result (%g) is not an exact "
                       "integer",
                       (long long)i, (double)v);
    o[i] = (int32_t)v;
  }
  t->dtype = COV_I32;
  return NULL;
}

/* Monotonic seconds, for the report's compile and simulation wall times. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The reference interpreter on the layer's inputs rounded to the dtype
 * the schedule keeps them in on chip (the bound capability's multiplicand
 * dtype, f16 or bf16, where it narrows): the same operands as the
 * program's, accumulated in f32 in the codelet's order; the program's
 * output against it into row (narrow_checked, narrow_err). */
static cov_status check_reference(const cov_layer *layer, const cov_schedule *sched, const cov_tensor *in,
                                  int n, const char *label, const cov_tensor *out, npu_row *row) {
  cov_status fatal = NULL;
  cov_tensor ref = {0}, rin[MAX_LAYER_INPUTS];
  int nr = 0;
  for (; nr < n && !fatal; nr++) {
    rin[nr] = in[nr];
    cov_dtype dt = cov_schedule_input_dtype(sched, nr);
    if (in[nr].dtype != COV_F32 || !cov_dtype_is_float(dt) ||
        cov_dtype_precision_bits(dt) >= cov_dtype_precision_bits(COV_F32))
      continue;
    row->narrow_dtypes |= 1u << dt;
    rin[nr].data = NULL;
    fatal = cov_tensor_alloc(&rin[nr], COV_F32, in[nr].rank, in[nr].shape);
    if (fatal) break;
    const float *src = in[nr].data;
    float *dst = rin[nr].data;
    for (int64_t i = 0; i < cov_tensor_numel(&rin[nr]); i++) dst[i] = cov_f32_round_to(dt, src[i]);
  }
  if (!fatal) fatal = cov_layer_reference(layer, rin, &ref);
  for (int i = 0; i < nr && i < n; i++)
    if (rin[i].data != in[i].data) cov_tensor_release(&rin[i]);
  if (!fatal) {
    int64_t k = cov_tensor_numel(&ref);
    if (out->dtype != COV_F32 || ref.dtype != COV_F32) {
      /* integer (quantized) programs round nothing: the run's own check
       * compares their outputs bit for bit */
    } else if (k != cov_tensor_numel(out)) {
      fatal = cov_error(COV_INTERNAL, COV_AT(NULL, label), "%s: the program's output has %lld elements, the "
                        "schedule's %lld", label, (long long)cov_tensor_numel(out), (long long)k);
    } else {
      const float *a = out->data, *b = ref.data;
      double md = 0, mr = 0;
      for (int64_t i = 0; i < k; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= md)) md = d; /* NaN counts as a difference */
        if (fabs((double)b[i]) > mr) mr = fabs((double)b[i]);
      }
      row->narrow_checked = true;
      row->narrow_err = md / (mr > 1e-30 ? mr : 1e-30);
    }
  }
  cov_tensor_release(&ref);
  return fatal;
}

/* The mapper's estimate of the layer on each of rec's other ACGs. */
static cov_status estimate_on(npu_model_rec *rec, const cov_layer *layer) {
  for (int i = 0; rec && i < rec->n_est; i++) {
    if (rec->est_cycles[i] < 0) continue;
    cov_schedule *s = NULL;
    cov_status st = cov_map(layer, rec->est[i], NULL, &s);
    if (cov_status_code(st) == COV_OUT_OF_MEMORY) return st;
    rec->est_cycles[i] = st ? -1 : rec->est_cycles[i] + cov_schedule_cycles(s);
    cov_status_free(st);
    cov_schedule_free(s);
  }
  return NULL;
}

/* The program with the DRAM image it starts on, onto rec's tape (which
 * takes *prog). */
static cov_status tape_push(npu_model_rec *rec, cov_npu_program **prog, const cov_npu_sim *sim) {
  npu_tape *t = rec ? rec->tape : NULL;
  if (!t) return NULL;
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    npu_tape_entry *e = realloc(t->e, cap * sizeof *e);
    if (!e) return cov_error(COV_OUT_OF_MEMORY, NULL, "the co-scheduler's record of programs");
    t->e = e;
    t->cap = cap;
  }
  npu_tape_entry *e = &t->e[t->n];
  *e = (npu_tape_entry){.prog = *prog};
  e->dram = malloc(sim->dram_bytes ? (size_t)sim->dram_bytes : 1);
  if (!e->dram)
    return cov_error(COV_OUT_OF_MEMORY, NULL, "a DRAM image of %llu bytes", (unsigned long long)sim->dram_bytes);
  memcpy(e->dram, sim->dram, (size_t)sim->dram_bytes);
  *prog = NULL;
  t->n++;
  return NULL;
}

/* Maps, compiles and simulates one layer; its inputs in[0..n) in layer
 * order (cov_layer_input), its result into *out. A status in *declined is
 * the NPU path not taking the layer (the caller falls back); the returned
 * status is a failure of the run itself. */
static cov_status run_layer(hook_ctx *h, const cov_layer *layer, const cov_tensor *in, int n,
                            const char *label, cov_tensor *out, npu_row *row,
                            cov_status *declined) {
  *declined = NULL;
  cov_schedule *sched = NULL;
  cov_npu_program *prog = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  double t0 = now_s();
  cov_status st = cov_map(layer, h->acg, NULL, &sched);
  if (!st) st = cov_npu_select_by_simulation(sched, h->acg, COV_NPU_SELECT_MAX_OPS, NULL);
  if (!st) st = cov_npu_compile(sched, &prog);
  double t1 = now_s();
  npu_report_add_time(h->rep, t1 - t0, 0);
  cov_status fatal = NULL;
  if (st) {
    *declined = st;
    goto done;
  }
  if ((fatal = cov_npu_sim_create(h->acg, &sim))) goto done;
  if ((fatal = cov_npu_sim_load(sim, prog))) goto done;
  for (int i = 0; i < n && !fatal; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "in%d", i);
    fatal = cov_npu_sim_write(sim, nm, &in[i]);
  }
  if (!fatal) fatal = estimate_on(h->rec, layer);
  npu_tape_entry *taped = NULL; /* this program's record, where the run keeps one */
  if (!fatal && h->rec && h->rec->tape && !(fatal = tape_push(h->rec, &prog, sim)))
    taped = &h->rec->tape->e[h->rec->tape->n - 1];
  if (fatal) goto done;
  if (h->opt->trace) fatal = cov_npu_sim_run_traced(sim, h->opt->trace, label, &stats);
  else fatal = cov_npu_sim_run(sim, NULL, &stats);
  if (!fatal && taped) {
    taped->digest = npu_fnv1a(sim->dram, sim->dram_bytes);
    taped->cycles = cov_npu_stats_cycles(stats);
  }
  if (!fatal) fatal = cov_npu_sim_read(sim, "out", out);
  npu_report_add_time(h->rep, 0, now_s() - t1);
  if (fatal) goto done;
  row->cycles = cov_npu_stats_cycles(stats);
  row->macs = cov_npu_stats_macs(stats);
  row->util_array = cov_npu_stats_array_utilization(stats);
  row->predicted = cov_schedule_cycles(sched);
  {
    cov_npu_energy en = cov_npu_stats_energy(stats);
    row->energy_pj = en.known ? en.total_pj : -1;
    row->energy_est_pj = cov_schedule_energy_pj(sched);
  }
  if ((fatal = check_reference(layer, sched, in, n, label, out, row))) goto done;
  const cov_acg *g = h->acg;
  for (int s = 0; s < g->n_storage; s++) {
    uint64_t b = cov_npu_stats_storage_bytes(stats, g->storage[s].name);
    if (g->storage[s].kind == ACG_DRAM) row->dram_bytes += b;
    else row->onchip_bytes += b;
  }
  for (int c = 0; c < g->n_compute; c++)
    if (g->compute[c].kind == ACG_SIMD) {
      double u = cov_npu_stats_unit_utilization(stats, g->compute[c].name);
      if (u > row->util_simd) row->util_simd = u;
    }
done:
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(prog);
  cov_schedule_free(sched);
  return fatal;
}

/* The tensors behind a group layer's inputs: a group input (seen with the
 * shape the call sees) or a constant. */
static cov_status group_inputs(const cov_model_group_offer *o, const cov_layer *layer,
                               cov_tensor *in, int *n) {
  *n = cov_layer_num_inputs(layer);
  if (*n > MAX_LAYER_INPUTS)
    return cov_error(COV_UNSUPPORTED, COV_AT(NULL, cov_model_group_name(o->desc)), "layer group %d: %d layer inputs (at most %d)", o->group,
                     *n, MAX_LAYER_INPUTS);
  for (int i = 0; i < *n; i++) {
    const cov_model_arg *a;
    COV_RETURN_IF_ERROR(cov_layer_model_input(o->desc, i, &a));
    /* The layer's own view (which may reshape a constant) over the data. */
    COV_RETURN_IF_ERROR(cov_layer_input(layer, i, &in[i]));
    in[i].data = a->kind == COV_MODEL_ARG_EXTERNAL ? o->in[a->input].data : a->t.data;
    if (cov_tensor_numel(&in[i]) != cov_tensor_numel(&a->t))
      return cov_error(COV_INTERNAL, COV_AT(NULL, cov_model_group_name(o->desc)), "layer group %d: layer input %d has %lld elements, "
                       "the group's argument %lld", o->group, i,
                       (long long)cov_tensor_numel(&in[i]), (long long)cov_tensor_numel(&a->t));
  }
  return NULL;
}

/* A group that did not fuse whole (why: `declined`) as two programs: its
 * first n-1 calls fused, then its last call, when that call reads only the
 * previous result. *done is 0 when either part is declined (the caller then
 * runs the group call by call); the returned status is a failed run. */
static cov_status run_split(hook_ctx *h, const cov_model_group_offer *o, cov_tensor *out,
                            cov_status declined, int *done) {
  *done = 0;
  size_t nc = cov_model_group_num_calls(o->desc);
  if (nc < 2) return NULL;
  const cov_model_group_call *last = cov_model_group_call_at(o->desc, nc - 1);
  if (last->n_args != 1 || last->args[0].kind != COV_MODEL_ARG_PREV || last->out.dtype != COV_F32)
    return NULL;
  cov_layer *pre = NULL, *post = NULL;
  cov_tensor in[MAX_LAYER_INPUTS], mid = {0};
  int n_in = 0;
  cov_status dec = cov_layer_from_model_group_prefix(o->desc, nc - 1, &pre);
  if (!dec) dec = group_inputs(o, pre, in, &n_in);
  if (!dec) dec = cov_layer_from_call(last->codelet, last->attrs, last->n_attrs, &last->args[0].t, 1, &post);
  npu_row rows[2] = {{.kind = NPU_ROW_CALL, .group = o->group}, {.kind = NPU_ROW_CALL, .group = o->group}};
  char why[200];
  first_line(why, sizeof why, "", declined, cov_model_group_name(o->desc));
  for (size_t c = 0; c + 1 < nc; c++) {
    size_t k = strlen(rows[0].codelet);
    snprintf(rows[0].codelet + k, sizeof rows[0].codelet - k, "%s%s", c ? "+" : "",
             cov_model_group_call_at(o->desc, c)->codelet);
  }
  snprintf(rows[0].node, sizeof rows[0].node, "%s", cov_model_group_name(o->desc));
  snprintf(rows[1].node, sizeof rows[1].node, "%s", last->node);
  snprintf(rows[1].codelet, sizeof rows[1].codelet, "%s", last->codelet);
  cov_status fatal = NULL;
  char label[160];
  snprintf(label, sizeof label, "group %d %s (%s)", o->group, rows[0].node, rows[0].codelet);
  if (!dec) fatal = run_layer(h, pre, in, n_in, label, &mid, &rows[0], &dec);
  if (!dec && !fatal) {
    /* the last call sees the result through its own view */
    if (cov_tensor_numel(&mid) != cov_tensor_numel(&last->args[0].t)) {
      fatal = cov_error(COV_INTERNAL, COV_AT(NULL, rows[0].node), "the fused part wrote %lld elements, the last call reads %lld",
                        (long long)cov_tensor_numel(&mid), (long long)cov_tensor_numel(&last->args[0].t));
    } else {
      mid.rank = last->args[0].t.rank;
      memcpy(mid.shape, last->args[0].t.shape, sizeof mid.shape);
      snprintf(label, sizeof label, "%s (%s)", last->node, last->codelet);
      fatal = run_layer(h, post, &mid, 1, label, out, &rows[1], &dec);
    }
  }
  cov_tensor_release(&mid);
  cov_layer_free(pre);
  cov_layer_free(post);
  if (fatal || dec) {
    cov_status_free(dec);
    return fatal;
  }
  for (int r = 0; r < 2; r++) {
    size_t k = (size_t)snprintf(rows[r].where, sizeof rows[r].where, "npu, %s (group in 2 programs: ",
                                r ? "the last call alone" : "fused but the last call");
    for (const char *q = why; *q && k + 2 < sizeof rows[r].where; q++) rows[r].where[k++] = *q;
    if (k + 2 <= sizeof rows[r].where) {
      rows[r].where[k++] = ')';
      rows[r].where[k] = '\0';
    }
    COV_RETURN_IF_ERROR(npu_report_add(h->rep, &rows[r]));
  }
  *done = 1;
  return NULL;
}

static cov_status group_hook(void *user, const cov_model_group_offer *o, cov_tensor *out,
                             size_t n_out, int *handled) {
  hook_ctx *h = user;
  *handled = 0;
  h->group = o->group;
  h->single_failed = false;
  if (h->opt->per_call) {
    snprintf(h->why, sizeof h->why, "npu, call by call (asked for)");
    return NULL;
  }
  if (!o->desc) {
    const char *why = strstr(o->why_not, "error: "); /* the location, as in first_line */
    snprintf(h->why, sizeof h->why, "npu, call by call (group not fused: %s)",
             why ? why + 7 : o->why_not);
    return NULL;
  }
  npu_row row = {.kind = NPU_ROW_GROUP, .group = o->group};
  snprintf(row.node, sizeof row.node, "%s", cov_model_group_name(o->desc));
  size_t nc = cov_model_group_num_calls(o->desc);
  for (size_t c = 0; c < nc; c++) {
    size_t k = strlen(row.codelet);
    snprintf(row.codelet + k, sizeof row.codelet - k, "%s%s", c ? "+" : "",
             cov_model_group_call_at(o->desc, c)->codelet);
  }
  cov_layer *layer = NULL;
  cov_tensor in[MAX_LAYER_INPUTS];
  int n_in = 0;
  cov_status declined = n_out == 1 ? cov_layer_from_model_group(o->desc, &layer)
                                   : cov_error(COV_UNSUPPORTED, COV_AT(NULL, o->desc ? cov_model_group_name(o->desc) : NULL), "%zu results", n_out);
  if (!declined) declined = group_inputs(o, layer, in, &n_in);
  cov_status fatal = NULL;
  char label[160];
  snprintf(label, sizeof label, "group %d %s (%s)", o->group, row.node, row.codelet);
  if (!declined) fatal = run_layer(h, layer, in, n_in, label, &out[0], &row, &declined);
  cov_layer_free(layer);
  /* a group the NPU cannot take runs another way; one that ran out of
   * memory fails the run instead (the same result or an error, never
   * another path chosen by memory pressure) */
  if (!fatal && cov_status_code(declined) == COV_OUT_OF_MEMORY) fatal = declined, declined = NULL;
  if (fatal) return cov_status_annotate(fatal, "layer group %d (%s) on the NPU: ", o->group, row.node);
  if (declined && n_out == 1) {
    /* All but the last call fused, the last (a pool the epilogue does not
     * take) a program of its own: the intermediate goes through DRAM once,
     * not after every call. */
    int done = 0;
    fatal = run_split(h, o, &out[0], declined, &done);
    if (fatal) return cov_status_annotate(fatal, "layer group %d (%s) on the NPU: ", o->group, row.node);
    if (done) {
      cov_status_free(declined);
      cov_tensor want;
      cov_model_group_output(o->desc, &want);
      out[0].rank = want.rank;
      memcpy(out[0].shape, want.shape, sizeof want.shape);
      *handled = 1;
      return NULL;
    }
  }
  if (declined) {
    const char *gname = o->desc ? cov_model_group_name(o->desc) : NULL;
    first_line(h->why, sizeof h->why, "npu, call by call (group not fused: ", declined, gname);
    size_t k = strlen(h->why);
    if (k + 1 < sizeof h->why) strcpy(h->why + k, ")");
    h->single_failed = nc == 1;
    if (h->single_failed) first_line(h->why, sizeof h->why, "cpu: ", declined, gname);
    cov_status_free(declined);
    return NULL;
  }
  /* The program writes the layer's output shape; the group's value may
   * see it reshaped (a 1-D conv's [N, C, 1, W] is [N, C, W]). */
  cov_tensor want;
  cov_model_group_output(o->desc, &want);
  if (cov_tensor_numel(&out[0]) != cov_tensor_numel(&want)) {
    cov_tensor_release(&out[0]);
    return cov_error(COV_INTERNAL, COV_AT(NULL, row.node), "layer group %d (%s): the program wrote %lld elements, "
                     "the group's result has %lld", o->group, row.node,
                     (long long)cov_tensor_numel(&out[0]), (long long)cov_tensor_numel(&want));
  }
  out[0].rank = want.rank;
  memcpy(out[0].shape, want.shape, sizeof want.shape);
  cov_status cv = to_dtype(&out[0], want.dtype, row.node);
  if (cv) {
    cov_tensor_release(&out[0]);
    return cov_status_annotate(cv, "layer group %d (%s): ", o->group, row.node);
  }
  snprintf(row.where, sizeof row.where, "npu, fused");
  *handled = 1;
  return npu_report_add(h->rep, &row);
}

static cov_status call_hook(void *user, const cov_model_call *call, cov_tensor *out, size_t n_out,
                            int *handled) {
  hook_ctx *h = user;
  *handled = 0;
  npu_row row = {.kind = NPU_ROW_CPU, .group = call->group};
  snprintf(row.node, sizeof row.node, "%s", call->node);
  snprintf(row.codelet, sizeof row.codelet, "%s", call->codelet);
  char label[160];
  snprintf(label, sizeof label, "%s (%s)", call->node, call->codelet);
  if (call->group == h->group && h->single_failed) {
    /* The group was this one call, and it did not go as a layer. */
    snprintf(row.where, sizeof row.where, "%s", h->why);
    row.cpu_macs = cpu_call_macs(h, call->group, -1);
    if (h->opt->trace) cov_npu_trace_note(h->opt->trace, label);
    return npu_report_add(h->rep, &row);
  }
  bool ok = n_out == 1 && call->n_in <= MAX_LAYER_INPUTS;
  /* f32 calls, and integer ones (i8 multiplicands, i32 accumulators): an
   * integer layer's multiply-accumulates bind to an integer mac, or to a
   * float one only where the mapper finds that exact */
  /* the integer calls whose result is i32: an accumulator-typed codelet
   * (conv2d_acc, matmul_acc) on i8, or any codelet on i32 (bias_add) */
  size_t cl = strlen(call->codelet);
  bool acc_codelet = cl > 4 && strcmp(call->codelet + cl - 4, "_acc") == 0;
  bool integer = ok && call->n_in > 0 &&
                 ((acc_codelet && call->in[0].dtype == COV_I8) || call->in[0].dtype == COV_I32);
  for (size_t i = 0; ok && i < call->n_in; i++) {
    ok = integer ? (acc_codelet ? call->in[i].dtype == COV_I8 : call->in[i].dtype == COV_I32)
                 : call->in[i].dtype == COV_F32;
  }
  cov_layer *layer = NULL;
  cov_status declined = ok ? cov_layer_from_call(call->codelet, call->attrs, call->n_attrs,
                                                 call->in, call->n_in, &layer)
                           : cov_error(COV_UNSUPPORTED, COV_AT(NULL, call->node),
                                       "not a single-output call on f32, or on i8/i32 integers");
  cov_status fatal = NULL;
  if (!declined)
    fatal = run_layer(h, layer, call->in, (int)call->n_in, label, &out[0], &row, &declined);
  if (!declined && !fatal && integer) {
    fatal = to_dtype(&out[0], COV_I32, row.node);
    if (fatal) cov_tensor_release(&out[0]);
  }
  int64_t layer_macs = layer ? cov_layer_macs(layer) : -1;
  cov_layer_free(layer);
  if (fatal)
    return cov_status_annotate(fatal, "node %s (%s) on the NPU: ", call->node, call->codelet);
  if (declined) { /* the CPU runs this call, reported */
    row.cpu_macs = cpu_call_macs(h, call->group, layer_macs);
    first_line(row.where, sizeof row.where, "cpu: ", declined, call->node);
    cov_status_free(declined);
    if (h->opt->trace) cov_npu_trace_note(h->opt->trace, label);
    return npu_report_add(h->rep, &row);
  }
  *handled = 1;
  row.kind = NPU_ROW_CALL;
  snprintf(row.where, sizeof row.where, "%s",
           call->group == h->group && h->why[0] ? h->why : "npu, call by call");
  return npu_report_add(h->rep, &row);
}

void npu_tape_clear(npu_tape *t) {
  for (size_t i = 0; t && i < t->n; i++) {
    cov_npu_program_free(t->e[i].prog);
    free(t->e[i].dram);
  }
  if (t) free(t->e), *t = (npu_tape){0};
}

uint64_t npu_fnv1a(const uint8_t *p, uint64_t n) {
  uint64_t h = UINT64_C(1469598103934665603);
  for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(1099511628211);
  return h;
}

cov_status cov_npu_run_model_with(const cov_model *m, const cov_acg *acg,
                                  const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                  size_t n_outputs, const cov_npu_run_options *opts,
                                  cov_npu_report **out_report) {
  return npu_run_model_rec(m, acg, inputs, n_inputs, outputs, n_outputs, opts, NULL, out_report);
}

cov_status npu_run_model_rec(const cov_model *m, const cov_acg *acg, const cov_tensor *inputs, size_t n_inputs,
                             cov_tensor *outputs, size_t n_outputs, const cov_npu_run_options *opts,
                             npu_model_rec *rec, cov_npu_report **out_report) {
  *out_report = NULL;
  npu_target t;
  COV_RETURN_IF_ERROR(npu_target_init(acg, &t));
  cov_npu_report *rep = NULL;
  COV_RETURN_IF_ERROR(npu_report_create(acg->clock_mhz, &rep));
  cov_npu_run_options defaults = {0};
  hook_ctx h = {.acg = acg, .rep = rep, .opt = opts ? opts : &defaults, .group = -1, .rec = rec, .model = m,
                .cpu_group = -1};
  npu_report_set_model_macs(rep, model_macs(m));
  cov_status st =
      cov_model_run_groups(m, inputs, n_inputs, outputs, n_outputs, group_hook, call_hook, &h);
  if (st) {
    cov_npu_report_free(rep);
    return st;
  }
  *out_report = rep;
  return NULL;
}

cov_status cov_npu_run_model(const cov_model *m, const cov_acg *acg, const cov_tensor *inputs,
                             size_t n_inputs, cov_tensor *outputs, size_t n_outputs,
                             cov_npu_report **out_report) {
  return cov_npu_run_model_with(m, acg, inputs, n_inputs, outputs, n_outputs, NULL, out_report);
}

/* backends/gpu/gpu_mcapture.c: a model's compute groups and the data flow
 * between them, read through the frontend's public group hook only.
 *
 * The model runs four times on the CPU with every describable compute
 * group handled here: its description is recorded (pass 0), and in place of
 * its result it gets 32-bit patterns — the buffer id in pass 0, the
 * element's index in pass 1, the index with bit 30 flipped in pass 2, a
 * hash of (id, index) in pass 3 — as do the model's inputs. Layout
 * operations run in the frontend and copy elements bit for bit (memcpy), so
 * each group input, and each model output, arrives as (id, index) pairs:
 * which element of which buffer every element is. A layout operation that
 * changed values instead (a Cast f32 -> f16 -> f32 maps every id and index
 * to 0 and the flipped index to 0x40000000, which reads as a consistent
 * "element 0 of buffer 0") would decode as a wrong copy, silently; so the
 * frontend's list of value-changing layout groups is refused, naming the
 * node (gpu_capture_altering), and every decoded pair must reproduce pass 3's hash bit for
 * bit: the hash is a normal float with a fraction and its lowest mantissa
 * bit set, which no narrowing or integer cast, rounding or selection by
 * value keeps. Those pairs are compressed into runs (contiguous in both); a
 * single run covering a whole buffer is the buffer itself. Pass 2 tells the
 * rest apart: an element equal in all three passes is a constant a layout
 * operation mixed in (ViT's class token, concatenated to the patches), kept
 * as a constant buffer; one that is neither was computed outside a
 * described group. Groups the frontend cannot describe run in the frontend
 * on the patterns: where they only move elements (a nearest Resize) their
 * results decode as copies like any layout operation's, and where they
 * compute, whatever reads them fails to decode and says so.
 *
 * Group results of dtype i64, i32, i8, u8 and bool are buffers of their
 * own: i32 carries the 32-bit patterns, i64 the patterns with a check word
 * in the high half; a byte (bool, or a quantized group's i8 / u8) cannot
 * hold a pattern, so where some group's result is one every pass runs the
 * model CAP_LANES times, a byte element holding 7 bits of its pattern per
 * run with the top bit set (a marker no bool the frontend computes from
 * shapes has), and byte group inputs are decoded from the words their
 * lanes assemble; rearranged (a Concat, Transpose or Reshape of 8-bit
 * values) they decode as runs like any other dtype's, and the model
 * compiler moves their bytes as they are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_plan.h"
#include "common/grow.h"

static char *dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* A run is GPU_CAP_PASSES word passes; where bool values carry patterns
 * (cap_lane_bits below), each word pass is CAP_LANES runs of the model,
 * one per 7-bit lane of the pattern (ceil(32 / 7) = 5). */
enum { CAP_LANES = 5, CAP_LANE_BITS = 7 };

typedef struct cap_ctx {
  gpu_capture *c;
  int pass; /* the word pass: 0 ids, 1 indices, 2 flipped indices, 3 hashes */
  int lane; /* the byte lane of this run of the model (0 where there are no bool values) */
  int n_lanes;
  int gi; /* groups offered so far this run */
  cov_status err;
} cap_ctx;

/* what runs out of memory when an array here cannot grow */
static const char k_oom[] = "capturing the model's groups";

cov_status gpu_cap_describe(gpu_cap_group *g, const cov_model_group *d) {
  g->n_calls = cov_model_group_num_calls(d);
  g->calls = calloc(g->n_calls ? g->n_calls : 1, sizeof *g->calls);
  if (!g->calls) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (size_t c = 0; c < g->n_calls; c++) {
    const cov_model_group_call *src = cov_model_group_call_at(d, c);
    gpu_cap_call *dst = &g->calls[c];
    dst->node = dup_str(src->node);
    dst->codelet = dup_str(src->codelet);
    dst->cdl = cov_codelet_lib_find(cov_model_group_codelets(d), src->codelet);
    dst->n_attrs = src->n_attrs;
    dst->attrs = calloc(src->n_attrs ? src->n_attrs : 1, sizeof *dst->attrs);
    dst->n_args = src->n_args;
    dst->args = calloc(src->n_args ? src->n_args : 1, sizeof *dst->args);
    if (!dst->node || !dst->codelet || !dst->attrs || !dst->args)
      return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    for (size_t a = 0; a < src->n_attrs; a++) {
      dst->attrs[a] = src->attrs[a];
      dst->attrs[a].name = dup_str(src->attrs[a].name);
    }
    for (size_t a = 0; a < src->n_args; a++) {
      const cov_model_arg *sa = &src->args[a];
      gpu_cap_arg *da = &dst->args[a];
      da->kind = sa->kind;
      da->input = sa->input;
      da->value = dup_str(sa->value ? sa->value : "");
      da->t = sa->t;
      da->t.data = NULL;
      if (sa->kind == COV_MODEL_ARG_CONST && sa->t.data) {
        int64_t n = cov_tensor_numel(&sa->t);
        size_t bytes = (size_t)n * cov_dtype_size(sa->t.dtype);
        da->t.data = malloc(bytes ? bytes : 1);
        if (!da->t.data) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
        memcpy(da->t.data, sa->t.data, bytes);
      }
    }
    dst->out = src->out;
    dst->out.data = NULL;
  }
  g->n_in = cov_model_group_num_inputs(d);
  g->in = calloc(g->n_in ? g->n_in : 1, sizeof *g->in);
  if (!g->in) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (size_t k = 0; k < g->n_in; k++) {
    const char *nm = cov_model_group_input(d, k, &g->in[k].t);
    snprintf(g->in[k].name, sizeof g->in[k].name, "%s", nm ? nm : "");
  }
  const char *on = cov_model_group_output(d, &g->out);
  snprintf(g->out_name, sizeof g->out_name, "%s", on ? on : "");
  return NULL;
}

int gpu_cap_is8(cov_dtype d) { return d == COV_I8 || d == COV_U8; }

/* Whether values of dtype d carry their patterns in lanes (a byte each). */
static int cap_laned(cov_dtype d) { return d == COV_BOOL || gpu_cap_is8(d); }

uint8_t gpu_cap_lane_byte(uint32_t w, int lane) {
  return (uint8_t)(0x80u | ((w >> (CAP_LANE_BITS * lane)) & 0x7Fu));
}

static void fill_bits(cov_tensor *t, uint32_t id, int pass, int lane) {
  int64_t n = cov_tensor_numel(t);
  for (int64_t j = 0; j < n; j++) {
    if (t->dtype == COV_I64) ((uint64_t *)t->data)[j] = gpu_cap_pattern64(pass, id, (uint32_t)j);
    else if (cap_laned(t->dtype)) ((uint8_t *)t->data)[j] = gpu_cap_lane_byte(gpu_cap_pattern(pass, id, (uint32_t)j), lane);
    else ((uint32_t *)t->data)[j] = gpu_cap_pattern(pass, id, (uint32_t)j);
  }
}

void gpu_cap_add_lane(const cov_tensor *t, int lane, uint32_t *w) {
  int64_t n = cov_tensor_numel(t);
  const uint8_t *b = t->data;
  for (int64_t j = 0; j < n; j++) {
    if (lane == 0) w[j] = 0;
    if (w[j] == GPU_CAP_BAD) continue;
    w[j] = b[j] & 0x80u ? w[j] | (uint32_t)(b[j] & 0x7Fu) << (CAP_LANE_BITS * lane) : GPU_CAP_BAD;
  }
}

/* Whether a group reads elements of the i64 model inputs (their patterns
 * carry gpu_cap_high in the high word, which no shape or count does). */
static int reads_runtime_ints(const cov_model_group_offer *o) {
  for (size_t i = 0; i < o->n_in; i++) {
    if (cap_laned(o->in[i].dtype) && o->in[i].data) {
      const uint8_t *b = o->in[i].data;
      for (int64_t j = 0; j < cov_tensor_numel(&o->in[i]); j++)
        if (b[j] & 0x80u) return 1;
      continue;
    }
    if (o->in[i].dtype != COV_I64 || !o->in[i].data) continue;
    const uint64_t *p = o->in[i].data;
    for (int64_t j = 0; j < cov_tensor_numel(&o->in[i]); j++)
      if ((uint32_t)(p[j] >> 32) == gpu_cap_high((uint32_t)p[j])) return 1;
  }
  return 0;
}

/* Whether a group's non-f32 result is data the GPU computes (from f32
 * values or run-time integers and bools) rather than shape arithmetic. */
static int computes_data(const gpu_cap_group *g, const cov_model_group_offer *o) {
  int from_f32 = g->out.dtype == COV_F64; /* f64 (ONNX DOUBLE) is data, not shapes */
  for (size_t i = 0; i < o->n_in; i++) from_f32 |= o->in[i].dtype == COV_F32 || o->in[i].dtype == COV_F64;
  return from_f32 || reads_runtime_ints(o);
}

/* Pass 0, first run: group k recorded; described where the GPU computes
 * it (its result a buffer of its own), else why not. */
static cov_status register_group(cap_ctx *x, int k, const cov_model_group_offer *o) {
  gpu_capture *c = x->c;
  COV_RETURN_IF_ERROR(common_grow((void **)&c->groups, &c->cap_groups, k + 1, sizeof *c->groups, 16, k_oom));
  c->n_groups = k + 1;
  gpu_cap_group *g = &c->groups[k];
  g->group = o->group;
  snprintf(g->kind, sizeof g->kind, "%s", o->kind ? o->kind : "");
  g->buf_id = -1;
  if (!o->desc) {
    snprintf(g->why, sizeof g->why, "%s", o->why_not ? o->why_not : "it cannot be described");
    return NULL;
  }
  snprintf(g->node, sizeof g->node, "%s", cov_model_group_name(o->desc));
  COV_RETURN_IF_ERROR(gpu_cap_describe(g, o->desc));
  cov_dtype dt = g->out.dtype;
  if (dt != COV_F32) {
    int data = computes_data(g, o);
    if (!data && dt != COV_F64) {
      /* integer work on integers only (shape arithmetic of a dynamic
       * model): constant once the input shapes are fixed, so the frontend
       * computes it here, on true values, for the layout operations that
       * read it */
      g->constant = 1;
      return NULL;
    }
    if (dt != COV_I64 && dt != COV_I32 && !cap_laned(dt)) {
      snprintf(g->why, sizeof g->why, "its result is %s (the GPU model path takes f32, i64, i32, i8, u8 and bool "
               "values)", cov_dtype_name(dt));
      return NULL;
    }
    c->has_bool |= cap_laned(dt);
  }
  g->described = 1;
  g->buf_id = c->n_ids;
  COV_RETURN_IF_ERROR(common_grow((void **)&c->id_numel, &c->cap_ids, c->n_ids + 1, sizeof *c->id_numel, 16, k_oom));
  c->id_numel[c->n_ids++] = cov_tensor_numel(&g->out);
  if (c->id_numel[c->n_ids - 1] >= (int64_t)GPU_CAP_FLIP)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(c->path, g->node), "group '%s' has %lld elements (2^30 at most)", g->node,
                     (long long)c->id_numel[c->n_ids - 1]);
  return NULL;
}

/* Group input `gi` as this run delivers it (t): a bool or 8-bit input's
 * words are assembled lane by lane and kept until pass 3 decodes them
 * (the lane count is known only after the first run); every other input
 * is fed to its decoder pass by pass in lane 0, keeping no words. */
static cov_status take_input(cap_ctx *x, gpu_cap_input *gi, const cov_tensor *t) {
  if (cap_laned(t->dtype)) {
    int64_t n = cov_tensor_numel(t);
    uint32_t **w = x->pass == 0 ? &gi->ids : x->pass == 1 ? &gi->idx : x->pass == 2 ? &gi->flp : &gi->hsh;
    if (!*w && !(*w = calloc((size_t)(n > 0 ? n : 1), 4)))
      return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    if (t->data) gpu_cap_add_lane(t, x->lane, *w);
    if (x->pass < GPU_CAP_PASSES - 1 || x->lane < x->n_lanes - 1) return NULL;
    gpu_cap_decode_words(x->c, n, gi->ids, gi->idx, gi->flp, gi->hsh, &gi->v);
  } else if (x->lane > 0) {
    return NULL;
  } else {
    /* decoded as the passes arrive: no words kept */
    if (x->pass == 0 || gi->dec) gpu_cap_dec_pass(x->c, &gi->dec, x->pass, t, &gi->v);
    if (gi->dec) return NULL;
  }
  free(gi->ids), free(gi->idx), free(gi->flp), free(gi->hsh);
  gi->ids = gi->idx = gi->flp = gi->hsh = NULL;
  return NULL;
}

static cov_status on_group(void *user, const cov_model_group_offer *o, cov_tensor *out, size_t n_out, int *handled) {
  cap_ctx *x = user;
  gpu_capture *c = x->c;
  *handled = 0;
  (void)n_out;
  int k = x->gi++;
  if (x->pass == 0 && x->lane == 0) {
    COV_RETURN_IF_ERROR(register_group(x, k, o));
  } else if (k >= c->n_groups || c->groups[k].group != o->group) {
    return cov_error(COV_INTERNAL, GPU_LOC(c->path, o->desc ? cov_model_group_name(o->desc) : NULL),
                     "group %d was offered in another order on a later pass", o->group);
  }
  gpu_cap_group *g = &c->groups[k];
  if (!g->described) return NULL;
  for (size_t i = 0; i < g->n_in && i < o->n_in; i++) COV_RETURN_IF_ERROR(take_input(x, &g->in[i], &o->in[i]));
  COV_RETURN_IF_ERROR(cov_tensor_alloc(out, g->out.dtype, g->out.rank, g->out.shape));
  fill_bits(out, (uint32_t)g->buf_id, x->pass, x->lane);
  *handled = 1;
  return NULL;
}

/* Whether layout group i was offered as a kernel (a gather or a cast):
 * described, or refused with its own reason among the groups. */
static int cap_offered(const gpu_capture *c, size_t i) {
  for (int k = 0; k < c->n_groups; k++)
    if (c->groups[k].group == (int)i) return 1;
  return 0;
}

cov_status gpu_capture_altering(const cov_model *m, const char *path, const gpu_capture *c) {
  cov_status errs = NULL;
  for (size_t i = 0; i < cov_model_num_groups(m); i++) {
    cov_model_group_info info;
    COV_RETURN_IF_ERROR(cov_model_group_get_info(m, i, &info));
    if (!info.layout || !info.alters || cap_offered(c, i)) continue;
    errs = cov_status_join(errs, cov_error(COV_UNSUPPORTED, GPU_LOC(path, info.node),
                                           "layer group %zu (%s, node '%s'): %s; the GPU model path runs the "
                                           "frontend's data movement as copies of elements only",
                                           i, info.kind, info.node, info.alters));
  }
  return errs;
}

/* Control flow (a Loop, If or Scan the frontend drives, its subgraphs'
 * groups offered once per iteration or branch taken) cannot be captured:
 * the passes would see a body's groups as many times as it runs. Such a
 * model is compiled from its program instead (gpu_mprogram.c,
 * gpu_model_compile_with checks first); a capture asked for one anyway is
 * refused by name. */
static cov_status refuse_control(const cov_model *m, const char *path) {
  static const char *const kinds[] = {"loop", "if", "scan", NULL};
  for (size_t i = 0; i < cov_model_num_groups(m); i++) {
    cov_model_group_info info;
    COV_RETURN_IF_ERROR(cov_model_group_get_info(m, i, &info));
    for (const char *const *k = kinds; info.layout && *k; k++)
      if (!strcmp(info.kind, *k))
        return cov_error(COV_UNSUPPORTED, GPU_LOC(path, info.node),
                         "layer group %zu (%s, node '%s') is control flow, which the capture of a straight model "
                         "cannot follow (gpu_model_compile_with compiles such a model from its program)",
                         i, info.kind, info.node);
  }
  return NULL;
}

cov_status gpu_capture_model(const cov_model *m, const char *path, gpu_capture *c) {
  memset(c, 0, sizeof *c);
  c->path = path;
  COV_RETURN_IF_ERROR(refuse_control(m, path));
  size_t ni = cov_model_num_inputs(m), no = cov_model_num_outputs(m);
  if (ni > GPU_CAP_MAX_IO || no > GPU_CAP_MAX_IO)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(path, NULL), "the GPU model path takes at most %d inputs and outputs", GPU_CAP_MAX_IO);
  c->n_inputs = (int)ni, c->n_outputs = (int)no;
  cov_tensor in[GPU_CAP_MAX_IO] = {{0}}, out[GPU_CAP_MAX_IO] = {{0}};
  gpu_cap_input outs[GPU_CAP_MAX_IO]; /* the outputs' words, decoded as a group input's */
  memset(outs, 0, sizeof outs);
  cov_status st = NULL;
  for (size_t i = 0; i < ni && !st; i++) {
    cov_dtype dt;
    int rank;
    int64_t shape[COV_MAX_RANK];
    st = cov_model_input_info(m, i, &dt, &rank, shape);
    if (st) break;
    if (dt != COV_F32 && dt != COV_I64) {
      st = cov_error(COV_UNSUPPORTED, GPU_LOC(path, cov_model_input_name(m, i)),
                     "model input '%s' is %s; the GPU model path takes f32 and i64 inputs",
                     cov_model_input_name(m, i), cov_dtype_name(dt));
      break;
    }
    /* symbolic dims (a dynamic batch) are compiled as 1 */
    for (int d = 0; d < rank; d++)
      if (shape[d] < 1) shape[d] = 1;
    c->in_shape[i].dtype = dt, c->in_shape[i].rank = rank;
    memcpy(c->in_shape[i].shape, shape, sizeof shape);
    st = common_grow((void **)&c->id_numel, &c->cap_ids, c->n_ids + 1, sizeof *c->id_numel, 16, k_oom);
    if (!st) c->id_numel[c->n_ids++] = cov_tensor_numel(&c->in_shape[i]);
  }
  int n_lanes = 1;
  for (int run = 0; run < GPU_CAP_PASSES * n_lanes && !st; run++) {
    int pass = run / n_lanes, lane = run % n_lanes;
    for (size_t i = 0; i < ni && !st; i++) {
      cov_tensor_release(&in[i]);
      st = cov_tensor_alloc(&in[i], c->in_shape[i].dtype, c->in_shape[i].rank, c->in_shape[i].shape);
      if (!st) fill_bits(&in[i], (uint32_t)i, pass, lane);
    }
    if (st) break;
    cap_ctx x = {c, pass, lane, n_lanes, 0, NULL};
    st = cov_model_run_groups_gathering(m, in, ni, out, no, on_group, NULL, &x);
    /* bool and 8-bit results carry their patterns 7 bits per run of the model */
    if (run == 0 && c->has_bool) n_lanes = CAP_LANES;
    x.n_lanes = n_lanes;
    for (size_t o = 0; o < no && !st; o++) {
      st = take_input(&x, &outs[o], &out[o]);
      c->out_shape[o] = out[o];
      c->out_shape[o].data = NULL;
    }
    for (size_t o = 0; o < no; o++) cov_tensor_release(&out[o]);
  }
  for (size_t i = 0; i < ni; i++) cov_tensor_release(&in[i]);
  for (size_t o = 0; o < no; o++) {
    c->outputs[o] = outs[o].v;
    free(outs[o].ids), free(outs[o].idx), free(outs[o].flp), free(outs[o].hsh);
    gpu_cap_dec_free(outs[o].dec);
  }
  if (st) gpu_capture_free(c);
  return st;
}

void gpu_cap_group_free(gpu_cap_group *g) {
  for (size_t i = 0; g->calls && i < g->n_calls; i++) {
    gpu_cap_call *cl = &g->calls[i];
    free(cl->node), free(cl->codelet);
    for (size_t a = 0; cl->attrs && a < cl->n_attrs; a++) free((char *)cl->attrs[a].name);
    for (size_t a = 0; cl->args && a < cl->n_args; a++) free(cl->args[a].value), free(cl->args[a].t.data);
    free(cl->attrs), free(cl->args);
  }
  for (size_t i = 0; g->in && i < g->n_in; i++) {
    free(g->in[i].ids), free(g->in[i].idx), free(g->in[i].flp), free(g->in[i].hsh), free(g->in[i].v.runs);
    gpu_cap_dec_free(g->in[i].dec);
  }
  free(g->calls), free(g->in);
  g->calls = NULL, g->in = NULL, g->n_calls = g->n_in = 0;
}

void gpu_capture_free(gpu_capture *c) {
  for (int k = 0; k < c->n_groups; k++) gpu_cap_group_free(&c->groups[k]);
  for (int o = 0; o < c->n_outputs; o++) free(c->outputs[o].runs);
  for (int i = 0; i < c->cap_const; i++) free(c->id_const[i]);
  free(c->groups), free(c->id_numel), free(c->id_const);
  memset(c, 0, sizeof *c);
}

/* backends/gpu/gpu_mplan.c: a compiled model's plan run on the CPU (the
 * emulation the tests check against the reference interpreter) and
 * written out (code objects, weights, manifest.json). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/gpu/gpu_gather.h"
#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_pool.h"
#include "backends/gpu/gpu_qdot.h"
#include "backends/gpu/gpu_ref.h"
#include "backends/gpu/gpu_vendor.h"
#include "common/fileio.h"
#include "common/json_write.h"

static float to_f16(float v) { return cov_f16_to_f32(cov_f32_to_f16(v)); }

/* conv plans with a channels-last kernel: the weights back to OIHW */
static void weights_oihw(const gpu_plan *pl, const float *w, float *out) {
  const gpu_problem *q = &pl->prob;
  int64_t rs = q->cr * q->cs;
  for (int64_t o = 0; o < q->ck; o++)
    for (int64_t c = 0; c < q->cc; c++)
      for (int64_t t = 0; t < rs; t++) out[(o * q->cc + c) * rs + t] = w[(t * q->cc + c) * q->ck + o];
}

/* Bytes per element of a buffer in the emulation: 16-bit floats as f32
 * (rounded as the kernels store them), every other dtype as it is. */
static size_t emu_size(cov_dtype d) { return d == COV_F16 || d == COV_BF16 ? 4 : cov_dtype_size(d); }

/* NHWC <-> NCHW of [n][c][hw] values (to_nchw: from NHWC) */
static void transpose_cl(const float *in, float *out, int64_t n, int64_t c, int64_t hw, int to_nchw) {
  for (int64_t b = 0; b < n; b++)
    for (int64_t k = 0; k < c; k++)
      for (int64_t j = 0; j < hw; j++) {
        int64_t nchw = (b * c + k) * hw + j, nhwc = (b * hw + j) * c + k;
        if (to_nchw) out[nchw] = in[nhwc];
        else out[nhwc] = in[nchw];
      }
}

/* A matrix kernel through the reference loop nest on its f16 operands:
 * channels-last inputs and weights ([R][S][C][K], depthwise [R][S][C])
 * turned back to NCHW / OIHW, NHWC outputs (prob.nhwc_io, prob.nhwc_out,
 * the depthwise kernel) turned to NHWC and rounded to f16 as stored. */
static cov_status emulate_matrix(const gpu_plan *pl, float **a) {
  const gpu_problem *q = &pl->prob;
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(pl, &na, &nb, &no, &nbias);
  float *x = a[0], *w = a[1], *y = a[2], *tx = NULL, *tw = NULL, *ty = NULL;
  int cl_in = pl->nhwc || pl->dw, cl_out = gpu_conv_out_nhwc(q) || pl->dw;
  if (cl_in) tx = malloc(na * 4 + 4), tw = malloc(nb * 4 + 4);
  if (cl_out) ty = malloc(no * 4 + 4);
  if ((cl_in && (!tx || !tw)) || (cl_out && !ty)) {
    free(tx), free(tw), free(ty);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  if (cl_out) y = ty;
  if (cl_in) {
    transpose_cl(x, tx, q->cn, q->cc, q->ch * q->cw, 1);
    if (pl->dw) /* [R][S][C] -> [C][1][R][S] */
      for (int64_t c = 0; c < q->cc; c++)
        for (int64_t t = 0; t < q->cr * q->cs; t++) tw[c * q->cr * q->cs + t] = w[t * q->cc + c];
    else
      weights_oihw(pl, w, tw);
    x = tx, w = tw;
  }
  gpu_reference(pl, x, w, a[3], y);
  if (cl_out) {
    transpose_cl(ty, a[2], q->cn, q->ck, (int64_t)no / (q->cn * q->ck), 0);
    for (size_t j = 0; j < no; j++) a[2][j] = to_f16(a[2][j]);
  }
  free(tx), free(tw), free(ty);
  return NULL;
}

/* A codelet step through the reference interpreter, on its buffers (each
 * in its own dtype: f32 activations, i64 ids, bool masks, the integers of
 * quantized layers). */
static cov_status emulate_codelet(const gpu_model_plan *p, const gpu_mstep *s, float **v) {
  const gpu_cdl_call *k = &s->ew.cdl;
  cov_tensor in[GPU_CDL_MAX_IO], out;
  memset(in, 0, sizeof in);
  for (int i = 0; i < k->n_in; i++) {
    in[i].dtype = k->in_dtype[i], in[i].rank = k->in_rank[i], in[i].data = v[s->args[i]];
    memcpy(in[i].shape, k->in_shape[i], sizeof in[i].shape);
    cov_dtype bd = p->bufs[s->args[i]].dtype;
    if ((k->in_dtype[i] != bd && !(bd == COV_BOOL && k->in_dtype[i] == COV_U8)) /* a mask read as u8 */ ||
        emu_size(bd) != cov_dtype_size(bd))
      return cov_error(COV_UNSUPPORTED, GPU_LOC(NULL, s->label), "emulation of %s: input %d is %s in a %s buffer",
                       s->kernel, i, cov_dtype_name(k->in_dtype[i]), cov_dtype_name(bd));
  }
  memset(&out, 0, sizeof out);
  COV_RETURN_IF_ERROR(cov_codelet_run(k->c, k->attrs, (size_t)k->n_attrs, in, (size_t)k->n_in, &out, 1));
  const gpu_mbuf *y = &p->bufs[s->args[k->n_in]];
  cov_status st = NULL;
  if (out.dtype != y->dtype || cov_tensor_numel(&out) != y->numel)
    st = cov_error(COV_INTERNAL, GPU_LOC(NULL, s->label), "emulation of %s: the output is not %s[%lld]", s->kernel,
                   cov_dtype_name(y->dtype), (long long)y->numel);
  else
    memcpy(v[s->args[k->n_in]], out.data, (size_t)y->numel * cov_dtype_size(y->dtype));
  cov_tensor_release(&out);
  return st;
}

/* A model compiler's kernel (gpu_lower_ew.c, gpu_lower_gather.c) through
 * its C meaning; f16 results rounded as the kernel stores them. A copy
 * storing only its NHWC form (also == 2) computes into a scratch buffer. */
static cov_status emulate_ew(const gpu_ew *e, float **a) {
  if (e->kind == GPU_EW_COPY && e->also == 2) {
    float *t = calloc((size_t)(e->N * e->C * e->H * e->W) + 1, sizeof *t);
    if (!t) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    gpu_ew f = *e;
    f.also = 1;
    float *b[4] = {a[0], a[1], t, a[3]};
    cov_status st = emulate_ew(&f, b);
    free(t);
    return st;
  }
  if (e->kind == GPU_EW_ROWS) {
    gpu_gather_emulate(e, a[0], (const int64_t *)a[1], a[2], e->bias ? a[3] : NULL);
    return NULL;
  }
  gpu_ew_emulate(e, a[0], a[1], a[2], a[3], (const int32_t *)a[1]);
  if (e->kind == GPU_EW_COPY && e->also) /* the NHWC f16 second store */
    for (int64_t j = 0; j < e->n; j++) {
      int64_t src, dst, hw = e->H * e->W;
      gpu_ew_copy_at(e, j, &src, &dst);
      int64_t p = dst % hw, c = dst / hw % e->C, n = dst / hw / e->C;
      a[1][(n * hw + p) * e->C + c] = to_f16(a[2][dst]);
    }
  if (e->kind == GPU_EW_LNORM && e->out_dtype == COV_F16)
    for (int64_t j = 0; j < e->N * e->W * e->C; j++) a[2][j] = to_f16(a[2][j]);
  else if ((e->kind == GPU_EW_MAXPOOL || e->kind == GPU_EW_GAVGPOOL) && e->out_dtype == COV_F16)
    for (int64_t j = 0; j < e->N * e->C * (e->kind == GPU_EW_MAXPOOL ? e->P * e->Q : 1); j++) a[2][j] = to_f16(a[2][j]);
  else if (e->out_dtype == COV_F16)
    for (int64_t j = 0; j < e->n; j++) {
      int64_t src = j, dst = j;
      if (e->kind == GPU_EW_COPY) gpu_ew_copy_at(e, j, &src, &dst);
      a[2][dst] = to_f16(a[2][dst]);
    }
  return NULL;
}

/* Every buffer of the emulation (v[i]: its elements in its own dtype's
 * bytes, 16-bit floats widened to f32): weights as stored, the inputs. */
static cov_status emu_buffers(const gpu_model_plan *p, const cov_tensor *inputs, float **v) {
  for (int i = 0; i < p->n_bufs; i++) {
    const gpu_mbuf *b = &p->bufs[i];
    size_t es = emu_size(b->dtype);
    v[i] = calloc((size_t)b->numel * (es > 4 ? es : 4) / 4 + 1, sizeof **v);
    if (!v[i]) return cov_error(COV_OUT_OF_MEMORY, GPU_LOC(NULL, b->name), "out of memory for buffer %s", b->name);
    if (b->kind == GPU_BUF_WEIGHT) {
      for (int64_t j = 0; j < b->numel; j++) {
        if (b->dtype == COV_F16) {
          uint16_t h;
          memcpy(&h, (const char *)b->data + 2 * j, 2);
          v[i][j] = cov_f16_to_f32(h);
        } else {
          memcpy((char *)v[i] + es * (size_t)j, (const char *)b->data + es * (size_t)j, es); /* as stored */
        }
      }
    } else if (b->kind == GPU_BUF_INPUT) {
      const cov_tensor *t = &inputs[b->io];
      if (t->dtype != b->dtype || cov_tensor_numel(t) != b->numel)
        return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, b->name), "input %d: %lld %s values expected", b->io,
                         (long long)b->numel, cov_dtype_name(b->dtype));
      memcpy(v[i], t->data, (size_t)b->numel * cov_dtype_size(b->dtype));
    }
  }
  return NULL;
}

/* A conv whose A operand is read through a prologue (prob.a_pro,
 * gpu_lower_gate.c): the operand the kernel stores to its tiles, each f32
 * element x[n][c][hw] times gate[n][c] (GPU_APRO_CAST: x alone), rounded
 * once to f16, then the conv on it. */
static cov_status emulate_gated(const gpu_model_plan *p, const gpu_mstep *s, float **v, float **a) {
  const gpu_problem *q = &s->plan.prob;
  int gb = s->n_args > GPU_APRO_ARG ? s->args[GPU_APRO_ARG] : -1, cast = q->a_pro == GPU_APRO_CAST;
  int64_t hw = q->ch * q->cw, n = q->cn * q->cc * hw;
  if ((!cast && (gb < 0 || p->bufs[gb].numel != q->cn * q->cc)) || s->args[0] < 0 || p->bufs[s->args[0]].numel != n)
    return cov_error(COV_INTERNAL, GPU_LOC(NULL, s->label), "emulation of %s: no gate of its input", s->kernel);
  float *t = malloc((size_t)n * sizeof *t + 4), *b[4] = {t, a[1], a[2], a[3]};
  if (!t) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int64_t i = 0; i < n; i++) t[i] = to_f16(cast ? a[0][i] : a[0][i] * v[gb][i / hw]);
  cov_status st = emulate_matrix(&s->plan, b);
  free(t);
  return st;
}

/* One device step's CPU meaning (a launch or a fill). */
static cov_status emu_device_step(const gpu_model_plan *p, const gpu_mstep *s, float **v) {
  float *a[4];
  for (int k = 0; k < 4; k++) a[k] = s->args[k] >= 0 ? v[s->args[k]] : NULL;
  if (s->op == GPU_STEP_FILL) {
    memset(v[s->fill_buf], 0, (size_t)p->bufs[s->fill_buf].numel * emu_size(p->bufs[s->fill_buf].dtype));
    return NULL;
  }
  if (s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_CODELET) return emulate_codelet(p, s, v);
  if (s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_QDOT) {
    float *m = s->args[4] >= 0 ? v[s->args[4]] : NULL, *zp = s->args[5] >= 0 ? v[s->args[5]] : NULL;
    gpu_qdot_emulate(&s->ew, (const int8_t *)a[0], (const int32_t *)a[1], a[2], (const int32_t *)a[3], m, zp);
    return NULL;
  }
  if (s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_SEHEAD) {
    if (!gpu_se_ok(&s->ew) || s->args[4] < 0 || s->args[5] < 0)
      return cov_error(COV_INTERNAL, GPU_LOC(NULL, s->label), "emulation of %s: not a squeeze-excite head", s->kernel);
    gpu_se_emulate(&s->ew, a[0], a[1], a[2], a[3], v[s->args[4]], v[s->args[5]]);
    return NULL;
  }
  if (s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_LNORM && s->ew.dual) { /* the f16 second store */
    COV_RETURN_IF_ERROR(emulate_ew(&s->ew, a));
    for (int64_t j = 0; j < s->ew.N * s->ew.W * s->ew.C; j++) v[s->args[4]][j] = to_f16(a[2][j]);
    return NULL;
  }
  if (s->kkind == GPU_KERNEL_EW) return emulate_ew(&s->ew, a);
  if (s->kkind == GPU_KERNEL_ATTN)
    return gpu_attn_emulate(&s->attn, a[0], a[1], a[2], a[3], s->args[4] >= 0 ? v[s->args[4]] : NULL);
  const gpu_plan *pl = &s->plan;
  const gpu_problem *q = &pl->prob;
  if (s->pre) { /* NCHW -> NHWC */
    int64_t hw = q->ch * q->cw;
    for (int64_t n = 0; n < q->cn; n++)
      for (int64_t c = 0; c < q->cc; c++)
        for (int64_t j = 0; j < hw; j++) a[2][(n * hw + j) * q->cc + c] = a[0][(n * q->cc + c) * hw + j];
    return NULL;
  }
  if (q->a_pro != GPU_APRO_NONE) return emulate_gated(p, s, v, a);
  if (q->kind == GPU_OP_CONV2D && q->epi.residual) { /* NCHW f32, the addend after bias and activation */
    size_t na, nb, no, nbias;
    gpu_buffer_sizes(pl, &na, &nb, &no, &nbias);
    if (s->n_args < 7 || s->args[6] < 0)
      return cov_error(COV_INTERNAL, GPU_LOC(NULL, s->label), "emulation of %s: no residual addend", s->kernel);
    COV_RETURN_IF_ERROR(emulate_matrix(pl, a));
    for (size_t j = 0; j < no; j++) a[2][j] += v[s->args[6]][j];
    return NULL;
  }
  if (q->kind != GPU_OP_MATMUL || !(q->epi.residual || pl->out_f16 || pl->out_rq)) return emulate_matrix(pl, a);
  /* permuted rows, the residual addend after bias and activation, then the
   * f16 store */
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(pl, &na, &nb, &no, &nbias);
  const float *r = q->epi.residual && s->n_args > 6 && s->args[6] >= 0 ? v[s->args[6]] : NULL;
  if (q->epi.residual && !r)
    return cov_error(COV_INTERNAL, GPU_LOC(NULL, s->label), "emulation of %s: no residual addend", s->kernel);
  float *t = malloc(no * sizeof *t + 4), *b[4] = {a[0], a[1], t, a[3]};
  if (!t) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = emulate_matrix(pl, b);
  for (size_t j = 0; j < no && !st; j++) {
    int64_t m = (int64_t)j / pl->N, n = (int64_t)j % pl->N, at = (int64_t)j;
    if (pl->out_rq) at = (m / pl->out_rq * pl->out_r1 + m % pl->out_rq * pl->out_r0) * pl->N + n;
    float y = r ? t[j] + r[at] : t[j];
    a[2][at] = pl->out_f16 ? to_f16(y) : y;
  }
  free(t);
  return st;
}

/* The steps from the first, control steps as the runtime drives them;
 * rank / shape: the shape each buffer holds (part steps set them). */
static cov_status emu_steps(const gpu_model_plan *p, float **v, int *rank, int64_t (*shape)[COV_MAX_RANK]) {
  /* control steps: per step, a loop's iterations and trip count; every
   * step run counts against the runtime's bound (CRT_MAX_RUN_STEPS) */
  int64_t *count = calloc((size_t)p->n_steps + 1, sizeof *count);
  int64_t *trip = calloc((size_t)p->n_steps + 1, sizeof *trip), budget = (int64_t)1 << 26;
  cov_status st = !count || !trip ? cov_error(COV_OUT_OF_MEMORY, GPU_LOC(NULL, "gpu_model_emulate"), "out of memory")
                                  : NULL;
  for (int i = 0, next = 1; i < p->n_steps && !st; i = next) {
    const gpu_mstep *s = &p->steps[i];
    next = i + 1;
    if (--budget < 0)
      st = cov_error(COV_OUT_OF_RANGE, GPU_LOC(NULL, s->label), "a run would execute more than 2^26 steps (loops)");
    else if (s->op == GPU_STEP_PART)
      st = gpu_mpart_emulate(p, i, v, rank, shape);
    else if (s->op >= GPU_STEP_COPY)
      st = gpu_mctl_emulate(p, i, v, count, trip, &next);
    else
      st = emu_device_step(p, s, v);
  }
  free(count), free(trip);
  return st;
}

cov_status gpu_model_emulate(const gpu_model_plan *p, const cov_tensor *inputs, size_t n_inputs,
                             cov_tensor *outputs, size_t n_outputs) {
  if ((int)n_inputs != p->n_inputs || (int)n_outputs != p->n_outputs)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, "gpu_model_emulate"), "the compiled model takes %d inputs and %d outputs", p->n_inputs,
                     p->n_outputs);
  float **v = calloc((size_t)p->n_bufs + 1, sizeof *v);
  int *rank = calloc((size_t)p->n_bufs + 1, sizeof *rank);
  int64_t(*shape)[COV_MAX_RANK] = calloc((size_t)p->n_bufs + 1, sizeof *shape);
  cov_status st = !v || !rank || !shape ? cov_error(COV_OUT_OF_MEMORY, GPU_LOC(NULL, "gpu_model_emulate"), "out of memory")
                                        : emu_buffers(p, inputs, v);
  for (int i = 0; !st && i < p->n_bufs; i++) rank[i] = p->bufs[i].rank, memcpy(shape[i], p->bufs[i].shape, sizeof shape[i]);
  if (!st) st = emu_steps(p, v, rank, shape);
  for (int o = 0; o < p->n_outputs && !st; o++) {
    /* f32 (16-bit outputs are f32 buffers the runtime converts), or the
     * integer, bool or 8-bit result as it is; a dynamic one at the shape
     * its part step gave it */
    int b = p->output_buf[o];
    st = cov_tensor_alloc(&outputs[o], p->bufs[b].dtype, rank[b], shape[b]);
    if (!st) memcpy(outputs[o].data, v[b], (size_t)cov_tensor_numel(&outputs[o]) * cov_dtype_size(p->bufs[b].dtype));
  }
  if (st)
    for (int o = 0; o < p->n_outputs; o++) cov_tensor_release(&outputs[o]);
  for (int i = 0; v && i < p->n_bufs; i++) free(v[i]);
  free(v), free(rank), free(shape);
  return st;
}

/* ---- writing ------------------------------------------------------------ */

static cov_status mkdir_p(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(dir, NULL), "output directory name too long");
  for (char *q = path + 1;; q++) {
    char c = *q;
    if (c != '/' && c != '\0') continue;
    *q = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return cov_error(COV_IO_ERROR, GPU_LOC(path, NULL), "cannot create directory %s: %s", path, strerror(errno));
    *q = c;
    if (!c) break;
  }
  return NULL;
}

static const char *kind_name(gpu_buf_kind k) {
  static const char *n[] = {"input", "output", "weight", "intermediate"};
  return n[k];
}

/* What a generic launch computes: its kind, or the codelet's name. */
static void ew_what(const gpu_ew *e, char *out, size_t n) {
  static const char *names[] = {[GPU_EW_COPY] = "copy", [GPU_EW_TABLE] = "gather", [GPU_EW_CONV] = "direct_conv",
                                 [GPU_EW_CODELET] = "codelet", [GPU_EW_ROWS] = "gather_rows",
                                 [GPU_EW_QDOT] = "int8_dot", [GPU_EW_LNORM] = "layernorm",
                                 [GPU_EW_MAXPOOL] = "maxpool", [GPU_EW_GAVGPOOL] = "global_avgpool",
                                 [GPU_EW_SEHEAD] = "squeeze_excite"};
  if (e->kind == GPU_EW_CODELET) snprintf(out, n, "codelet %s", cov_codelet_name(e->cdl.c));
  else if ((size_t)e->kind < sizeof names / sizeof *names && names[e->kind]) snprintf(out, n, "%s", names[e->kind]);
  else snprintf(out, n, "kind %d", (int)e->kind);
}

/* What a fused attention launch computes: heads, padded sequence and
 * head dim, the valid keys, the mask. */
static void attn_what(const gpu_attn *a, char *out, size_t n) {
  snprintf(out, n, "attention %lldx%lldx%lld (%lld keys%s%s, %dx%d tile)", (long long)(a->batch * a->heads),
           (long long)a->seq, (long long)a->dim, (long long)a->keys, a->causal ? ", causal" : "",
           a->mask ? ", additive mask" : "", a->bm, a->wm);
}

static cov_status write_modules(const gpu_model_plan *p, const char *dir, json_t *mods) {
  cov_status st = NULL;
  for (int i = 0; i < p->n_mods && !st; i++) {
    char file[200], path[4096];
    snprintf(file, sizeof file, "%s.%s", p->mods[i].name, p->vendor->code_ext);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    st = common_write_file(path, p->mods[i].code, p->mods[i].size);
    json_t *m = json_object();
    json_object_set_new(m, "name", json_string(p->mods[i].name));
    json_object_set_new(m, "file", json_string(file));
    json_array_append_new(mods, m);
  }
  return st;
}

/* weights: one file, each at a 256-byte aligned offset in buffer order */
static cov_status write_buffers(const gpu_model_plan *p, const char *dir, json_t *bufs) {
  char wpath[4096];
  snprintf(wpath, sizeof wpath, "%s/weights.bin", dir);
  common_out wout = {0};
  cov_status st = common_out_open(wpath, &wout);
  FILE *wf = wout.f;
  uint64_t off = 0;
  for (int i = 0; i < p->n_bufs && !st; i++) {
    const gpu_mbuf *b = &p->bufs[i];
    json_t *o = json_object(), *shape = json_array();
    json_object_set_new(o, "name", json_string(b->name));
    json_object_set_new(o, "kind", json_string(kind_name(b->kind)));
    json_object_set_new(o, "dtype", json_string(cov_dtype_name(b->dtype)));
    for (int d = 0; d < b->rank; d++) json_array_append_new(shape, json_integer(b->shape[d]));
    json_object_set_new(o, "shape", shape);
    uint64_t bytes = (uint64_t)b->numel * cov_dtype_size(b->dtype);
    json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
    if (b->io >= 0) json_object_set_new(o, "io", json_integer(b->io));
    if (b->dynamic) json_object_set_new(o, "dynamic", json_integer(b->dynamic));
    if (b->kind == GPU_BUF_WEIGHT) {
      static const char zeros[256];
      uint64_t pad = (256 - off % 256) % 256;
      int ok = fwrite(zeros, 1, pad, wf) == pad && fwrite(b->data, 1, bytes, wf) == bytes;
      off += pad;
      json_object_set_new(o, "offset", json_integer((json_int_t)off));
      off += bytes;
      if (!ok) st = cov_error(COV_IO_ERROR, GPU_LOC(wpath, NULL), "cannot write %s", wpath);
    }
    json_array_append_new(bufs, o);
  }
  if (wf && st) common_out_abort(&wout);
  else if (wf) st = common_out_commit(&wout);
  return st;
}

/* A codelet launch's threads per work item (1, or a team's lanes: the
 * rule of gpu_cdl_team.c) and statements per thread. */
static void cdl_figures(const gpu_mstep *s, json_t *o) {
  gpu_cdl_info in;
  if (s->ew.kind != GPU_EW_CODELET) return;
  cov_status st = gpu_cdl_analyse(&s->ew.cdl, &in);
  if (st) { /* the call was analysed when it was planned */
    cov_status_free(st);
    return;
  }
  json_object_set_new(o, "items", json_integer((json_int_t)in.items));
  json_object_set_new(o, "lanes", json_integer(in.lanes));
  json_object_set_new(o, "serial", json_integer((json_int_t)in.serial));
}

/* A part step's values and their buffers, its inputs first. */
static void part_json(const gpu_model_plan *p, const gpu_mstep *s, json_t *o) {
  const gpu_mpart *pt = &p->parts[s->part];
  json_t *in = json_array(), *out = json_array();
  for (int k = 0; k < pt->n; k++) {
    json_t *v = json_object();
    json_object_set_new(v, "value", json_string(pt->values[k]));
    json_object_set_new(v, "buffer", json_integer(pt->bufs[k]));
    json_array_append_new(k < pt->n_in ? in : out, v);
  }
  json_object_set_new(o, "in", in);
  json_object_set_new(o, "out", out);
}

static json_t *step_json(const gpu_model_plan *p, const gpu_mstep *s) {
  json_t *o = json_object();
  static const char *ops[] = {"launch", "fill", "copy", "loop", "next", "if", "jump", "part"};
  json_object_set_new(o, "op", json_string(ops[s->op]));
  json_object_set_new(o, "group", json_integer(s->group));
  json_object_set_new(o, "label", json_string(s->label));
  if (s->op == GPU_STEP_PART) {
    part_json(p, s, o);
    return o;
  }
  if (s->op >= GPU_STEP_COPY) {
    json_t *refs = json_array();
    for (int k = 0; k < s->n_args; k++) json_array_append_new(refs, json_integer(s->args[k]));
    json_object_set_new(o, "buffers", refs);
    if (s->op != GPU_STEP_COPY) json_object_set_new(o, "target", json_integer(s->target));
    if (s->op == GPU_STEP_NEXT) json_object_set_new(o, "carried", json_integer(s->n_carry));
    return o;
  }
  if (s->op == GPU_STEP_FILL) {
    json_object_set_new(o, "buffer", json_integer(s->fill_buf));
    json_object_set_new(o, "value", json_integer(0));
    return o;
  }
  json_t *grid = json_array(), *block = json_array(), *args = json_array();
  for (int d = 0; d < 3; d++) json_array_append_new(grid, json_integer(s->grid[d]));
  for (int d = 0; d < 3; d++) json_array_append_new(block, json_integer(s->block[d]));
  for (int k = 0; k < s->n_args; k++) json_array_append_new(args, s->args[k] >= 0 ? json_integer(s->args[k]) : json_null());
  json_object_set_new(o, "module", json_integer(s->module));
  json_object_set_new(o, "kernel", json_string(s->kernel));
  json_object_set_new(o, "grid", grid);
  json_object_set_new(o, "block", block);
  json_object_set_new(o, "shared_bytes", json_integer(s->shared_bytes));
  json_object_set_new(o, "args", args);
  char what[160];
  if (s->kkind == GPU_KERNEL_MATRIX) {
    json_object_set_new(o, "what", s->pre ? json_string("nhwc transform") : gpu_plan_json(&s->plan));
  } else if (s->kkind == GPU_KERNEL_ATTN) {
    attn_what(&s->attn, what, sizeof what);
    json_object_set_new(o, "what", json_string(what));
  } else {
    ew_what(&s->ew, what, sizeof what);
    json_object_set_new(o, "what", json_string(what));
    cdl_figures(s, o);
  }
  return o;
}

static void write_report(const gpu_model_plan *p, FILE *report) {
  fprintf(report, "%-44s %-13s %8s %6s %6s %8s  %s\n", "kernel", "kind", "shared B", "VGPR", "AGPR", "scratch",
          "what");
  for (int i = 0; i < p->n_steps; i++) {
    const gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->module < 0) continue;
    const gpu_mmodule *md = &p->mods[s->module];
    char what[160];
    if (s->kkind == GPU_KERNEL_EW) ew_what(&s->ew, what, sizeof what);
    else if (s->kkind == GPU_KERNEL_ATTN) attn_what(&s->attn, what, sizeof what);
    else if (s->pre) snprintf(what, sizeof what, "nhwc transform");
    else snprintf(what, sizeof what, "%lldx%lldx%lld", (long long)s->plan.M, (long long)s->plan.N, (long long)s->plan.K);
    fprintf(report, "%-44s %-13s %8u %6ld %6ld %8ld  %s\n", s->kernel,
            s->kkind == GPU_KERNEL_MATRIX ? (s->plan.matrix ? "matrix" : "fma")
            : s->kkind == GPU_KERNEL_ATTN ? "attention"
                                          : "generic",
            s->shared_bytes,
            md->vgprs, md->agprs, md->scratch_bytes, what);
  }
}

cov_status gpu_model_plan_write(const gpu_model_plan *p, const char *model_path, const char *dir, FILE *report) {
  COV_RETURN_IF_ERROR(mkdir_p(dir));
  if (!p->vendor) return cov_error(COV_INTERNAL, GPU_LOC(dir, NULL), "modules of a plan compiled for no target");
  json_t *man = json_object(), *mods = json_array(), *bufs = json_array(), *steps = json_array();
  const char *base = strrchr(model_path, '/') ? strrchr(model_path, '/') + 1 : model_path;
  json_object_set_new(man, "format", json_string("covenant-gpu-model"));
  json_object_set_new(man, "target", json_string(p->target));
  json_object_set_new(man, "backend", json_string(p->backend));
  json_object_set_new(man, "mcpu", json_string(p->mcpu));
  json_object_set_new(man, "model", json_string(base));
  json_object_set_new(man, "modules", mods);
  json_object_set_new(man, "buffers", bufs);
  json_object_set_new(man, "steps", steps);
  cov_status st = write_modules(p, dir, mods);
  if (!st) st = write_buffers(p, dir, bufs);
  for (int i = 0; i < p->n_steps && !st; i++) json_array_append_new(steps, step_json(p, &p->steps[i]));
  if (!st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    st = common_write_json(path, man, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  }
  json_decref(man);
  if (!st && report) write_report(p, report);
  return st;
}

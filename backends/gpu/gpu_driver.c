/* backends/gpu/gpu_driver.c: cov_gpu_compile: specs -> plans -> kernels ->
 * code objects + manifest.json (+ the --report table).
 *
 * An ACG's backend.name picks the vendor (backends/gpu/gpu_vendor.h: its
 * target operations and emitter) from the list the registry passes in.
 *
 * long: gpu_compile compiles each requested layer, writes its code object and manifest entry and the report row, per layer in one loop
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acg/acg_ir.h"
#include "backends/gpu/gpu_attn.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_layer.h"
#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_model.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_tune.h"
#include "backends/gpu/gpu_vendor.h"
#include "common/fileio.h"
#include "common/json_write.h"
#include "covenant/acg.h"
#include "covenant/gpu.h"
#include "covenant/mapper.h"

/* One default for every command: $COVENANT_SUITE, else the shipped suite. */
const char *gpu_default_suite(void) { return cov_suite_default_path(); }

cov_status gpu_target_open(const gpu_vendor *const *vendors, const char *name, cov_dtype dtype, gpu_target *t) {
  memset(t, 0, sizeof *t);
  COV_RETURN_IF_ERROR(cov_acg_load_target(name, &t->acg));
  const char *be = t->acg->backend.name ? t->acg->backend.name : "";
  cov_status st = NULL;
  for (int i = 0; vendors[i] && !t->vendor; i++)
    if (!strcmp(be, vendors[i]->backend)) t->vendor = vendors[i];
  if (t->vendor)
    t->ops = t->vendor->ops;
  else
    st = cov_error(COV_UNSUPPORTED, GPU_LOC(cov_acg_file(t->acg), "$.backend.name"), "target %s has backend '%s'; the GPU lowering serves amdgpu and nvptx",
                   cov_acg_name(t->acg), be);
  if (!st && !t->acg->backend.mcpu)
    st = cov_error(COV_INVALID_INPUT, GPU_LOC(cov_acg_file(t->acg), "$.backend"), "backend.mcpu is required for a GPU target");
  if (!st) st = gpu_caps_from_acg(t->acg, dtype, &t->caps);
  if (st) {
    cov_acg_free(t->acg);
    t->acg = NULL;
    return st;
  }
  t->caps.has_async_copy = t->ops->async_copy16 != NULL;
  t->caps.has_wgmma = t->ops->wg_mma != NULL;
  t->caps.has_tma = t->ops->wg_mma != NULL && t->ops->tma_load_2d != NULL && t->ops->mbar_init != NULL;
  t->n_shapes = t->ops->matrix_shapes(dtype, t->shapes, 8);
  return NULL;
}

void gpu_target_close(gpu_target *t) {
  if (t->acg) cov_acg_free(t->acg);
  t->acg = NULL;
  gpu_tuning_free(t->tuning);
  t->tuning = NULL;
}

cov_status gpu_build_kernel(const gpu_target *t, const gpu_plan *plan, const char *kernel,
                            unsigned code_object_version, char **out, size_t *out_size,
                            gpu_kernel_info *info) {
  *out = NULL;
  *out_size = 0;
  memset(info, 0, sizeof *info);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(kernel, ctx);
  cov_status st = gpu_lower(plan, t->ops, mod, kernel);
  if (!st) st = t->vendor->build(mod, t->acg, plan, code_object_version, out, out_size, info);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return st;
}

cov_status gpu_build_ew_kernel(const gpu_target *t, const struct gpu_ew *e, const char *kernel, char **out,
                               size_t *out_size, gpu_kernel_info *info) {
  *out = NULL;
  *out_size = 0;
  memset(info, 0, sizeof *info);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(kernel, ctx);
  gpu_plan plan = {0}; /* what the vendor reads of a plan: the threads */
  plan.threads = GPU_EW_THREADS;
  plan.prob.in_dtype = COV_F32;
  cov_status st = gpu_lower_ew(e, t->ops, mod, kernel);
  if (!st) st = t->vendor->build(mod, t->acg, &plan, 0, out, out_size, info);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return st;
}

/* Roofline: the larger of matrix (or FMA) time at peak and DRAM time. */
static double roofline_us(const gpu_target *t, const gpu_plan *p) {
  const cov_acg *a = t->acg;
  double macs = (double)p->G * (double)p->M * (double)p->N * (double)p->K, rate = 0;
  for (int c = 0; c < a->n_compute; c++) {
    const acg_compute *u = &a->compute[c];
    for (int j = 0; j < u->n_caps; j++) {
      const acg_capability *cap = &u->caps[j];
      if (cap->op != COV_OP_MAC || cap->in[0] != p->prob.in_dtype) continue;
      int is_tile = cap->tile_rank == 3 && (int)cap->tile[0] == p->fm && (int)cap->tile[1] == p->fn &&
                    (int)cap->tile[2] == p->fk;
      /* warpgroup MMAs run on the same matrix units as the listed tiles */
      if ((p->matrix && u->kind == ACG_MATRIX && (is_tile || (p->wgmma && cap->tile_rank == 3))) ||
          (!p->matrix && u->kind == ACG_SIMD)) {
        double r = cap->throughput * u->instances;
        if (r > rate) rate = r;
      }
    }
  }
  if (!p->matrix && rate == 0) /* f16 on the vector unit: widened to f32 */
    for (int c = 0; c < a->n_compute; c++)
      for (int j = 0; j < a->compute[c].n_caps; j++)
        if (a->compute[c].kind == ACG_SIMD && a->compute[c].caps[j].op == COV_OP_MAC)
          rate = fmax(rate, a->compute[c].caps[j].throughput * a->compute[c].instances);
  const gpu_problem *q = &p->prob;
  double es = (double)cov_dtype_size(q->in_dtype), bytes;
  if (q->kind == GPU_OP_MAXPOOL)
    bytes = es * (double)(q->cn * q->cc * q->ch * q->cw) + 4.0 * (double)p->M;
  else if (q->kind == GPU_OP_MATMUL)
    bytes = es * (double)p->G * (double)(p->M * p->K + p->K * p->N) + 4.0 * (double)p->G * (double)(p->M * p->N);
  else
    bytes = es * (double)(q->cn * q->cc * q->ch * q->cw + q->ck * p->K) +
            (p->out_f16 ? 2.0 : 4.0) * (double)(q->cn * q->ck * p->oh * p->ow) / (q->epi.maxpool2x2 ? 4.0 : 1.0);
  double hz = a->clock_mhz * 1e6, bw = acg_dram_bandwidth(a);
  double t_compute = rate > 0 ? macs / (rate * hz) : INFINITY, t_mem = bw > 0 ? bytes / (bw * hz) : 0;
  return 1e6 * fmax(t_compute, t_mem);
}

cov_status gpu_mkdir_p(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(dir, NULL), "output directory name too long");
  for (char *p = path + 1;; p++) {
    char c = *p;
    if (c != '/' && c != '\0') continue;
    *p = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return cov_error(COV_IO_ERROR, GPU_LOC(path, NULL), "cannot create directory %s: %s", path, strerror(errno));
    *p = c;
    if (!c) break;
  }
  return NULL;
}

void gpu_launch_json(json_t *o, const unsigned grid[3], int threads, uint64_t shared_bytes) {
  json_t *g = json_array(), *block = json_array();
  for (int i = 0; i < 3; i++) json_array_append_new(g, json_integer(grid[i]));
  json_array_append_new(block, json_integer(threads));
  json_array_append_new(block, json_integer(1));
  json_array_append_new(block, json_integer(1));
  json_object_set_new(o, "grid", g);
  json_object_set_new(o, "block", block);
  json_object_set_new(o, "shared_bytes", json_integer((json_int_t)shared_bytes));
}

json_t *gpu_plan_json(const gpu_plan *p) {
  const gpu_problem *q = &p->prob;
  json_t *o = json_object();
  static const char *kinds[] = {"matmul", "conv2d", "maxpool"};
  json_object_set_new(o, "kind", json_string(kinds[q->kind]));
  json_object_set_new(o, "dtype", json_string(cov_dtype_name(q->in_dtype)));
  if (q->kind == GPU_OP_MAXPOOL) {
    const char *keys[] = {"N", "C", "H", "W", "R", "S", "stride", "pad", "OH", "OW"};
    int64_t vals[] = {q->cn, q->cc, q->ch, q->cw, q->cr, q->cs, q->stride, q->pad, p->oh, p->ow};
    for (int i = 0; i < 10; i++) json_object_set_new(o, keys[i], json_integer(vals[i]));
  } else if (q->kind == GPU_OP_MATMUL) {
    json_object_set_new(o, "batch", json_integer(q->batch));
    json_object_set_new(o, "M", json_integer(q->m));
    json_object_set_new(o, "N", json_integer(q->n));
    json_object_set_new(o, "K", json_integer(q->k));
  } else {
    const char *keys[] = {"N", "C", "H", "W", "K", "R", "S", "stride", "pad", "dilation", "groups", "OH", "OW"};
    int64_t vals[] = {q->cn, q->cc, q->ch, q->cw, q->ck, q->cr, q->cs, q->stride, q->pad, q->dilation, q->groups, p->oh, p->ow};
    for (int i = 0; i < 13; i++) json_object_set_new(o, keys[i], json_integer(vals[i]));
  }
  static const char *acts[] = {"none", "relu", "clip", "gelu"};
  json_object_set_new(o, "bias", json_boolean(q->epi.bias));
  json_object_set_new(o, "act", json_string(acts[q->epi.act]));
  if (q->epi.act == GPU_ACT_CLIP) {
    json_object_set_new(o, "clip_lo", json_real(q->epi.clip_lo));
    json_object_set_new(o, "clip_hi", json_real(q->epi.clip_hi));
  }
  json_object_set_new(o, "maxpool2x2", json_boolean(q->epi.maxpool2x2));
  json_object_set_new(o, "softmax", json_boolean(q->epi.softmax));
  /* channels-last: the input goes through the transform kernel first, into
   * a workspace; the weights are taken as [R][S][C][K] */
  json_object_set_new(o, "layout", json_string(p->nhwc || p->dw ? "nhwc" : "nchw"));
  if (p->nhwc && !q->nhwc_io) {
    json_t *pre = json_object(), *pg = json_array(), *pb = json_array();
    unsigned g3[3];
    gpu_nhwc_grid(p, g3);
    for (int i = 0; i < 3; i++) json_array_append_new(pg, json_integer(g3[i]));
    json_array_append_new(pb, json_integer(GPU_NHWC_THREADS));
    json_array_append_new(pb, json_integer(1));
    json_array_append_new(pb, json_integer(1));
    json_object_set_new(pre, "grid", pg);
    json_object_set_new(pre, "block", pb);
    json_object_set_new(pre, "shared_bytes", json_integer(gpu_nhwc_shared_bytes()));
    json_object_set_new(pre, "workspace_bytes",
                        json_integer((json_int_t)gpu_nhwc_workspace_bytes(p, (int)cov_dtype_size(q->in_dtype))));
    json_object_set_new(o, "pre", pre);
  }
  if (p->tma) {
    /* the host builds two 2-D tensor maps (CUtensorMap, 128-byte swizzle,
     * f16/bf16) and passes their device addresses as arguments 0 and 1:
     * {rows, cols, box_rows, box_cols} of A as [G*M][K] and B as [G*K][N] */
    json_t *tm = json_object(), *ta = json_array(), *tb = json_array();
    int64_t av[4], bv[4];
    gpu_tma_dims(p, av, bv);
    for (int i = 0; i < 4; i++) json_array_append_new(ta, json_integer(av[i])), json_array_append_new(tb, json_integer(bv[i]));
    json_object_set_new(tm, "a", ta);
    json_object_set_new(tm, "b", tb);
    json_object_set_new(tm, "swizzle", json_integer(128));
    json_object_set_new(o, "tma", tm);
  }
  if (p->out_f16) json_object_set_new(o, "out_dtype", json_string("f16"));
  /* channels-last tensors (@cl): the input is taken as [N][H][W][C] (no
   * "pre" transform), the output is [N][OH][OW][K] */
  if (q->nhwc_io) json_object_set_new(o, "out_layout", json_string("nhwc"));
  gpu_launch_json(o, p->grid, p->threads, p->shared_bytes);
  char plan[192];
  if (q->kind == GPU_OP_MAXPOOL)
    snprintf(plan, sizeof plan, "one output per thread, %d threads", p->threads);
  else if (p->dw)
    snprintf(plan, sizeof plan, "depthwise, %d pixel%s x 8 channels per thread, %d threads", p->dw_pw,
             p->dw_pw > 1 ? "s" : "", p->threads);
  else
    snprintf(plan, sizeof plan, "tile %dx%dx%d %s %dx%d %s %dx%dx%d stages %d %s copies%s", p->bm, p->bn, p->bk,
             p->wgmma ? "warpgroup" : "warp", p->wm, p->wn, p->matrix ? "matrix" : "fma", p->fm, p->fn, p->fk, p->stages,
             p->tma ? "bulk tensor" : p->nhwc ? "channels-last 16-byte" : p->vector_copy ? "16-byte" : "guarded element",
             p->staged ? ", staged epilogue" : "");
  if (p->tma) {
    size_t len = strlen(plan);
    snprintf(plan + len, sizeof plan - len, ", warp-specialised, persistent%s",
             p->ws_regs ? ", setmaxnreg" : "");
  }
  json_object_set_new(o, "plan", json_string(plan));
  return o;
}

cov_status gpu_write_kernel(const gpu_target *t, const char *dir, const char *name, const gpu_plan *plan,
                            const char *code, size_t n, json_t **entry, char *kernel) {
  char file[160], path[4096], kname[128];
  snprintf(file, sizeof file, "%s.%s", name, t->vendor->code_ext);
  snprintf(path, sizeof path, "%s/%s", dir, file);
  COV_RETURN_IF_ERROR(common_write_file(path, code, n));
  snprintf(kname, sizeof kname, "covenant_%s", name);
  if (kernel) snprintf(kernel, 128, "%s", kname);
  json_t *k = gpu_plan_json(plan);
  json_object_set_new(k, "name", json_string(name));
  json_object_set_new(k, "kernel", json_string(kname));
  if (plan->nhwc && !plan->prob.nhwc_io) {
    char pre[160];
    snprintf(pre, sizeof pre, "%s_nhwc", kname);
    json_object_set_new(json_object_get(k, "pre"), "kernel", json_string(pre));
  }
  json_object_set_new(k, "file", json_string(file));
  *entry = k;
  return NULL;
}

/* A depthwise layer (gpu_is_dw) with the hand-fixed :dwP schedule. */
static cov_status gpu_compile_dw_fixed(const gpu_target *t, const cov_gpu_options *opts, gpu_layer *layer, int pw,
                                       gpu_plan *plan, char **code, size_t *code_size, gpu_kernel_info *info) {
  if (!gpu_is_dw(&layer->prob))
    return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&layer->prob),
                     "layer %s: :dwP is the schedule of depthwise convs on channels-last tensors (NAME@cl)", layer->name);
  if (layer->unfused[0] && !opts->allow_unfused)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&layer->prob), "layer %s: post-ops '%s' are not fused into GPU kernels",
                     layer->name, layer->unfused);
  gpu_plan checked;
  COV_RETURN_IF_ERROR(gpu_problem_check(&layer->prob, &checked));
  COV_RETURN_IF_ERROR(gpu_plan_dw(&checked, &t->caps, pw, plan));
  size_t len = strlen(layer->name);
  snprintf(layer->name + len, sizeof layer->name - len, "_dw%d", pw);
  char kernel[128];
  snprintf(kernel, sizeof kernel, "covenant_%s", layer->name);
  cov_status st = gpu_build_kernel(t, plan, kernel, opts->code_object_version, code, code_size, info);
  return st ? cov_status_annotate(st, "layer %s: ", layer->name) : NULL;
}

cov_status gpu_compile_one(const gpu_target *t, const cov_gpu_options *opts, const char *spec,
                           gpu_layer *layer, gpu_plan *plan, char **code, size_t *code_size,
                           gpu_kernel_info *info) {
  cov_dtype dt = opts->dtype ? opts->dtype : COV_F16;
  /* SPEC:BMxBNxBK:WMxWN:STAGES[:wg[D]|:ws[0]] fixes the schedule (as the mapper
   * will); :wg makes WMxWN a warpgroup tile of warpgroup MMAs, :wg0 / :wg1
   * with D batches of them in flight per K step; :ws the same instructions fed
   * by bulk tensor copies, warp-specialised and persistent (plan.tma), with
   * flags 0 (no setmaxnreg), d (a batch in flight), h (f16 outputs) */
  char base[128];
  int bm = 0, bn = 0, bk = 0, wm = 0, wn = 0, stages = 0, wg = 0, inflight = -1, end = 0, out_f16 = 0;
  const char *colon = strchr(spec, ':');
  int dw_pw = 0, dw_end = 0;
  if (colon && sscanf(colon, ":dw%d%n", &dw_pw, &dw_end) == 1 && !colon[dw_end]) {
    /* SPEC:dwP: the depthwise kernel with P pixels per thread */
    if ((size_t)(colon - spec) >= sizeof base || dw_pw < 1 || dw_pw > 8)
      return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, spec), "layer '%s': a depthwise schedule is written :dwP, P from 1 to 8",
                       spec);
    memcpy(base, spec, (size_t)(colon - spec));
    base[colon - spec] = '\0';
    char suite[4096];
    if (opts->suite) snprintf(suite, sizeof suite, "%s", opts->suite);
    else COV_RETURN_IF_ERROR(cov_suite_find(suite, sizeof suite));
    COV_RETURN_IF_ERROR(gpu_layer_from_spec(suite, base, dt, layer));
    return gpu_compile_dw_fixed(t, opts, layer, dw_pw, plan, code, code_size, info);
  }
  /* SPEC:f16: the compiler's own schedule (tuning file or mapper) of the
   * layer with f16 outputs, as the vendor's GEMM writes them */
  bool f16_layer = colon && !strcmp(colon, ":f16");
  if (f16_layer) {
    if ((size_t)(colon - spec) >= sizeof base)
      return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, spec), "layer '%s': name too long", spec);
    memcpy(base, spec, (size_t)(colon - spec));
    base[colon - spec] = '\0';
    spec = base, colon = NULL;
  }
  if (colon) {
    int n = sscanf(colon, ":%dx%dx%d:%dx%d:%d%n", &bm, &bn, &bk, &wm, &wn, &stages, &end);
    const char *rest = n == 6 ? colon + end : "?";
    if (!strcmp(rest, ":wg"))
      wg = 1;
    else if (!strcmp(rest, ":wg0") || !strcmp(rest, ":wg1"))
      wg = 1, inflight = rest[3] - '0';
    else if (!strncmp(rest, ":ws", 3) && strspn(rest + 3, "0dhp") == strlen(rest + 3) &&
             !(strchr(rest + 3, '0') && strchr(rest + 3, 'p'))) {
      /* plan.tma; flags: 0 without setmaxnreg, d one batch in flight, h f16
       * outputs, p ping-pong consumers (wg 4; setmaxnreg) */
      wg = strchr(rest + 3, '0') ? 2 : strchr(rest + 3, 'p') ? 4 : 3, inflight = strchr(rest + 3, 'd') ? 1 : 0;
      out_f16 = strchr(rest + 3, 'h') != NULL;
    }
    if ((size_t)(colon - spec) >= sizeof base || (*rest && !wg) || bm < 1 || bn < 1 || bk < 1 || wm < 1 || wn < 1 ||
        stages < 2 || bm > 1024 || bn > 1024 || bk > 1024 || stages > 16)
      return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, spec), "layer '%s': a schedule is written :BMxBNxBK:WMxWN:STAGES[:wg[D]|:ws[0][d][h]], or :f16 alone",
                       spec);
    memcpy(base, spec, (size_t)(colon - spec));
    base[colon - spec] = '\0';
    spec = base;
  }
  char suite[4096];
  if (opts->suite) snprintf(suite, sizeof suite, "%s", opts->suite);
  else COV_RETURN_IF_ERROR(cov_suite_find(suite, sizeof suite));
  COV_RETURN_IF_ERROR(gpu_layer_from_spec(suite, spec, dt, layer));
  if (f16_layer) {
    layer->prob.out_f16 = true;
    size_t len = strlen(layer->name);
    snprintf(layer->name + len, sizeof layer->name - len, "_f16");
  }
  return gpu_compile_layer(t, opts, layer, colon ? (const int[9]){bm, bn, bk, wm, wn, stages, wg, inflight, out_f16} : NULL, plan, code,
                           code_size, info);
}

cov_status gpu_compile_layer(const gpu_target *t, const cov_gpu_options *opts, gpu_layer *layer,
                             const int *schedule, gpu_plan *plan, char **code, size_t *code_size,
                             gpu_kernel_info *info) {
  cov_dtype dt = layer->prob.in_dtype;
  int colon = schedule != NULL;
  int bm = colon ? schedule[0] : 0, bn = colon ? schedule[1] : 0, bk = colon ? schedule[2] : 0;
  int wm = colon ? schedule[3] : 0, wn = colon ? schedule[4] : 0, stages = colon ? schedule[5] : 0;
  int wg = colon ? schedule[6] : 0, inflight = colon ? schedule[7] : -1, out_f16 = colon ? schedule[8] : 0;
  if (layer->unfused[0] && !opts->allow_unfused)
    return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&layer->prob),
                     "layer %s: post-ops '%s' are not fused into GPU kernels (pass --allow-unfused to "
                     "compile the rest and run those separately)",
                     layer->name, layer->unfused);
  (void)dt;
  if (colon) {
    if (layer->prob.kind == GPU_OP_MAXPOOL)
      return cov_error(COV_INVALID_ARGUMENT, GPU_PROB_LOC(&layer->prob), "layer %s: a pool takes no :BMxBNxBK:WMxWN:STAGES schedule",
                       layer->name);
    gpu_fixed_tile f = {bm, bn, bk, wm, wn, stages, wg != 0, inflight, wg >= 2, wg >= 3 ? GPU_TMA_CONSUMER_REGS : 0,
                        out_f16 != 0, wg == 4};
    COV_RETURN_IF_ERROR(gpu_plan_fixed(&layer->prob, &t->caps, (const int (*)[3])t->shapes, t->n_shapes, &f, plan));
    size_t len = strlen(layer->name);
    snprintf(layer->name + len, sizeof layer->name - len, "_t%dx%dx%dw%dx%ds%d%s%s%s%s%s", bm, bn, bk, wm, wn, stages,
             !wg ? "" : wg >= 2 ? "ws" : inflight < 0 ? "wg" : inflight ? "wg1" : "wg0", wg == 2 ? "0" : "",
             wg >= 2 && inflight == 1 ? "d" : "", out_f16 ? "h" : "", wg == 4 ? "p" : "");
  } else {
    const gpu_tune_entry *tuned;
    COV_RETURN_IF_ERROR(gpu_plan_pick(t, &layer->prob, plan, &tuned));
  }
  char kernel[128];
  snprintf(kernel, sizeof kernel, "covenant_%s", layer->name);
  cov_status st = gpu_build_kernel(t, plan, kernel, opts->code_object_version, code, code_size, info);
  return st ? cov_status_annotate(st, "layer %s: ", layer->name) : NULL;
}

cov_status gpu_spec_candidates(const gpu_target *t, const char *suite, const char *spec, cov_dtype dt, int top,
                               FILE *out) {
  gpu_layer layer;
  char found[4096], base[128];
  if (!suite) {
    COV_RETURN_IF_ERROR(cov_suite_find(found, sizeof found));
    suite = found;
  }
  /* SPEC:f16: the candidates of the layer with f16 outputs (hand-fixed as
   * SPEC:...:wsh) */
  const char *colon = strchr(spec, ':');
  bool f16 = colon && !strcmp(colon, ":f16");
  if (colon && (!f16 || (size_t)(colon - spec) >= sizeof base))
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, spec), "layer '%s': candidates take NAME or NAME:f16", spec);
  if (f16) {
    memcpy(base, spec, (size_t)(colon - spec));
    base[colon - spec] = '\0';
    spec = base;
  }
  COV_RETURN_IF_ERROR(gpu_layer_from_spec(suite, spec, dt, &layer));
  layer.prob.out_f16 = f16;
  if (layer.prob.kind == GPU_OP_MAXPOOL)
    return cov_error(COV_UNSUPPORTED, GPU_LOC(suite, layer.name), "layer %s: a pool has no schedule to search", layer.name);
  gpu_tune_cand *c = malloc(sizeof *c * (size_t)top);
  if (!c) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int n = 0;
  cov_status st = gpu_tune_candidates(t, &layer.prob, top, c, &n);
  for (int i = 0; !st && i < n; i++) {
    const int *v = c[i].sched.s;
    char sched[64];
    gpu_sched_format(&c[i].sched, sched, sizeof sched);
    /* the kernel's name as gpu_compile_layer gives the hand-fixed spec */
    const char *kind = !v[6] ? "" : v[6] == 2 ? "ws0" : v[6] >= 3 ? "ws" : v[7] < 0 ? "wg" : v[7] ? "wg1" : "wg0";
    const char *h = f16 ? "h" : "", *pp = v[6] == 4 ? "p" : "";
    /* (gpu_sched_format writes :wsp; the h flag goes before p in the name) */
    if (v[6] == 4) sched[strlen(sched) - 1] = '\0';
    fprintf(out, "%s%s %s:%s%s%s covenant_%s_t%dx%dx%dw%dx%ds%d%s%s%s %d %.0f\n", spec, f16 ? ":f16" : "", spec, sched,
            h, pp, layer.name, v[0], v[1], v[2], v[3], v[4], v[5], kind, h, pp, c[i].rank, c[i].cycles);
  }
  free(c);
  return st;
}

typedef struct report_row {
  char kernel[128], view[64], vg[16], ag[16], occ[32], plan[256];
  unsigned shared;
  double roofline;
} report_row;

static void print_report(FILE *f, const report_row *rows, int n) {
  int wk = 6, wv = 9;
  for (int i = 0; i < n; i++) {
    if ((int)strlen(rows[i].kernel) > wk) wk = (int)strlen(rows[i].kernel);
    if ((int)strlen(rows[i].view) > wv) wv = (int)strlen(rows[i].view);
  }
  fprintf(f, "%-*s %-*s %10s %6s %6s %9s %12s  %s\n", wk, "kernel", wv, "GEMM-view", "shared B", "VGPR",
          "AGPR", "occupancy", "roofline us", "plan");
  for (int i = 0; i < n; i++)
    fprintf(f, "%-*s %-*s %10u %6s %6s %9s %12.2f  %s\n", wk, rows[i].kernel, wv, rows[i].view,
            rows[i].shared, rows[i].vg, rows[i].ag, rows[i].occ, rows[i].roofline, rows[i].plan);
}

/* A kernel whose schedule came from the tuning file says so: in its
 * manifest entry ("tuned": the schedule) and in the notes. */
static void note_tuned(const gpu_target *t, const cov_gpu_options *opts, const gpu_plan *plan, int hand_fixed,
                       const char *kernel, json_t *k) {
  if (!t->tuning || hand_fixed || plan->prob.kind == GPU_OP_MAXPOOL || plan->dw) return;
  char key[GPU_TUNE_KEY_MAX];
  gpu_tune_key(&plan->prob, cov_acg_name(t->acg), key, sizeof key);
  const gpu_tune_entry *e = gpu_tuning_find(t->tuning, key);
  if (!e) return;
  json_object_set_new(k, "tuned", json_string(e->schedule));
  if (opts->notes) fprintf(opts->notes, "note: %s: schedule %s from the tuning file %s\n", kernel, e->schedule, t->tuning->file);
}

cov_status gpu_compile(gpu_vendors vendors, const cov_gpu_options *opts, const char *const *specs, int n_specs,
                       const char *out_dir, FILE *report) {
  gpu_target t;
  cov_dtype dt = opts->dtype ? opts->dtype : COV_F16;
  COV_RETURN_IF_ERROR(gpu_target_open(vendors, opts->target, dt, &t));
  cov_status st = gpu_tuning_attach(&t, opts);
  if (!st) st = gpu_mkdir_p(out_dir);
  size_t len0 = n_specs == 1 ? strlen(specs[0]) : 0;
  if (!st && len0 > 5 && !strcmp(specs[0] + len0 - 5, ".onnx")) {
    /* a whole model: its kernels, buffers, launch sequence and manifest
     * (gpu_mplan.h) */
    cov_model *m = NULL;
    gpu_model_plan mp;
    st = cov_model_load_file(specs[0], NULL, &m);
    if (!st) st = gpu_model_compile_with(m, specs[0], &t, 1, &mp);
    if (!st) {
      st = gpu_model_plan_write(&mp, specs[0], out_dir, report);
      /* the same plan as one artifact for covenant-run (OUT/model.covart) */
      char art[4096];
      snprintf(art, sizeof art, "%s/model.covart", out_dir);
      if (!st) st = gpu_model_plan_artifact(&mp, specs[0], art);
      gpu_model_plan_free(&mp);
    }
    cov_model_free(m);
    gpu_target_close(&t);
    return st;
  }
  int jit = t.vendor->jit_registers;
  json_t *man = json_object(), *kernels = json_array();
  json_object_set_new(man, "target", json_string(cov_acg_name(t.acg)));
  json_object_set_new(man, "mcpu", json_string(t.acg->backend.mcpu));
  json_object_set_new(man, "kernels", kernels);
  /* The report's rows, printed at the end with columns as wide as their
   * longest entry (model kernels have long names, big GEMM views). */
  report_row *rows = NULL;
  int n_rows = 0;
  /* specs, with every MODEL.onnx expanded into its layer groups */
  gpu_layer *model_layers = NULL;
  int n_model = 0, model_i = 0, spec_i = 0;
  while (!st) {
    gpu_layer layer;
    gpu_plan plan;
    char *code = NULL;
    size_t n = 0;
    gpu_kernel_info info;
    int hand_fixed = 0;
    if (model_i < n_model) {
      layer = model_layers[model_i++];
      st = gpu_compile_layer(&t, opts, &layer, NULL, &plan, &code, &n, &info);
    } else {
      free(model_layers), model_layers = NULL, n_model = model_i = 0;
      if (spec_i >= n_specs) break;
      const char *spec = specs[spec_i++];
      size_t len = strlen(spec);
      if (len > 5 && !strcmp(spec + len - 5, ".onnx")) {
        st = cov_error(COV_INVALID_ARGUMENT, GPU_LOC(spec, NULL),
                       "a model is compiled alone (it writes its own manifest); give it without other layers");
        break;
      }
      if (gpu_attn_is_spec(spec)) { /* fused attention (gpu_attn.h): its own kernel and entry */
        json_t *e = NULL;
        st = gpu_attn_compile(&t, opts, spec, out_dir, &e);
        if (!st) json_array_append_new(kernels, e);
        continue;
      }
      hand_fixed = strchr(spec, ':') != NULL;
      st = gpu_compile_one(&t, opts, spec, &layer, &plan, &code, &n, &info);
    }
    if (st) break;
    json_t *k = NULL;
    char kname[128];
    st = gpu_write_kernel(&t, out_dir, layer.name, &plan, code, n, &k, kname);
    free(code);
    if (st) break;
    json_object_set_new(k, "unfused", json_string(layer.unfused));
    note_tuned(&t, opts, &plan, hand_fixed, kname, k);
    json_array_append_new(kernels, k);
    if (report) {
      /* occupancy: workgroups per SM/CU that shared memory allows; AMD also
       * waves per SIMD that the registers allow (512 per lane, granule 8) */
      char occ[32];
      long wg = plan.shared_bytes ? (long)(t.caps.shared_bytes / plan.shared_bytes) : 0;
      if (jit) {
        snprintf(occ, sizeof occ, "%ld WG/SM", wg);
      } else {
        long regs = info.vgprs + (info.agprs > 0 ? info.agprs : 0);
        long granule = (regs + 7) / 8 * 8, waves = granule > 0 ? 512 / granule : 0;
        if (waves > 8) waves = 8;
        snprintf(occ, sizeof occ, "%ldw/SIMD", waves);
      }
      char view[32], vg[16], ag[16];
      snprintf(view, sizeof view, "%lldx%lldx%lld", (long long)plan.M, (long long)plan.N, (long long)plan.K);
      snprintf(vg, sizeof vg, "%ld", info.vgprs);
      snprintf(ag, sizeof ag, "%ld", info.agprs);
      report_row *more = realloc(rows, (size_t)(n_rows + 1) * sizeof *rows);
      if (!more) {
        st = cov_error(COV_OUT_OF_MEMORY, NULL, "report");
        break;
      }
      rows = more;
      report_row *r = &rows[n_rows++];
      snprintf(r->kernel, sizeof r->kernel, "%s", kname);
      snprintf(r->view, sizeof r->view, "%s", view);
      snprintf(r->vg, sizeof r->vg, "%s", jit ? "jit" : vg);
      snprintf(r->ag, sizeof r->ag, "%s", jit ? "-" : ag);
      snprintf(r->occ, sizeof r->occ, "%s", occ);
      snprintf(r->plan, sizeof r->plan, "%s", json_string_value(json_object_get(k, "plan")));
      r->shared = plan.shared_bytes;
      r->roofline = roofline_us(&t, &plan);
    }
  }
  if (report && n_rows) print_report(report, rows, n_rows);
  free(rows);
  free(model_layers);
  if (!st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", out_dir);
    st = common_write_json(path, man, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  }
  json_decref(man);
  gpu_target_close(&t);
  return st;
}

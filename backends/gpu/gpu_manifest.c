/* backends/gpu/gpu_manifest.c: the layer manifest's writer (gpu_manifest.h):
 * a plan's description, a kernel's launch, its code object written with
 * its entry, and the directories they go in. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_vendor.h"
#include "common/fileio.h"

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

/* How plan p's kernel reads its A operand and stores its output. */
static void io_json(json_t *o, const gpu_plan *p) {
  const gpu_problem *q = &p->prob;
  if (p->out_f16) json_object_set_new(o, "out_dtype", json_string("f16"));
  /* the A operand's prologue: another kernel (argument 7 the gate) */
  if (q->a_pro) json_object_set_new(o, "a_prologue", json_string(q->a_pro == GPU_APRO_GATE ? "gate" : "cast"));
  if (p->out_rq) { /* output row m at (m / q) * r1 + (m % q) * r0 */
    json_t *r = json_array();
    json_array_append_new(r, json_integer(p->out_rq));
    json_array_append_new(r, json_integer(p->out_r0));
    json_array_append_new(r, json_integer(p->out_r1));
    json_object_set_new(o, "out_rows", r);
  }
  /* channels-last tensors (@cl): the input is taken as [N][H][W][C] (no
   * "pre" transform), the output is [N][OH][OW][K] (NCHW f32 with a
   * residual addend); NHWC outputs of the NCHW gather (nhwc_out) too */
  if (gpu_conv_out_nhwc(q)) json_object_set_new(o, "out_layout", json_string("nhwc"));
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
  static const char *acts[] = {"none", "relu", "clip", "gelu", "hswish", "hsigmoid", "silu", "gelu_tanh"};
  json_object_set_new(o, "bias", json_boolean(q->epi.bias));
  json_object_set_new(o, "act", json_string(acts[q->epi.act]));
  if (q->epi.act == GPU_ACT_CLIP || q->epi.act == GPU_ACT_HSIGMOID) { /* HSIGMOID: alpha, beta */
    json_object_set_new(o, "clip_lo", json_real(q->epi.clip_lo));
    json_object_set_new(o, "clip_hi", json_real(q->epi.clip_hi));
  }
  json_object_set_new(o, "maxpool2x2", json_boolean(q->epi.maxpool2x2));
  json_object_set_new(o, "softmax", json_boolean(q->epi.softmax));
  if (q->epi.residual) /* the addend: kernel argument 6 */
    json_object_set_new(o, "residual", json_true());
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
  io_json(o, p);
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
  if (gpu_split_of(p) > 1) {
    size_t len = strlen(plan);
    snprintf(plan + len, sizeof plan - len, ", split-K %d x %d K tiles", p->split, p->split_kt);
    json_object_set_new(o, "split", json_integer(p->split));
  }
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

/* backends/gpu/gpu_layer_compile.c: one suite layer compiled: planned by
 * the mapper (or a hand-fixed schedule), lowered and emitted (depthwise
 * convolutions with their fixed kernel). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_tune.h"

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
                        out_f16 != 0, wg == 4, 1};
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

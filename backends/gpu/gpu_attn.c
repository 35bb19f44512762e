/* backends/gpu/gpu_attn.c: `covenant gpu compile attn_BxHxSxD[:BMxWM[xBN][p|c]]`: the
 * fused attention kernel of gpu_lower_attn.c as a layer of the manifest
 * (kind "attention"; kernel arguments Q, K, V, O, all [B*H][S][D]). */
#include <string.h>

#include "backends/gpu/gpu_attn.h"
#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_vendor.h"
#include "mapper/map_gpu.h"

int gpu_attn_is_spec(const char *spec) { return !strncmp(spec, "attn_", 5); }

static cov_status parse_spec(const char *spec, long long v[4], int *bm, int *wm, int *bn, bool *pipe, bool *chain) {
  int end = 0;
  *bm = *wm = *bn = 0;
  *pipe = *chain = false;
  int n = sscanf(spec, "attn_%lldx%lldx%lldx%lld%n", &v[0], &v[1], &v[2], &v[3], &end);
  const char *rest = n == 4 ? spec + end : "?";
  int e2 = 0;
  int e3 = 0;
  bool ok = !*rest;
  if (!ok && sscanf(rest, ":%dx%d%n", bm, wm, &e2) == 2 && *bm > 0 && *wm > 0) {
    rest += e2;
    if (sscanf(rest, "x%d%n", bn, &e3) == 1 && *bn > 0) rest += e3;
    if (*rest == 'p') *pipe = true, rest++;
    if (*rest == 'c') *chain = true, rest++;
    ok = !*rest;
  }
  if (!ok)
    return cov_error(COV_INVALID_ARGUMENT, GPU_LOC(NULL, spec),
                     "layer '%s': fused attention is written attn_BxHxSxD[:BMxWM[xBN][p|c]] (batch, heads, sequence, "
                     "head dim; BM query rows per workgroup, WM per warp, BN keys per block, p: pipelined, c: "
                     "chained)",
                     spec);
  return NULL;
}

static json_t *attn_json(const gpu_attn *a, json_t *k) {
  json_object_set_new(k, "kind", json_string("attention"));
  json_object_set_new(k, "dtype", json_string(cov_dtype_name(a->in_dtype)));
  const char *keys[] = {"B", "H", "S", "D"};
  int64_t vals[] = {a->batch, a->heads, a->seq, a->dim};
  for (int i = 0; i < 4; i++) json_object_set_new(k, keys[i], json_integer(vals[i]));
  json_object_set_new(k, "scale", json_real(a->scale));
  json_object_set_new(k, "out_dtype", json_string(cov_dtype_name(a->in_dtype)));
  gpu_launch_json(k, a->grid, a->threads, a->shared_bytes);
  char plan[256];
  snprintf(plan, sizeof plan,
           "fused attention: %d query rows (%d per warp) x %d keys per step, online softmax in registers, "
           "matrix 16x8x16, K/V double-buffered 16-byte async copies%s",
           a->bm, a->wm, a->bn,
           a->pipe    ? ", softmax overlapped with the previous block's P V"
           : a->chain ? ", each block's P V issued with the next block's S"
                      : "");
  json_object_set_new(k, "plan", json_string(plan));
  return k;
}

cov_status gpu_attn_compile(const gpu_target *t, const cov_gpu_options *opts, const char *spec, const char *out_dir,
                            json_t **entry) {
  *entry = NULL;
  long long v[4];
  int bm, wm, bn;
  bool pipe, chain;
  COV_RETURN_IF_ERROR(parse_spec(spec, v, &bm, &wm, &bn, &pipe, &chain));
  if (!bm && !wm) { /* the mapper plans the tile; a spec's :BMxWM[xBN] fixes it */
    const gpu_target_ops *o = t->ops;
    map_gpu_attn_problem mp = {.batch = v[0], .heads = v[1], .seq = v[2], .dim = v[3]};
    map_gpu_attn_sched ms;
    cov_status st = map_gpu_attn_plan(t->acg, &mp, o->wg_mma_bt && o->wg_mma_ra && o->async_proxy_fence, spec, &ms);
    if (st) return cov_status_annotate(st, "layer %s: ", spec);
    bm = ms.bm, wm = ms.wm, bn = ms.bn, pipe = ms.pipe, chain = ms.chain;
  }
  gpu_attn a;
  COV_RETURN_IF_ERROR(
      gpu_attn_plan(v[0], v[1], v[2], v[3], opts->dtype ? opts->dtype : COV_F16, bm, wm, bn, pipe, chain, t->ops, spec,
                   &a));
  char name[96], kernel[128];
  snprintf(name, sizeof name, "attn_%lldx%lldx%lldx%lld_q%dw%d", v[0], v[1], v[2], v[3], a.bm, a.wm);
  if (a.bn != 64) snprintf(name + strlen(name), sizeof name - strlen(name), "k%d", a.bn);
  if (a.pipe) snprintf(name + strlen(name), sizeof name - strlen(name), "p");
  if (a.chain) snprintf(name + strlen(name), sizeof name - strlen(name), "c");
  snprintf(kernel, sizeof kernel, "covenant_%s", name);
  gpu_plan vp;
  gpu_attn_vendor_plan(&a, &vp);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(kernel, ctx);
  char *code = NULL;
  size_t n = 0;
  gpu_kernel_info info;
  memset(&info, 0, sizeof info);
  cov_status st = gpu_lower_attn(&a, t->ops, mod, kernel);
  if (!st) st = t->vendor->build(mod, t->acg, &vp, opts->code_object_version, &code, &n, &info);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  json_t *k = NULL;
  if (!st) st = gpu_write_kernel(t, out_dir, name, &vp, code, n, &k, NULL);
  free(code);
  if (st) return cov_status_annotate(st, "layer %s: ", spec);
  /* the entry's name, kernel and file; the description is attention's */
  json_t *e = json_object();
  const char *keep[] = {"name", "kernel", "file"};
  for (int i = 0; i < 3; i++) json_object_set(e, keep[i], json_object_get(k, keep[i]));
  json_decref(k);
  *entry = attn_json(&a, e);
  return NULL;
}

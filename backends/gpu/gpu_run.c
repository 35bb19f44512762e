/* backends/gpu/gpu_run.c: cov_gpu_run: compile for a GPU target, run
 * through its runtime (NVIDIA: the CUDA driver API; AMD: the HIP module
 * API; both dlopen'ed), check against the CPU reference. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_ref.h"
#include "backends/gpu/gpu_run.h"
#include "backends/gpu/gpu_vendor.h"
#include "covenant/tensor.h"

/* Deterministic inputs: a 64-bit LCG, values in [-1, 1) rounded to the
 * input dtype (so the reference sees exactly what the GPU sees). */
static float next_val(uint64_t *s, cov_dtype dt) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  float v = (float)((double)(*s >> 11) / (double)(1ULL << 53) * 2.0 - 1.0);
  if (dt == COV_F16) return cov_f16_to_f32(cov_f32_to_f16(v));
  if (dt == COV_BF16) return cov_bf16_to_f32(cov_f32_to_bf16(v));
  return v;
}

static void *pack(const float *v, size_t n, cov_dtype dt) {
  size_t es = cov_dtype_size(dt);
  unsigned char *p = malloc(n * es + 1);
  if (!p) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (dt == COV_F32) {
      memcpy(p + 4 * i, &v[i], 4);
    } else {
      uint16_t h = dt == COV_F16 ? cov_f32_to_f16(v[i]) : cov_f32_to_bf16(v[i]);
      memcpy(p + 2 * i, &h, 2);
    }
  }
  return p;
}

/* f16 outputs (plan.out_f16), downloaded into the first half of `out`'s
 * no floats: widened to f32 in place from the back, and channels-last
 * ones ([N][OH][OW][K], prob.nhwc_io or nhwc_out) reordered to NCHW for the reference. */
static cov_status unpack_f16_out(const gpu_plan *plan, float *out, size_t no) {
  const uint16_t *h = (const uint16_t *)out;
  for (size_t i = no; i-- > 0;) {
    uint16_t x;
    memcpy(&x, &h[i], 2);
    out[i] = cov_f16_to_f32(x);
  }
  if (!gpu_conv_out_nhwc(&plan->prob)) return NULL; /* out_f16: no residual here */
  float *t = malloc(no * 4 + 4);
  if (!t) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for the channels-last output");
  memcpy(t, out, no * 4);
  const gpu_problem *q = &plan->prob;
  int64_t hw = plan->oh * plan->ow;
  for (int64_t n = 0; n < q->cn; n++)
    for (int64_t c = 0; c < q->ck; c++)
      for (int64_t i = 0; i < hw; i++) out[(n * q->ck + c) * hw + i] = t[(n * hw + i) * q->ck + c];
  free(t);
  return NULL;
}

/* The input in the kernel's dtype: NCHW, or NHWC for channels-last
 * tensors (prob.nhwc_io: the kernel reads it as given). */
static void *pack_input(const gpu_plan *plan, const float *a, size_t na) {
  const gpu_problem *q = &plan->prob;
  if (!q->nhwc_io) return pack(a, na, q->in_dtype);
  float *an = malloc(na * 4 + 4);
  if (!an) return NULL;
  int64_t hw = q->ch * q->cw;
  for (int64_t n = 0; n < q->cn; n++)
    for (int64_t c = 0; c < q->cc; c++)
      for (int64_t i = 0; i < hw; i++) an[(n * hw + i) * q->cc + c] = a[(n * q->cc + c) * hw + i];
  void *p = pack(an, na, q->in_dtype);
  free(an);
  return p;
}

/* The target vendor's runtime (gpu_vendor.h) behind one face. */
cov_status gpu_device_open(const gpu_target *t, const char *target, gpu_device *dev) {
  memset(dev, 0, sizeof *dev);
  cov_status st = t->vendor->open(&dev->rt);
  if (st) return cov_status_annotate(st, "cannot run on %s: ", target);
  dev->v = t->vendor;
  return NULL;
}
void gpu_device_close(gpu_device *dev) {
  if (dev->v) dev->v->close(dev->rt);
  dev->v = NULL, dev->rt = NULL;
}
const char *gpu_device_name(const gpu_device *dev) { return dev->v->device_name(dev->rt); }

static cov_status dev_alloc(gpu_device *d, size_t n, uint64_t *out) { return d->v->alloc(d->rt, n, out); }
static void dev_free(gpu_device *d, uint64_t p) {
  if (p) d->v->free(d->rt, p);
}
static cov_status dev_upload(gpu_device *d, uint64_t dst, const void *src, size_t n) {
  return d->v->upload(d->rt, dst, src, n);
}
static cov_status dev_download(gpu_device *d, void *dst, uint64_t src, size_t n) {
  return d->v->download(d->rt, dst, src, n);
}
static cov_status dev_load(gpu_device *d, const char *code, void **mod) { return d->v->load(d->rt, code, mod); }
static void dev_unload(gpu_device *d, void *mod) { d->v->unload(d->rt, mod); }
static cov_status dev_launch(gpu_device *d, void *mod, const char *kernel, const unsigned grid[3],
                             const unsigned block[3], unsigned shared, void **args, float *ms) {
  return d->v->launch(d->rt, mod, kernel, grid, block, shared, args, ms);
}

cov_status gpu_launch_layer(gpu_device *dev, const gpu_plan *plan, const char *code, const char *kernel,
                            const float *a, const float *b, const float *bias, float *out, float *ms) {
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(plan, &na, &nb, &no, &nbias);
  cov_dtype dt = plan->prob.in_dtype;
  void *pa = NULL, *pb = NULL;
  uint64_t da = 0, db = 0, dout = 0, dbias = 0, dws = 0;
  void *mod = NULL;
  cov_status st = NULL;
  *ms = 0;
  /* channels-last: the weights as [R][S][C][K] (reordered once, like
   * constants at load time); the input goes through the transform kernel */
  if (plan->dw && nb) { /* depthwise: [C][1][R][S] as [R][S][C] */
    const gpu_problem *q = &plan->prob;
    float *bw = malloc(nb * 4 + 4);
    if (!bw) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s's weights", kernel);
    int64_t rs = q->cr * q->cs;
    for (int64_t c = 0; c < q->cc; c++)
      for (int64_t t = 0; t < rs; t++) bw[t * q->cc + c] = b[c * rs + t];
    pb = pack(bw, nb, dt);
    free(bw);
  } else if (plan->nhwc && nb) {
    const gpu_problem *q = &plan->prob;
    float *bw = malloc(nb * 4 + 4);
    if (!bw) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s's weights", kernel);
    int64_t rs = q->cr * q->cs;
    for (int64_t o = 0; o < q->ck; o++)
      for (int64_t c = 0; c < q->cc; c++)
        for (int64_t t = 0; t < rs; t++) bw[(t * q->cc + c) * q->ck + o] = b[(o * q->cc + c) * rs + t];
    pb = pack(bw, nb, dt);
    free(bw);
  } else {
    pb = pack(b, nb, dt);
  }
  pa = pack_input(plan, a, na);
  if (!pa || !pb) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s's buffers", kernel);
    goto done;
  }
  /* zeros: the pooled max reduces into them */
  memset(out, 0, no * 4);
  size_t es = cov_dtype_size(dt);
  /* a pool has no weights or bias: one-element buffers keep the ABI */
  size_t nb1 = nb ? nb : 1, nbias1 = nbias ? nbias : 1;
  if ((st = dev_alloc(dev, na * es, &da)) || (st = dev_alloc(dev, nb1 * es, &db)) ||
      (st = dev_alloc(dev, no * 4, &dout)) || (st = dev_alloc(dev, nbias1 * 4, &dbias)) ||
      (plan->nhwc && !plan->prob.nhwc_io && (st = dev_alloc(dev, na * es, &dws))) ||
      (st = dev_upload(dev, da, pa, na * es)) || (nb && (st = dev_upload(dev, db, pb, nb * es))) ||
      (nbias && (st = dev_upload(dev, dbias, bias, nbias * 4))) || (st = dev_upload(dev, dout, out, no * 4)) ||
      (st = dev_load(dev, code, &mod)))
    goto done;
  void *args[4] = {&da, &db, &dout, &dbias};
  unsigned block[3] = {(unsigned)plan->threads, 1, 1};
  if (plan->nhwc && !plan->prob.nhwc_io) {
    uint64_t none = 0;
    void *pre_args[4] = {&da, &none, &dws, &none};
    unsigned pre_grid[3], pre_block[3] = {GPU_NHWC_THREADS, 1, 1};
    char pre[160];
    float pre_ms = 0;
    gpu_nhwc_grid(plan, pre_grid);
    snprintf(pre, sizeof pre, "%s_nhwc", kernel);
    if ((st = dev_launch(dev, mod, pre, pre_grid, pre_block, gpu_nhwc_shared_bytes(), pre_args, &pre_ms)))
      goto done;
    args[0] = &dws;
    *ms = pre_ms; /* the layer's time includes its transform */
  }
  float conv_ms = 0;
  if ((st = dev_launch(dev, mod, kernel, plan->grid, block, plan->shared_bytes, args, &conv_ms)) ||
      (st = dev_download(dev, out, dout, no * (plan->out_f16 ? 2 : 4))))
    goto done;
  *ms += conv_ms;
  if (plan->out_f16) st = unpack_f16_out(plan, out, no);
done:
  if (mod) dev_unload(dev, mod);
  dev_free(dev, da), dev_free(dev, db), dev_free(dev, dout), dev_free(dev, dbias), dev_free(dev, dws);
  free(pa), free(pb);
  return st;
}

/* One suite layer on seeded random inputs, against the loop nest. */
static cov_status run_one(gpu_device *dev, const gpu_plan *plan, const char *code, const char *kernel,
                          double *max_rel, float *ms) {
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(plan, &na, &nb, &no, &nbias);
  cov_dtype dt = plan->prob.in_dtype;
  float *a = malloc(na * 4), *b = malloc(nb * 4 + 4), *bias = malloc(nbias * 4 + 4), *want = malloc(no * 4),
        *got = calloc(no, 4);
  cov_status st = NULL;
  if (!a || !b || !bias || !want || !got) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s's buffers", kernel);
    goto done;
  }
  uint64_t seed = 42;
  for (size_t i = 0; i < na; i++) a[i] = next_val(&seed, dt);
  for (size_t i = 0; i < nb; i++) b[i] = next_val(&seed, dt);
  for (size_t i = 0; i < nbias; i++) bias[i] = next_val(&seed, COV_F32);
  if ((st = gpu_launch_layer(dev, plan, code, kernel, a, b, bias, got, ms))) goto done;
  gpu_reference(plan, a, b, bias, want);
  double scale = 0, err = 0;
  for (size_t i = 0; i < no; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < no; i++) {
    double d = fabs((double)got[i] - want[i]);
    if (!(d <= err)) err = d; /* NaN propagates */
  }
  *max_rel = err / (scale > 0 ? scale : 1);
done:
  free(a), free(b), free(bias), free(want), free(got);
  return st;
}

cov_status gpu_run(gpu_vendors vendors, const cov_gpu_options *opts, const char *const *specs, int n_specs,
                   FILE *out) {
  gpu_target t;
  COV_RETURN_IF_ERROR(gpu_target_open(vendors, opts->target, opts->dtype ? opts->dtype : COV_F16, &t));
  gpu_device dev;
  cov_status st = gpu_device_open(&t, opts->target, &dev);
  if (st) {
    gpu_target_close(&t);
    return st;
  }
  fprintf(out, "device: %s\n", gpu_device_name(&dev));
  int failed = 0;
  for (int i = 0; i < n_specs && !st; i++) {
    gpu_layer layer;
    gpu_plan plan;
    char *ptx = NULL;
    size_t n = 0;
    gpu_kernel_info info;
    st = gpu_compile_one(&t, opts, specs[i], &layer, &plan, &ptx, &n, &info);
    if (st) break;
    char kernel[128];
    snprintf(kernel, sizeof kernel, "covenant_%s", layer.name);
    double rel = 0;
    float ms = 0;
    st = run_one(&dev, &plan, ptx, kernel, &rel, &ms);
    free(ptx);
    if (st) break;
    int ok = rel <= 1e-3;
    failed += !ok;
    double tflops = plan.prob.kind == GPU_OP_MAXPOOL ? 0 : 2.0 * (double)plan.G * (double)plan.M * (double)plan.N * (double)plan.K / (ms * 1e-3) / 1e12;
    fprintf(out, "%-32s %s  max rel err %.3g  %.3f ms  %.2f TFLOP/s", layer.name, ok ? "ok  " : "FAIL", rel, ms,
            tflops);
    if (layer.unfused[0]) fprintf(out, "  (not fused, not run: %s)", layer.unfused);
    fprintf(out, "\n");
  }
  gpu_device_close(&dev);
  gpu_target_close(&t);
  if (!st && failed)
    st = cov_error(COV_INTERNAL, GPU_LOC(opts->suite, NULL), "%d layer(s) differ from the CPU reference by more than 1e-3", failed);
  return st;
}

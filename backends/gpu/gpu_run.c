/* backends/gpu/gpu_run.c: cov_gpu_run: compile for an NVIDIA target, run
 * through the CUDA driver API, check against the CPU reference. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_ref.h"
#include "backends/nvptx/nvptx_cuda.h"
#include "backends/nvptx/nvptx_target.h"
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

static cov_status run_one(nvptx_cuda *cu, const gpu_plan *plan, const char *ptx, const char *kernel,
                          double *max_rel, float *ms) {
  size_t na, nb, no, nbias;
  gpu_buffer_sizes(plan, &na, &nb, &no, &nbias);
  cov_dtype dt = plan->prob.in_dtype;
  float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc(nbias * 4), *want = malloc(no * 4),
        *got = calloc(no, 4);
  void *pa = NULL, *pb = NULL;
  nvptx_devptr da = 0, db = 0, dout = 0, dbias = 0;
  nvptx_module *mod = NULL;
  cov_status st = NULL;
  if (!a || !b || !bias || !want || !got) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory for %s's buffers", kernel);
    goto done;
  }
  uint64_t seed = 42;
  for (size_t i = 0; i < na; i++) a[i] = next_val(&seed, dt);
  for (size_t i = 0; i < nb; i++) b[i] = next_val(&seed, dt);
  for (size_t i = 0; i < nbias; i++) bias[i] = next_val(&seed, COV_F32);
  pa = pack(a, na, dt), pb = pack(b, nb, dt);
  if (!pa || !pb) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    goto done;
  }
  size_t es = cov_dtype_size(dt);
  if ((st = nvptx_cuda_alloc(cu, na * es, &da)) || (st = nvptx_cuda_alloc(cu, nb * es, &db)) ||
      (st = nvptx_cuda_alloc(cu, no * 4, &dout)) || (st = nvptx_cuda_alloc(cu, nbias * 4, &dbias)) ||
      (st = nvptx_cuda_upload(cu, da, pa, na * es)) || (st = nvptx_cuda_upload(cu, db, pb, nb * es)) ||
      (st = nvptx_cuda_upload(cu, dbias, bias, nbias * 4)) ||
      (st = nvptx_cuda_upload(cu, dout, got, no * 4)) || /* zeros: the pooled max needs them */
      (st = nvptx_cuda_load(cu, ptx, &mod)))
    goto done;
  void *args[4] = {&da, &db, &dout, &dbias};
  unsigned block[3] = {(unsigned)plan->threads, 1, 1};
  if ((st = nvptx_cuda_launch(cu, mod, kernel, plan->grid, block, plan->shared_bytes, args, ms)) ||
      (st = nvptx_cuda_download(cu, got, dout, no * 4)))
    goto done;
  gpu_reference(plan, a, b, bias, want);
  double scale = 0, err = 0;
  for (size_t i = 0; i < no; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < no; i++) {
    double d = fabs((double)got[i] - want[i]);
    if (!(d <= err)) err = d; /* NaN propagates */
  }
  *max_rel = err / (scale > 0 ? scale : 1);
done:
  if (mod) nvptx_cuda_unload(cu, mod);
  if (da) nvptx_cuda_free(cu, da);
  if (db) nvptx_cuda_free(cu, db);
  if (dout) nvptx_cuda_free(cu, dout);
  if (dbias) nvptx_cuda_free(cu, dbias);
  free(a), free(b), free(bias), free(want), free(got), free(pa), free(pb);
  return st;
}

cov_status cov_gpu_run(const cov_gpu_options *opts, const char *const *specs, int n_specs, FILE *out) {
  gpu_target t;
  COV_RETURN_IF_ERROR(gpu_target_open(opts->target, opts->dtype ? opts->dtype : COV_F16, &t));
  if (t.ops != &nvptx_target_ops) {
    gpu_target_close(&t);
    return cov_error(COV_UNSUPPORTED, NULL,
                     "running on %s is not implemented: covenant runs GPU kernels on NVIDIA targets only "
                     "(the HIP runtime path for AMDGPU is not written yet)",
                     opts->target);
  }
  nvptx_cuda *cu = NULL;
  cov_status st = nvptx_cuda_open(&cu);
  if (st) {
    gpu_target_close(&t);
    return cov_status_annotate(st, "cannot run on %s: ", opts->target);
  }
  fprintf(out, "device: %s\n", nvptx_cuda_device_name(cu));
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
    st = run_one(cu, &plan, ptx, kernel, &rel, &ms);
    free(ptx);
    if (st) break;
    int ok = rel <= 1e-3;
    failed += !ok;
    double tflops = 2.0 * (double)plan.G * (double)plan.M * (double)plan.N * (double)plan.K / (ms * 1e-3) / 1e12;
    fprintf(out, "%-32s %s  max rel err %.3g  %.3f ms  %.2f TFLOP/s", layer.name, ok ? "ok  " : "FAIL", rel, ms,
            tflops);
    if (layer.unfused[0]) fprintf(out, "  (not fused, not run: %s)", layer.unfused);
    fprintf(out, "\n");
  }
  nvptx_cuda_close(cu);
  gpu_target_close(&t);
  if (!st && failed)
    st = cov_error(COV_INTERNAL, NULL, "%d layer(s) differ from the CPU reference by more than 1e-3", failed);
  return st;
}

/* tests/arch/test_registry.c SRCDIR: the backend registry. Targets open to
 * the backend their ACG's backend.name names (ref without an ACG, the
 * default target when none is given), the GPU rows carry their vendor (the
 * one gpu_target_open picks), a GPU target without the GPU backends is
 * refused with a located error, and the run_model entry points of ref and npu-sim reproduce
 * examples/convnet.onnx's numpy output (examples/make_convnet.py). Those of
 * the GPU backends run it on the device and must reproduce it too; without
 * a device they must refuse with the runtime's COV_DEVICE_ERROR. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/registry/backend_registry.h"
#include "covenant/acg.h"
#include "covenant/tensor.h"
#ifdef COV_HAVE_GPU_BACKENDS
#include "covenant/gpu.h"
#endif
#include "tests/check.h"

/* max |a - b| / max |b| over f32 tensors of the same size; INFINITY otherwise */
static double rel_err(const cov_tensor *a, const cov_tensor *b) {
  if (a->dtype != COV_F32 || b->dtype != COV_F32 || cov_tensor_numel(a) != cov_tensor_numel(b)) return INFINITY;
  double md = 0, mr = 0;
  for (int64_t i = 0; i < cov_tensor_numel(b); i++) {
    double x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
    if (!(fabs(x - y) <= md)) md = fabs(x - y);
    if (fabs(y) > mr) mr = fabs(y);
  }
  return md / (mr > 0 ? mr : 1);
}

static void check_run(const char *target, const char *src, double tol) {
  char path[4096];
  backend_target t;
  cov_status st = backend_target_open(target, &t);
  CHECK(!st);
  if (st) return cov_status_free(st);
  CHECK(t.backend->run_model != NULL);
  cov_model *m = NULL;
  cov_tensor in = {0}, want = {0}, got = {0};
  snprintf(path, sizeof path, "%s/examples/convnet.onnx", src);
  st = cov_model_load_file(path, NULL, &m);
  snprintf(path, sizeof path, "%s/examples/convnet_input.npy", src);
  if (!st) st = cov_npy_read(path, &in);
  snprintf(path, sizeof path, "%s/examples/convnet_output.npy", src);
  if (!st) st = cov_npy_read(path, &want);
  backend_report *rep = NULL;
  if (!st) st = t.backend->run_model(&t, NULL, m, "convnet.onnx", &in, 1, &got, 1, &rep);
  /* a report comes with the entries that read it; an NPU run's own check
   * of its programs passes */
  CHECK(!rep || (t.backend->report_check && t.backend->report_free));
  if (rep) {
    CHECK(t.backend->report_check(rep, stdout) == 1);
    t.backend->report_free(rep);
  }
  if (st && t.backend->gpu && cov_status_code(st) == COV_DEVICE_ERROR) {
    /* no GPU here: the runtime's clear refusal, nothing run (never an
     * emulation standing in for the device) */
    char msg[512];
    cov_status_format(st, msg, sizeof msg);
    printf("%s (%s): no device: %s\n", target, t.backend->name, msg);
    CHECK(strstr(msg, "no NVIDIA driver") || strstr(msg, "no HIP runtime") || strstr(msg, "initialisation"));
    CHECK(got.data == NULL);
    cov_status_free(st);
    st = NULL;
  } else if (st) {
    CHECK(!st);
    cov_status_print(stderr, st, 1), cov_status_free(st);
  } else {
    double e = rel_err(&got, &want);
    printf("%s (%s): max rel err %.3g vs numpy\n", target, t.backend->name, e);
    CHECK(e <= tol);
  }
  cov_tensor_release(&in), cov_tensor_release(&want), cov_tensor_release(&got);
  cov_model_free(m);
  backend_target_close(&t);
}

#ifdef COV_HAVE_GPU_BACKENDS
/* The public cov_gpu_* entry points check their target's backend section
 * as the registry's targets are (the loader does not): nvptx-sm90 with an
 * amdgpu-only field is refused at that field's line. */
static void check_public_gpu_refusal(const char *src) {
  char in[1024], path[] = "/tmp/cov_registry_acg_XXXXXX";
  snprintf(in, sizeof in, "%s/targets/nvptx-sm90.json", src);
  FILE *f = fopen(in, "rb");
  static char text[1 << 20];
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f) fclose(f);
  text[n] = '\0';
  char *be = strstr(text, "\"backend\": {");
  CHECK(be != NULL);
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (!be || fd < 0) return;
  FILE *out = fdopen(fd, "wb");
  be += strlen("\"backend\": {");
  fprintf(out, "%.*s\"code_object_version\": 5, %s", (int)(be - text), text, be);
  fclose(out);
  const char *specs[] = {"convnet_layer1"};
  cov_status st = cov_gpu_compile(&(cov_gpu_options){.target = path}, specs, 1, "/tmp/cov_registry_unused", NULL);
  CHECK(st && strstr(cov_status_message(st), "applies to the amdgpu backend only"));
  CHECK(st && cov_status_loc(st).line > 0 && cov_status_loc(st).path &&
        !strcmp(cov_status_loc(st).path, "$.backend.code_object_version"));
  cov_status_free(st);
  unlink(path);
}
#endif

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_registry SRCDIR\n");
    return 2;
  }
  const char *src = argv[1];
  backend_target t;

  /* ref: no ACG */
  CHECK(!backend_target_open(BACKEND_REF, &t));
  CHECK_STR(t.backend->name, "ref");
  CHECK(t.acg == NULL);
  backend_target_close(&t);

  /* no target: the default, an NPU */
  CHECK(!backend_target_open(NULL, &t));
  CHECK_STR(t.backend->name, "npu-sim");
  CHECK_STR(cov_acg_name(t.acg), BACKEND_DEFAULT_TARGET);
  CHECK(t.backend->gpu == NULL && (t.backend->ops & BACKEND_VERIFY));
  backend_target_close(&t);

  /* every row is found by its name, names are unique */
  for (int i = 0; i < backend_count(); i++) {
    CHECK(backend_find(backend_at(i)->name) == backend_at(i));
    const backend_info *b = backend_at(i);
    CHECK(b->run_model != NULL); /* every backend runs models */
    CHECK(b->name && b->summary && b->kind);
    /* what a row says it does, it has the entries for */
    CHECK(!(b->ops & BACKEND_COMPILE) || (b->compile_layers && b->compile_model));
    CHECK(!(b->ops & BACKEND_VERIFY) || (b->open_layer && b->run_layer && b->close_layer));
    /* the report entries come all together or not at all */
    int nrep = !!b->report_summary + !!b->report_check + !!b->report_details + !!b->report_times + !!b->report_free;
    CHECK(nrep == 0 || nrep == 5);
  }
  char names[160];
  CHECK_STR(backend_option_names(BACKEND_OPT_SCALE, names, sizeof names), "--scale");
  CHECK_STR(backend_option_names(BACKEND_OPT_DTYPE | BACKEND_OPT_REPORT | BACKEND_OPT_TUNING, names, sizeof names),
            "--dtype, --report and --tuning");
  CHECK(backend_find("tpu") == NULL);
  CHECK(backend_at(backend_count()) == NULL);

#ifdef COV_HAVE_GPU_BACKENDS
  /* GPU targets: their vendor (covenant compile/run take the GPU path by it) */
  const char *gpus[][2] = {{"nvptx-sm90", "nvptx"}, {"amdgpu-gfx942", "amdgpu"}, {"amdgpu-gfx90a", "amdgpu"}};
  for (int i = 0; i < 3; i++) {
    CHECK(!backend_target_open(gpus[i][0], &t));
    CHECK_STR(t.backend->name, gpus[i][1]);
    CHECK(t.backend->gpu && !strcmp(t.backend->gpu->backend, gpus[i][1]));
    CHECK((t.backend->ops & BACKEND_COMPILE) && (t.backend->ops & BACKEND_RUN));
    CHECK(t.backend->map_layer && t.backend->run_layers && t.backend->tune_prepare);
    int listed = 0;
    for (gpu_vendors v = backend_gpu_vendors(); *v; v++) listed += *v == t.backend->gpu;
    CHECK(listed == 1);
    backend_target_close(&t);
  }
#endif

#ifndef COV_HAVE_GPU_BACKENDS
  /* without LLVM there is no GPU backend: a GPU target is refused, located */
  cov_status st = backend_target_open("nvptx-sm90", &t);
  CHECK(st && cov_status_code(st) == COV_UNSUPPORTED);
  CHECK(st && cov_status_loc(st).path && !strcmp(cov_status_loc(st).path, "$.backend.name"));
  CHECK(st && strstr(cov_status_message(st), "npu-sim") != NULL); /* names the backends there are */
  cov_status_free(st);
  CHECK(t.acg == NULL && t.backend == NULL);
#endif
  /* every shipped target's backend section passes the registry's check,
   * GPU ones in a build without the GPU backends too */
  static const char *const shipped[] = {"npu-16x16", "npu-32x32-os", "dsp-hvx", "npu-matrix",
                                        "nvptx-sm90", "amdgpu-gfx90a", "amdgpu-gfx942"};
  for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++) {
    cov_acg *g = NULL;
    cov_status cs = backend_acg_load(shipped[i], &g);
    CHECK(!cs && g);
    if (cs) cov_status_print(stderr, cs, 0), cov_status_free(cs);
    cov_acg_free(g);
  }
#ifdef COV_HAVE_GPU_BACKENDS
  check_public_gpu_refusal(src);
#endif
  /* a target that does not load: its loader's error */
  cov_status bad = backend_target_open("no-such-target", &t);
  CHECK(bad && cov_status_code(bad) == COV_NOT_FOUND);
  cov_status_free(bad);

  check_run(BACKEND_REF, src, 1e-5);
  check_run("npu-16x16", src, 1e-2);
  check_run("npu-32x32-os", src, 1e-2);
#ifdef COV_HAVE_GPU_BACKENDS
  check_run("nvptx-sm90", src, 1e-2);
  check_run("amdgpu-gfx90a", src, 1e-2);
#endif
  return check_summary();
}

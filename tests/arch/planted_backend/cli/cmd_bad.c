/* one planted violation of each rule */
#include "backends/gpu/gpu_driver.h"
static int a(void) { return cov_gpu_compile(0, 0, 0, 0, 0) != 0; }
static const char *b = "npu-sim";
static int c(void) { return gpu_target_open(0, 0, 0, 0) != 0; }
static int d(const backend_target *t) { return t->backend->gpu != NULL; }
static int e(const cov_acg *g) { return !strcmp(cov_acg_backend(g), "amdgpu"); }
static int f(const cov_acg *g) { return map_acg_is_gpu(g); }
static int g(void) { return cov_npu_sim_run(0, 0, 0) != 0; } /* a program tool simulating by itself */

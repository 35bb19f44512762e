/* bench/nvptx/scripts/covrun.c: a tiny shared library through which the H100 bench
 * script (gpu_bench.py, ctypes) loads covenant's PTX and launches its
 * kernels on buffers that torch allocated. It is covenant's own driver
 * layer (runtime/crt_cuda.c, dlopen'ed libcuda, the primary
 * context, which torch shares), built on the GPU machine with its C
 * compiler: that machine has no LLVM, the PTX is compiled beforehand. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/crt_cuda.h"
#include "common/fileio.h"

int covrun_open(void);
int covrun_info(void *mod, const char *kernel, int *regs, int *local_bytes);
int covrun_launch2(void *mod, const char *k0, const unsigned *grid0, const unsigned *block0, unsigned smem0,
                   const unsigned long long *ptrs0, const char *k1, const unsigned *grid1, const unsigned *block1,
                   unsigned smem1, const unsigned long long *ptrs1, int iters, float *ms);
void *covrun_load(const char *ptx_path);
int covrun_tensor_map_2d(void *out, unsigned long long base, int bf16, unsigned long long rows,
                         unsigned long long cols, unsigned box_rows, unsigned box_cols);
int covrun_graph_time(void *mod, int n, const char **kernels, const unsigned *grids, const unsigned *blocks,
                      const unsigned *smem, const unsigned long long *ptrs, int iters, float *ms);
int covrun_launch(void *mod, const char *kernel, const unsigned *grid, const unsigned *block, unsigned smem,
                  const unsigned long long *ptrs, int iters, float *ms);

static crt_cuda *g_cu;

static int report(cov_status st) {
  if (!st) return 0;
  cov_status_print(stderr, st, 0);
  cov_status_free(st);
  return 1;
}

int covrun_open(void) {
  if (g_cu) return 0;
  if (report(crt_cuda_open(&g_cu))) return 1;
  fprintf(stderr, "covrun: %s\n", crt_cuda_device_name(g_cu));
  return 0;
}

void *covrun_load(const char *ptx_path) {
  char *ptx = NULL;
  size_t n = 0;
  crt_cuda_module *m = NULL;
  if (report(common_read_file(ptx_path, (size_t)1 << 26, &ptx, &n))) return NULL;
  cov_status st = crt_cuda_load(g_cu, ptx, &m);
  free(ptx);
  if (st) {
    st = cov_status_annotate(st, "%s: ", ptx_path);
    report(st);
    return NULL;
  }
  return m;
}

/* iters == 0: one launch, synchronised; iters > 0: mean time per launch. */
int covrun_launch(void *mod, const char *kernel, const unsigned *grid, const unsigned *block, unsigned smem,
                  const unsigned long long *ptrs, int iters, float *ms) {
  crt_devptr p[4] = {ptrs[0], ptrs[1], ptrs[2], ptrs[3]};
  void *args[4] = {&p[0], &p[1], &p[2], &p[3]};
  if (iters == 0) return report(crt_cuda_launch(g_cu, mod, kernel, grid, block, smem, args, NULL));
  return report(crt_cuda_time(g_cu, mod, kernel, grid, block, smem, args, iters, ms));
}

/* A layer's two kernels in order (a layout transform, then the
 * convolution): each with its grid, block, shared bytes and 4 pointers;
 * iters == 0: one pass, synchronised; iters > 0: mean time per pass. */
int covrun_launch2(void *mod, const char *k0, const unsigned *grid0, const unsigned *block0, unsigned smem0,
                   const unsigned long long *ptrs0, const char *k1, const unsigned *grid1, const unsigned *block1,
                   unsigned smem1, const unsigned long long *ptrs1, int iters, float *ms) {
  crt_devptr p0[4] = {ptrs0[0], ptrs0[1], ptrs0[2], ptrs0[3]}, p1[4] = {ptrs1[0], ptrs1[1], ptrs1[2], ptrs1[3]};
  void *a0[4] = {&p0[0], &p0[1], &p0[2], &p0[3]}, *a1[4] = {&p1[0], &p1[1], &p1[2], &p1[3]};
  if (iters == 0)
    return report(crt_cuda_launch(g_cu, mod, k0, grid0, block0, smem0, a0, NULL)) ||
           report(crt_cuda_launch(g_cu, mod, k1, grid1, block1, smem1, a1, NULL));
  crt_cuda_launch_desc seq[2] = {{mod, k0, {grid0[0], grid0[1], grid0[2]}, {block0[0], block0[1], block0[2]}, smem0, a0},
                         {mod, k1, {grid1[0], grid1[1], grid1[2]}, {block1[0], block1[1], block1[2]}, smem1, a1}};
  return report(crt_cuda_time_seq(g_cu, seq, 2, iters, ms));
}

int covrun_info(void *mod, const char *kernel, int *regs, int *local_bytes) {
  return report(crt_cuda_func_info(g_cu, mod, kernel, regs, local_bytes));
}

/* The CUtensorMap (128 bytes into out) of a plan.tma kernel's operand,
 * from the manifest's "tma" sizes (runtime/crt_cuda.h). */
int covrun_tensor_map_2d(void *out, unsigned long long base, int bf16, unsigned long long rows,
                         unsigned long long cols, unsigned box_rows, unsigned box_cols) {
  return report(crt_cuda_tensor_map_2d(g_cu, out, base, bf16, rows, cols, box_rows, box_cols));
}

/* A layer's n (1 or 2) launches, `iters` times, captured into one CUDA
 * graph on a stream of covenant's runtime and replayed once between two
 * events after a warm-up replay: the way the bench times torch, so both
 * sides pay the same launch cost. grids/blocks: 3 per launch, ptrs: 4 per
 * launch; *ms is the mean time of one pass. */
int covrun_graph_time(void *mod, int n, const char **kernels, const unsigned *grids, const unsigned *blocks,
                      const unsigned *smem, const unsigned long long *ptrs, int iters, float *ms) {
  if (n < 1 || n > 2 || iters < 1) return 1;
  crt_devptr p[2][4];
  void *a[2][4], *fn[2];
  for (int j = 0; j < n; j++) {
    for (int i = 0; i < 4; i++) p[j][i] = ptrs[4 * j + i], a[j][i] = &p[j][i];
    if (report(crt_cuda_function(g_cu, mod, kernels[j], smem[j], &fn[j]))) return 1;
  }
  crt_cuda_stream *s = NULL;
  crt_cuda_graph *gr = NULL;
  void *ev = NULL;
  cov_status st = crt_cuda_stream_create(g_cu, &s);
  if (!st) st = crt_cuda_capture_begin(g_cu, s);
  for (int i = 0; i < iters && !st; i++)
    for (int j = 0; j < n && !st; j++)
      st = crt_cuda_launch_async(g_cu, fn[j], grids + 3 * j, blocks + 3 * j, smem[j], s, a[j]);
  if (s) { /* ends the capture whatever happened inside it */
    cov_status e = crt_cuda_capture_end(g_cu, s, &gr);
    if (!st) st = e;
    else cov_status_free(e);
  }
  if (!st) st = crt_cuda_graph_launch(g_cu, gr, s);
  if (!st) st = crt_cuda_stream_sync(g_cu, s);
  if (!st) st = crt_cuda_mark(g_cu, s, &ev);
  if (!st) st = crt_cuda_graph_launch(g_cu, gr, s);
  if (!st) st = crt_cuda_elapsed(g_cu, s, ev, ms);
  if (!st) *ms /= (float)iters;
  if (gr) crt_cuda_graph_destroy(g_cu, gr);
  if (s) crt_cuda_stream_destroy(g_cu, s);
  return report(st);
}

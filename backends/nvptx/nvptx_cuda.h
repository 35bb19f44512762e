/* backends/nvptx/nvptx_cuda.h: the CUDA driver API, loaded at run time.
 *
 * covenant needs no CUDA toolkit to build: it dlopen()s libcuda.so.1 and
 * looks up the few driver entry points it uses. Without a driver or a GPU,
 * nvptx_cuda_open fails with COV_DEVICE_ERROR naming what was missing. This
 * file depends on nothing but libc and covenant/status.h, so it also builds
 * on a GPU machine that has no LLVM. */
#ifndef COV_NVPTX_CUDA_H
#define COV_NVPTX_CUDA_H

#include <stddef.h>

#include "covenant/status.h"

typedef struct nvptx_cuda nvptx_cuda;
typedef struct nvptx_module nvptx_module;
typedef unsigned long long nvptx_devptr;

cov_status nvptx_cuda_open(nvptx_cuda **out);
void nvptx_cuda_close(nvptx_cuda *cu);
/* "NVIDIA H100 80GB HBM3 (sm_90)" */
const char *nvptx_cuda_device_name(const nvptx_cuda *cu);

cov_status nvptx_cuda_alloc(nvptx_cuda *cu, size_t bytes, nvptx_devptr *out);
cov_status nvptx_cuda_free(nvptx_cuda *cu, nvptx_devptr p);
cov_status nvptx_cuda_upload(nvptx_cuda *cu, nvptx_devptr dst, const void *src, size_t bytes);
cov_status nvptx_cuda_download(nvptx_cuda *cu, void *dst, nvptx_devptr src, size_t bytes);

/* Loads PTX (JIT-compiled by the driver); errors carry the JIT log. */
cov_status nvptx_cuda_load(nvptx_cuda *cu, const char *ptx, nvptx_module **out);
void nvptx_cuda_unload(nvptx_cuda *cu, nvptx_module *m);
/* Launches `kernel` with the given argument pointers and waits for it.
 * With out_ms, the kernel time measured with CUDA events. */
cov_status nvptx_cuda_launch(nvptx_cuda *cu, nvptx_module *m, const char *kernel,
                             const unsigned grid[3], const unsigned block[3],
                             unsigned shared_bytes, void **args, float *out_ms);

/* Times `kernel`: one warm-up launch, then `iters` launches back to back
 * between two events; *out_ms is the mean time of one launch. */
cov_status nvptx_cuda_time(nvptx_cuda *cu, nvptx_module *m, const char *kernel,
                           const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                           void **args, int iters, float *out_ms);

/* One launch of a sequence. */
typedef struct nvptx_launch {
  nvptx_module *m;
  const char *kernel;
  unsigned grid[3], block[3], shared_bytes;
  void **args;
} nvptx_launch;

/* Times a sequence of launches (a layer's kernels, e.g. a layout transform
 * and its convolution): one warm-up pass, then `iters` passes back to back
 * between two events; *out_ms is the mean time of one pass. */
cov_status nvptx_cuda_time_seq(nvptx_cuda *cu, const nvptx_launch *seq, int n, int iters, float *out_ms);

/* Registers per thread and local (spill) bytes the JIT gave `kernel`. */
cov_status nvptx_cuda_func_info(nvptx_cuda *cu, nvptx_module *m, const char *kernel, int *regs,
                                int *local_bytes);

/* ---- asynchronous work on a stream (the artifact runtime) ----
 * Handles are opaque pointers of the driver (CUfunction, CUstream,
 * CUgraphExec). Nothing here waits unless it says so. */
typedef struct nvptx_stream nvptx_stream;
typedef struct nvptx_graph nvptx_graph;

/* Compute capability of the device. */
void nvptx_cuda_capability(const nvptx_cuda *cu, int *major, int *minor);
/* `kernel` of m, opted in to `shared_bytes` of dynamic shared memory. */
cov_status nvptx_cuda_function(nvptx_cuda *cu, nvptx_module *m, const char *kernel, unsigned shared_bytes,
                               void **fn);
cov_status nvptx_cuda_stream_create(nvptx_cuda *cu, nvptx_stream **out);
void nvptx_cuda_stream_destroy(nvptx_cuda *cu, nvptx_stream *s);
cov_status nvptx_cuda_stream_sync(nvptx_cuda *cu, nvptx_stream *s);
cov_status nvptx_cuda_launch_async(nvptx_cuda *cu, void *fn, const unsigned grid[3], const unsigned block[3],
                                   unsigned shared_bytes, nvptx_stream *s, void **args);
cov_status nvptx_cuda_memset_async(nvptx_cuda *cu, nvptx_devptr p, unsigned char value, size_t bytes,
                                   nvptx_stream *s);
/* Stream capture into a graph: begin, issue work on s, end (instantiates). */
cov_status nvptx_cuda_capture_begin(nvptx_cuda *cu, nvptx_stream *s);
cov_status nvptx_cuda_capture_end(nvptx_cuda *cu, nvptx_stream *s, nvptx_graph **out);
cov_status nvptx_cuda_graph_launch(nvptx_cuda *cu, nvptx_graph *g, nvptx_stream *s);
void nvptx_cuda_graph_destroy(nvptx_cuda *cu, nvptx_graph *g);
/* Events around work on s: *t0 recorded now; end records, waits and gives
 * the milliseconds between them. */
cov_status nvptx_cuda_mark(nvptx_cuda *cu, nvptx_stream *s, void **event);
cov_status nvptx_cuda_elapsed(nvptx_cuda *cu, nvptx_stream *s, void *start, float *ms);

#endif

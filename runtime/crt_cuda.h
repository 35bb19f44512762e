/* runtime/crt_cuda.h: the CUDA driver API, loaded at run time.
 *
 * covenant needs no CUDA toolkit to build: it dlopen()s libcuda.so.1 and
 * looks up the few driver entry points it uses. Without a driver or a GPU,
 * crt_cuda_open fails with COV_DEVICE_ERROR naming what was missing. This
 * file depends on nothing but libc and covenant/status.h, so it also builds
 * on a GPU machine that has no LLVM. */
#ifndef CRT_CUDA_H
#define CRT_CUDA_H

#include <stddef.h>

#include "covenant/status.h"

typedef struct crt_cuda crt_cuda;
typedef struct crt_cuda_module crt_cuda_module;
typedef unsigned long long crt_devptr;

cov_status crt_cuda_open(crt_cuda **out);

/* A 2-D tensor map for bulk tensor copies (the driver's CUtensorMap, 128
 * bytes, written to `out`, which must be 64-byte aligned): a row-major
 * [rows][cols] matrix of 2-byte elements (f16, or bf16 if `bf16`) at device
 * address `base`, boxes of box_rows x box_cols, 128-byte swizzle (the
 * layout a kernel compiled with plan.tma expects; its manifest's "tma"
 * gives the sizes). COV_DEVICE_ERROR where the driver has no
 * cuTensorMapEncodeTiled (before CUDA 12) or refuses the sizes. */
cov_status crt_cuda_tensor_map_2d(crt_cuda *cu, void *out, crt_devptr base, int bf16, unsigned long long rows,
                                  unsigned long long cols, unsigned box_rows, unsigned box_cols);
void crt_cuda_close(crt_cuda *cu);
/* "NVIDIA H100 80GB HBM3 (sm_90)" */
const char *crt_cuda_device_name(const crt_cuda *cu);

cov_status crt_cuda_alloc(crt_cuda *cu, size_t bytes, crt_devptr *out);
cov_status crt_cuda_free(crt_cuda *cu, crt_devptr p);
cov_status crt_cuda_upload(crt_cuda *cu, crt_devptr dst, const void *src, size_t bytes);
cov_status crt_cuda_download(crt_cuda *cu, void *dst, crt_devptr src, size_t bytes);

/* Loads PTX (JIT-compiled by the driver); errors carry the JIT log. */
cov_status crt_cuda_load(crt_cuda *cu, const char *ptx, crt_cuda_module **out);
void crt_cuda_unload(crt_cuda *cu, crt_cuda_module *m);
/* Launches `kernel` with the given argument pointers and waits for it.
 * With out_ms, the kernel time measured with CUDA events. */
cov_status crt_cuda_launch(crt_cuda *cu, crt_cuda_module *m, const char *kernel,
                             const unsigned grid[3], const unsigned block[3],
                             unsigned shared_bytes, void **args, float *out_ms);

/* Times `kernel`: one warm-up launch, then `iters` launches back to back
 * between two events; *out_ms is the mean time of one launch. */
cov_status crt_cuda_time(crt_cuda *cu, crt_cuda_module *m, const char *kernel,
                           const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                           void **args, int iters, float *out_ms);

/* One launch of a sequence. */
typedef struct crt_cuda_launch_desc {
  crt_cuda_module *m;
  const char *kernel;
  unsigned grid[3], block[3], shared_bytes;
  void **args;
} crt_cuda_launch_desc;

/* Times a sequence of launches (a layer's kernels, e.g. a layout transform
 * and its convolution): one warm-up pass, then `iters` passes back to back
 * between two events; *out_ms is the mean time of one pass. */
cov_status crt_cuda_time_seq(crt_cuda *cu, const crt_cuda_launch_desc *seq, int n, int iters, float *out_ms);

/* Registers per thread and local (spill) bytes the JIT gave `kernel`. */
cov_status crt_cuda_func_info(crt_cuda *cu, crt_cuda_module *m, const char *kernel, int *regs,
                                int *local_bytes);

/* ---- asynchronous work on a stream (the artifact runtime) ----
 * Handles are opaque pointers of the driver (CUfunction, CUstream,
 * CUgraphExec). Nothing here waits unless it says so. */
typedef struct crt_cuda_stream crt_cuda_stream;
typedef struct crt_cuda_graph crt_cuda_graph;

/* Compute capability of the device. */
void crt_cuda_capability(const crt_cuda *cu, int *major, int *minor);
/* `kernel` of m, opted in to `shared_bytes` of dynamic shared memory. */
cov_status crt_cuda_function(crt_cuda *cu, crt_cuda_module *m, const char *kernel, unsigned shared_bytes,
                               void **fn);
cov_status crt_cuda_stream_create(crt_cuda *cu, crt_cuda_stream **out);
void crt_cuda_stream_destroy(crt_cuda *cu, crt_cuda_stream *s);
cov_status crt_cuda_stream_sync(crt_cuda *cu, crt_cuda_stream *s);
cov_status crt_cuda_launch_async(crt_cuda *cu, void *fn, const unsigned grid[3], const unsigned block[3],
                                   unsigned shared_bytes, crt_cuda_stream *s, void **args);
cov_status crt_cuda_memset_async(crt_cuda *cu, crt_devptr p, unsigned char value, size_t bytes,
                                   crt_cuda_stream *s);
/* Stream capture into a graph: begin, issue work on s, end (instantiates). */
cov_status crt_cuda_capture_begin(crt_cuda *cu, crt_cuda_stream *s);
cov_status crt_cuda_capture_end(crt_cuda *cu, crt_cuda_stream *s, crt_cuda_graph **out);
cov_status crt_cuda_graph_launch(crt_cuda *cu, crt_cuda_graph *g, crt_cuda_stream *s);
void crt_cuda_graph_destroy(crt_cuda *cu, crt_cuda_graph *g);
/* Events around work on s: *t0 recorded now; end records, waits and gives
 * the milliseconds between them. */
cov_status crt_cuda_mark(crt_cuda *cu, crt_cuda_stream *s, void **event);
cov_status crt_cuda_elapsed(crt_cuda *cu, crt_cuda_stream *s, void *start, float *ms);

#endif

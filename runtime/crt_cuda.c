/* runtime/crt_cuda.c: CUDA driver API through dlopen. */
#include "runtime/crt_cuda.h"
#include "common/loc.h"
#include "common/text.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver ABI: handles are pointers, results are ints (CUresult). */
typedef int cu_result;
typedef int cu_device;
typedef void *cu_context, *cu_module, *cu_function, *cu_event, *cu_stream, *cu_graph, *cu_graph_exec;

#define CU_JIT_INFO_LOG_BUFFER 3
#define CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

struct crt_cuda {
  void *lib;
  cu_device dev;
  cu_context ctx;
  int major, minor;
  char name[160];
  cu_result (*Init)(unsigned);
  cu_result (*DeviceGet)(cu_device *, int);
  cu_result (*DeviceGetName)(char *, int, cu_device);
  cu_result (*DeviceGetAttribute)(int *, int, cu_device);
  cu_result (*PrimaryCtxRetain)(cu_context *, cu_device);
  cu_result (*PrimaryCtxRelease)(cu_device);
  cu_result (*CtxSetCurrent)(cu_context);
  cu_result (*CtxSynchronize)(void);
  cu_result (*MemAlloc)(crt_devptr *, size_t);
  cu_result (*MemFree)(crt_devptr);
  cu_result (*MemcpyHtoD)(crt_devptr, const void *, size_t);
  cu_result (*MemcpyDtoH)(void *, crt_devptr, size_t);
  cu_result (*ModuleLoadDataEx)(cu_module *, const void *, unsigned, int *, void **);
  cu_result (*ModuleUnload)(cu_module);
  cu_result (*ModuleGetFunction)(cu_function *, cu_module, const char *);
  cu_result (*FuncSetAttribute)(cu_function, int, int);
  cu_result (*FuncGetAttribute)(int *, int, cu_function);
  cu_result (*LaunchKernel)(cu_function, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, cu_stream, void **, void **);
  cu_result (*EventCreate)(cu_event *, unsigned);
  cu_result (*EventRecord)(cu_event, cu_stream);
  cu_result (*EventSynchronize)(cu_event);
  cu_result (*EventElapsedTime)(float *, cu_event, cu_event);
  cu_result (*EventDestroy)(cu_event);
  cu_result (*GetErrorString)(cu_result, const char **);
  cu_result (*StreamCreate)(cu_stream *, unsigned);
  cu_result (*StreamDestroy)(cu_stream);
  cu_result (*StreamSynchronize)(cu_stream);
  cu_result (*MemsetD8Async)(crt_devptr, unsigned char, size_t, cu_stream);
  cu_result (*StreamBeginCapture)(cu_stream, int);
  cu_result (*StreamEndCapture)(cu_stream, cu_graph *);
  cu_result (*GraphInstantiateWithFlags)(cu_graph_exec *, cu_graph, unsigned long long);
  cu_result (*GraphLaunch)(cu_graph_exec, cu_stream);
  cu_result (*GraphExecDestroy)(cu_graph_exec);
  cu_result (*GraphDestroy)(cu_graph);
};

struct crt_cuda_module {
  cu_module mod;
};

static cov_status cu_fail(const crt_cuda *cu, cu_result rc, const char *what) {
  const char *msg = NULL;
  if (cu && cu->GetErrorString) cu->GetErrorString(rc, &msg);
  return cov_error(COV_DEVICE_ERROR, NULL, "CUDA %s failed: %s (error %d)", what,
                   msg ? msg : "unknown error", rc);
}

#define CU_CHECK(cu, call, what)                      \
  do {                                                \
    cu_result rc_ = (call);                           \
    if (rc_ != 0) return cu_fail((cu), rc_, (what));  \
  } while (0)

static int bind(void *lib, void **slot, const char *name) {
  *slot = dlsym(lib, name);
  return *slot != NULL;
}

cov_status crt_cuda_open(crt_cuda **out) {
  *out = NULL;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return cov_error(COV_DEVICE_ERROR, COV_AT_FILE("libcuda.so.1"),
                     "no NVIDIA driver: cannot load libcuda.so.1 (%s)", dlerror());
  crt_cuda *cu = calloc(1, sizeof *cu);
  if (!cu) {
    dlclose(lib);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  cu->lib = lib;
  static const struct {
    size_t offset;
    const char *name;
  } syms[] = {
#define SYM(field, name) {offsetof(crt_cuda, field), name}
      SYM(Init, "cuInit"), SYM(DeviceGet, "cuDeviceGet"), SYM(DeviceGetName, "cuDeviceGetName"),
      SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
      SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
      SYM(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
      SYM(CtxSetCurrent, "cuCtxSetCurrent"), SYM(CtxSynchronize, "cuCtxSynchronize"),
      SYM(MemAlloc, "cuMemAlloc_v2"), SYM(MemFree, "cuMemFree_v2"),
      SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"), SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
      SYM(ModuleLoadDataEx, "cuModuleLoadDataEx"), SYM(ModuleUnload, "cuModuleUnload"),
      SYM(ModuleGetFunction, "cuModuleGetFunction"), SYM(FuncSetAttribute, "cuFuncSetAttribute"),
      SYM(FuncGetAttribute, "cuFuncGetAttribute"),
      SYM(LaunchKernel, "cuLaunchKernel"), SYM(EventCreate, "cuEventCreate"),
      SYM(EventRecord, "cuEventRecord"), SYM(EventSynchronize, "cuEventSynchronize"),
      SYM(EventElapsedTime, "cuEventElapsedTime"), SYM(EventDestroy, "cuEventDestroy_v2"),
      SYM(GetErrorString, "cuGetErrorString"),
      SYM(StreamCreate, "cuStreamCreate"), SYM(StreamDestroy, "cuStreamDestroy_v2"),
      SYM(StreamSynchronize, "cuStreamSynchronize"), SYM(MemsetD8Async, "cuMemsetD8Async"),
      SYM(StreamBeginCapture, "cuStreamBeginCapture_v2"), SYM(StreamEndCapture, "cuStreamEndCapture"),
      SYM(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"), SYM(GraphLaunch, "cuGraphLaunch"),
      SYM(GraphExecDestroy, "cuGraphExecDestroy"), SYM(GraphDestroy, "cuGraphDestroy"),
#undef SYM
  };
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    if (!bind(lib, (void **)((char *)cu + syms[i].offset), syms[i].name)) {
      cov_status st = cov_error(COV_DEVICE_ERROR, COV_AT_FILE("libcuda.so.1"),
                                "libcuda.so.1 lacks %s (driver too old?)", syms[i].name);
      crt_cuda_close(cu);
      return st;
    }
  }
  cu_result rc = cu->Init(0);
  if (rc == 0) rc = cu->DeviceGet(&cu->dev, 0);
  if (rc != 0) {
    cov_status st = cu_fail(cu, rc, "initialisation (is there an NVIDIA GPU?)");
    crt_cuda_close(cu);
    return st;
  }
  rc = cu->PrimaryCtxRetain(&cu->ctx, cu->dev);
  if (rc == 0) rc = cu->CtxSetCurrent(cu->ctx);
  if (rc != 0) {
    cov_status st = cu_fail(cu, rc, "context creation");
    crt_cuda_close(cu);
    return st;
  }
  char name[128] = "?";
  int major = 0, minor = 0;
  cu->DeviceGetName(name, sizeof name, cu->dev);
  cu->DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, cu->dev);
  cu->DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, cu->dev);
  snprintf(cu->name, sizeof cu->name, "%s (sm_%d%d)", name, major, minor);
  cu->major = major, cu->minor = minor;
  *out = cu;
  return NULL;
}

void crt_cuda_close(crt_cuda *cu) {
  if (!cu) return;
  if (cu->ctx && cu->PrimaryCtxRelease) cu->PrimaryCtxRelease(cu->dev);
  if (cu->lib) dlclose(cu->lib);
  free(cu);
}

const char *crt_cuda_device_name(const crt_cuda *cu) { return cu ? cu->name : "?"; }

cov_status crt_cuda_alloc(crt_cuda *cu, size_t bytes, crt_devptr *out) {
  CU_CHECK(cu, cu->MemAlloc(out, bytes ? bytes : 1), "memory allocation");
  return NULL;
}
cov_status crt_cuda_free(crt_cuda *cu, crt_devptr p) {
  CU_CHECK(cu, cu->MemFree(p), "memory free");
  return NULL;
}
cov_status crt_cuda_upload(crt_cuda *cu, crt_devptr dst, const void *src, size_t bytes) {
  CU_CHECK(cu, cu->MemcpyHtoD(dst, src, bytes), "copy to device");
  return NULL;
}
cov_status crt_cuda_download(crt_cuda *cu, void *dst, crt_devptr src, size_t bytes) {
  CU_CHECK(cu, cu->MemcpyDtoH(dst, src, bytes), "copy from device");
  return NULL;
}

cov_status crt_cuda_load(crt_cuda *cu, const char *ptx, crt_cuda_module **out) {
  *out = NULL;
  enum { LOG_SIZE = 8192 };
  char *local_log = calloc(1, LOG_SIZE);
  if (!local_log) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {local_log, (void *)(size_t)(LOG_SIZE - 1)};
  cu_module mod = NULL;
  cu_result rc = cu->ModuleLoadDataEx(&mod, ptx, 2, opts, vals);
  if (rc != 0) {
    cov_status st = cu_fail(cu, rc, "PTX load");
    if (local_log[0]) st = cov_status_annotate(st, "JIT log: %.2000s; ", local_log);
    free(local_log);
    return st;
  }
  free(local_log);
  crt_cuda_module *m = calloc(1, sizeof *m);
  if (!m) {
    cu->ModuleUnload(mod);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  m->mod = mod;
  *out = m;
  return NULL;
}

void crt_cuda_unload(crt_cuda *cu, crt_cuda_module *m) {
  if (!m) return;
  cu->ModuleUnload(m->mod);
  free(m);
}

cov_status crt_cuda_launch(crt_cuda *cu, crt_cuda_module *m, const char *kernel,
                             const unsigned grid[3], const unsigned block[3],
                             unsigned shared_bytes, void **args, float *out_ms) {
  cu_function fn;
  cu_result rc = cu->ModuleGetFunction(&fn, m->mod, kernel);
  if (rc != 0) return cu_fail(cu, rc, "kernel lookup");
  if (shared_bytes > 48 * 1024) /* opt in to large dynamic shared memory */
    CU_CHECK(cu, cu->FuncSetAttribute(fn, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, (int)shared_bytes),
             "shared memory opt-in");
  cu_event start = NULL, stop = NULL;
  if (out_ms) {
    CU_CHECK(cu, cu->EventCreate(&start, 0), "event creation");
    CU_CHECK(cu, cu->EventCreate(&stop, 0), "event creation");
    CU_CHECK(cu, cu->EventRecord(start, NULL), "event record");
  }
  rc = cu->LaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                        NULL, args, NULL);
  if (rc == 0 && out_ms) {
    rc = cu->EventRecord(stop, NULL);
    if (rc == 0) rc = cu->EventSynchronize(stop);
    if (rc == 0) rc = cu->EventElapsedTime(out_ms, start, stop);
  }
  if (rc == 0) rc = cu->CtxSynchronize();
  if (start) cu->EventDestroy(start);
  if (stop) cu->EventDestroy(stop);
  if (rc != 0) return cu_fail(cu, rc, "kernel launch");
  return NULL;
}

cov_status crt_cuda_time(crt_cuda *cu, crt_cuda_module *m, const char *kernel,
                           const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                           void **args, int iters, float *out_ms) {
  /* a sequence of one launch: same warm-up, events and mean */
  crt_cuda_launch_desc one = {.m = m, .kernel = kernel, .shared_bytes = shared_bytes, .args = args};
  memcpy(one.grid, grid, sizeof one.grid);
  memcpy(one.block, block, sizeof one.block);
  return crt_cuda_time_seq(cu, &one, 1, iters, out_ms);
}

cov_status crt_cuda_time_seq(crt_cuda *cu, const crt_cuda_launch_desc *seq, int n, int iters, float *out_ms) {
  enum { MAX_SEQ = 8 };
  if (iters < 1 || n < 1 || n > MAX_SEQ)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("crt_cuda_time_seq"), "timing needs 1..%d launches and at least one iteration", MAX_SEQ);
  cu_function fn[MAX_SEQ];
  for (int j = 0; j < n; j++) {
    COV_RETURN_IF_ERROR(crt_cuda_launch(cu, seq[j].m, seq[j].kernel, seq[j].grid, seq[j].block,
                                          seq[j].shared_bytes, seq[j].args, NULL));
    CU_CHECK(cu, cu->ModuleGetFunction(&fn[j], seq[j].m->mod, seq[j].kernel), "kernel lookup");
  }
  cu_event start = NULL, stop = NULL;
  CU_CHECK(cu, cu->EventCreate(&start, 0), "event creation");
  cu_result rc = cu->EventCreate(&stop, 0);
  if (rc == 0) rc = cu->EventRecord(start, NULL);
  for (int i = 0; i < iters && rc == 0; i++)
    for (int j = 0; j < n && rc == 0; j++)
      rc = cu->LaunchKernel(fn[j], seq[j].grid[0], seq[j].grid[1], seq[j].grid[2], seq[j].block[0], seq[j].block[1],
                            seq[j].block[2], seq[j].shared_bytes, NULL, seq[j].args, NULL);
  if (rc == 0) rc = cu->EventRecord(stop, NULL);
  if (rc == 0) rc = cu->EventSynchronize(stop);
  float ms = 0;
  if (rc == 0) rc = cu->EventElapsedTime(&ms, start, stop);
  cu->EventDestroy(start);
  if (stop) cu->EventDestroy(stop);
  if (rc != 0) return cu_fail(cu, rc, "timed launches");
  *out_ms = ms / (float)iters;
  return NULL;
}

cov_status crt_cuda_func_info(crt_cuda *cu, crt_cuda_module *m, const char *kernel, int *regs,
                                int *local_bytes) {
  cu_function fn;
  CU_CHECK(cu, cu->ModuleGetFunction(&fn, m->mod, kernel), "kernel lookup");
  CU_CHECK(cu, cu->FuncGetAttribute(regs, 4 /* NUM_REGS */, fn), "function attribute query");
  CU_CHECK(cu, cu->FuncGetAttribute(local_bytes, 3 /* LOCAL_SIZE_BYTES */, fn), "function attribute query");
  return NULL;
}

/* ---- asynchronous work on a stream ---- */

void crt_cuda_capability(const crt_cuda *cu, int *major, int *minor) {
  *major = cu->major;
  *minor = cu->minor;
}

cov_status crt_cuda_function(crt_cuda *cu, crt_cuda_module *m, const char *kernel, unsigned shared_bytes,
                               void **fn) {
  cu_function f;
  cu_result rc = cu->ModuleGetFunction(&f, m->mod, kernel);
  if (rc != 0) {
    char shown[512];
    return cov_status_annotate(cu_fail(cu, rc, "kernel lookup"), "kernel %s: ", common_escape(kernel, shown, sizeof shown));
  }
  if (shared_bytes > 48 * 1024) /* opt in to large dynamic shared memory */
    CU_CHECK(cu, cu->FuncSetAttribute(f, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, (int)shared_bytes),
             "shared memory opt-in");
  *fn = f;
  return NULL;
}

cov_status crt_cuda_stream_create(crt_cuda *cu, crt_cuda_stream **out) {
  cu_stream s = NULL;
  /* a blocking stream (flags 0): it waits for, and is waited on by, the
   * legacy default stream the synchronous copies use, so an input copied in
   * is there before the first kernel reads it */
  CU_CHECK(cu, cu->StreamCreate(&s, 0), "stream creation");
  *out = (crt_cuda_stream *)s;
  return NULL;
}
void crt_cuda_stream_destroy(crt_cuda *cu, crt_cuda_stream *s) {
  if (s) cu->StreamDestroy((cu_stream)s);
}
cov_status crt_cuda_stream_sync(crt_cuda *cu, crt_cuda_stream *s) {
  CU_CHECK(cu, cu->StreamSynchronize((cu_stream)s), "stream synchronisation (a kernel failed?)");
  return NULL;
}
cov_status crt_cuda_launch_async(crt_cuda *cu, void *fn, const unsigned grid[3], const unsigned block[3],
                                   unsigned shared_bytes, crt_cuda_stream *s, void **args) {
  CU_CHECK(cu,
           cu->LaunchKernel((cu_function)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                            (cu_stream)s, args, NULL),
           "kernel launch");
  return NULL;
}
cov_status crt_cuda_memset_async(crt_cuda *cu, crt_devptr p, unsigned char value, size_t bytes,
                                   crt_cuda_stream *s) {
  CU_CHECK(cu, cu->MemsetD8Async(p, value, bytes, (cu_stream)s), "memset");
  return NULL;
}
cov_status crt_cuda_capture_begin(crt_cuda *cu, crt_cuda_stream *s) {
  CU_CHECK(cu, cu->StreamBeginCapture((cu_stream)s, 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */), "stream capture");
  return NULL;
}
cov_status crt_cuda_capture_end(crt_cuda *cu, crt_cuda_stream *s, crt_cuda_graph **out) {
  cu_graph g = NULL;
  cu_graph_exec e = NULL;
  CU_CHECK(cu, cu->StreamEndCapture((cu_stream)s, &g), "end of stream capture");
  cu_result rc = cu->GraphInstantiateWithFlags(&e, g, 0);
  cu->GraphDestroy(g);
  if (rc != 0) return cu_fail(cu, rc, "graph instantiation");
  *out = (crt_cuda_graph *)e;
  return NULL;
}
cov_status crt_cuda_graph_launch(crt_cuda *cu, crt_cuda_graph *g, crt_cuda_stream *s) {
  CU_CHECK(cu, cu->GraphLaunch((cu_graph_exec)g, (cu_stream)s), "graph launch");
  return NULL;
}
void crt_cuda_graph_destroy(crt_cuda *cu, crt_cuda_graph *g) {
  if (g) cu->GraphExecDestroy((cu_graph_exec)g);
}
cov_status crt_cuda_mark(crt_cuda *cu, crt_cuda_stream *s, void **event) {
  cu_event e = NULL;
  CU_CHECK(cu, cu->EventCreate(&e, 0), "event creation");
  cu_result rc = cu->EventRecord(e, (cu_stream)s);
  if (rc != 0) {
    cu->EventDestroy(e);
    return cu_fail(cu, rc, "event record");
  }
  *event = e;
  return NULL;
}
cov_status crt_cuda_elapsed(crt_cuda *cu, crt_cuda_stream *s, void *start, float *ms) {
  cu_event stop = NULL;
  cu_result rc = cu->EventCreate(&stop, 0);
  if (rc == 0) rc = cu->EventRecord(stop, (cu_stream)s);
  if (rc == 0) rc = cu->EventSynchronize(stop);
  if (rc == 0) rc = cu->EventElapsedTime(ms, (cu_event)start, stop);
  cu->EventDestroy((cu_event)start);
  if (stop) cu->EventDestroy(stop);
  if (rc != 0) return cu_fail(cu, rc, "timing events");
  return NULL;
}

/* cuTensorMapEncodeTiled (CUDA 12): looked up on use, so that older
 * drivers still open. Enumerations as in cuda.h: data type FLOAT16 6,
 * BFLOAT16 9; interleave none 0; swizzle 128B 3; L2 promotion 256B 3; out
 * of bounds fill none 0. Dimensions and strides innermost first. */
typedef cu_result (*cu_tensor_map_encode)(void *, int, unsigned, void *, const unsigned long long *,
                                          const unsigned long long *, const unsigned *, const unsigned *, int, int,
                                          int, int);

cov_status crt_cuda_tensor_map_2d(crt_cuda *cu, void *out, crt_devptr base, int bf16, unsigned long long rows,
                                  unsigned long long cols, unsigned box_rows, unsigned box_cols) {
  cu_tensor_map_encode enc;
  *(void **)&enc = dlsym(cu->lib, "cuTensorMapEncodeTiled");
  if (!enc)
    return cov_error(COV_DEVICE_ERROR, COV_AT_CALL("crt_cuda_tensor_map_2d"),
                     "libcuda.so.1 lacks cuTensorMapEncodeTiled (driver older than CUDA 12)");
  unsigned long long dims[2] = {cols, rows}, strides[1] = {cols * 2};
  unsigned box[2] = {box_cols, box_rows}, estr[2] = {1, 1};
  CU_CHECK(cu, enc(out, bf16 ? 9 : 6, 2, (void *)(uintptr_t)base, dims, strides, box, estr, 0, 3, 3, 0),
           "cuTensorMapEncodeTiled");
  return NULL;
}

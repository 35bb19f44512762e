/* tests/runtime/fake_cuda.c: a stand-in for the CUDA driver (built as
 * libcuda.so.1, found first through LD_LIBRARY_PATH) for testing the
 * runtime's GPU session logic on a machine without a GPU. "Device" memory
 * is host memory of its own (malloc), so a value the runtime forgets to
 * copy between the device and its host copies stays stale and the result
 * is wrong. Kernels are C functions found by name (a module's code is
 * ignored): fk_add1 (y[i] = x[i] + 1 over n f32 elements) and fk_lt
 * (b = x[0] < limit, one bool). Launches and fills run at once, or are
 * recorded while the stream captures and run by each graph launch; a
 * synchronous copy or a stream synchronisation during a capture is an
 * error (as on the driver), and the counters fake_cuda_counts reports let
 * the test check how often segments were captured and replayed. One
 * device, compute capability 9.0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int cu_result;
typedef unsigned long long devptr; /* crt_devptr */

enum { ERR_INVALID = 1, ERR_NOT_FOUND = 500, ERR_CAPTURE = 900, MAX_REC = 4096 };

typedef struct rec {
  int kind; /* 0 launch, 1 memset */
  const char *fn;
  void **params;
  devptr p;
  unsigned char v;
  size_t n;
} rec;

typedef struct graph {
  rec *r;
  int n;
} graph;

static int capturing;
static rec cap[MAX_REC];
static int n_cap;
static long counts[4]; /* captures, graph launches, launches run, host copies */

void fake_cuda_counts(long out[4]);
void fake_cuda_counts(long out[4]) { memcpy(out, counts, sizeof counts); }

static graph *graph_copy(const rec *r, int n) {
  graph *x = malloc(sizeof *x);
  if (!x) return NULL;
  x->r = malloc((size_t)(n ? n : 1) * sizeof *x->r);
  if (!x->r) return free(x), NULL;
  if (n) memcpy(x->r, r, (size_t)n * sizeof *r);
  x->n = n;
  return x;
}

static void run(const rec *r) {
  if (r->kind == 1) {
    memset((void *)(uintptr_t)r->p, r->v, r->n);
    return;
  }
  counts[2]++;
  if (!strcmp(r->fn, "fk_add1")) {
    const float *x = (const float *)(uintptr_t) * (devptr *)r->params[0];
    float *y = (float *)(uintptr_t) * (devptr *)r->params[1];
    int64_t n = *(int64_t *)r->params[2];
    for (int64_t i = 0; i < n; i++) y[i] = x[i] + 1.0f;
  } else { /* fk_lt */
    const float *x = (const float *)(uintptr_t) * (devptr *)r->params[0];
    unsigned char *b = (unsigned char *)(uintptr_t) * (devptr *)r->params[1];
    float limit = *(float *)r->params[2];
    *b = x[0] < limit;
  }
}

static cu_result submit(rec r) {
  if (!capturing) {
    run(&r);
    return 0;
  }
  if (n_cap == MAX_REC) return ERR_INVALID;
  cap[n_cap++] = r;
  return 0;
}

cu_result cuInit(unsigned f) { return (void)f, 0; }
cu_result cuDeviceGet(int *d, int i) { return *d = i, i == 0 ? 0 : ERR_INVALID; }
cu_result cuDeviceGetName(char *s, int n, int d) {
  (void)d;
  strncpy(s, "fake device", (size_t)n - 1);
  s[n - 1] = 0;
  return 0;
}
cu_result cuDeviceGetAttribute(int *v, int a, int d) { return (void)d, *v = a == 75 ? 9 : 0, 0; }
cu_result cuDevicePrimaryCtxRetain(void **c, int d) { return (void)d, *c = (void *)1, 0; }
cu_result cuDevicePrimaryCtxRelease_v2(int d) { return (void)d, 0; }
cu_result cuCtxSetCurrent(void *c) { return (void)c, 0; }
cu_result cuCtxSynchronize(void) { return capturing ? ERR_CAPTURE : 0; }
cu_result cuMemAlloc_v2(devptr *p, size_t n) {
  void *m = calloc(1, n ? n : 1);
  *p = (devptr)(uintptr_t)m;
  return m ? 0 : 2;
}
cu_result cuMemFree_v2(devptr p) { return free((void *)(uintptr_t)p), 0; }
cu_result cuMemcpyHtoD_v2(devptr d, const void *s, size_t n) {
  if (capturing) return ERR_CAPTURE;
  counts[3]++;
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
cu_result cuMemcpyDtoH_v2(void *d, devptr s, size_t n) {
  if (capturing) return ERR_CAPTURE;
  counts[3]++;
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
cu_result cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) {
  return (void)img, (void)n, (void)o, (void)v, *m = (void *)2, 0;
}
cu_result cuModuleUnload(void *m) { return (void)m, 0; }
cu_result cuModuleGetFunction(void **f, void *m, const char *name) {
  static const char *const names[] = {"fk_add1", "fk_lt"};
  (void)m;
  for (int i = 0; i < 2; i++)
    if (!strcmp(name, names[i])) return *f = (void *)names[i], 0;
  return ERR_NOT_FOUND;
}
cu_result cuFuncSetAttribute(void *f, int a, int v) { return (void)f, (void)a, (void)v, 0; }
cu_result cuFuncGetAttribute(int *v, int a, void *f) { return (void)a, (void)f, *v = 0, 0; }
cu_result cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shared, void *stream, void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)extra;
  return submit((rec){0, (const char *)f, params, 0, 0, 0});
}
cu_result cuEventCreate(void **e, unsigned f) { return (void)f, *e = (void *)3, 0; }
cu_result cuEventRecord(void *e, void *s) { return (void)e, (void)s, 0; }
cu_result cuEventSynchronize(void *e) { return (void)e, capturing ? ERR_CAPTURE : 0; }
cu_result cuEventElapsedTime(float *ms, void *a, void *b) { return (void)a, (void)b, *ms = 1.0f, 0; }
cu_result cuEventDestroy_v2(void *e) { return (void)e, 0; }
cu_result cuGetErrorString(cu_result r, const char **s) {
  *s = r == ERR_CAPTURE ? "operation not permitted when stream is capturing" : "fake driver error";
  return 0;
}
cu_result cuStreamCreate(void **s, unsigned f) { return (void)f, *s = (void *)4, 0; }
cu_result cuStreamDestroy_v2(void *s) { return (void)s, 0; }
cu_result cuStreamSynchronize(void *s) { return (void)s, capturing ? ERR_CAPTURE : 0; }
cu_result cuMemsetD8Async(devptr p, unsigned char v, size_t n, void *s) {
  (void)s;
  return submit((rec){1, NULL, NULL, p, v, n});
}
cu_result cuStreamBeginCapture_v2(void *s, int mode) {
  (void)s, (void)mode;
  if (capturing) return ERR_CAPTURE;
  capturing = 1, n_cap = 0;
  return 0;
}
cu_result cuStreamEndCapture(void *s, void **g) {
  (void)s;
  if (!capturing) return ERR_INVALID;
  capturing = 0;
  graph *x = graph_copy(cap, n_cap);
  counts[0]++;
  *g = x;
  return x ? 0 : 2;
}
cu_result cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) {
  (void)f;
  graph *x = g, *c = graph_copy(x->r, x->n);
  *e = c;
  return c ? 0 : 2;
}
cu_result cuGraphLaunch(void *e, void *s) {
  (void)s;
  if (capturing) return ERR_CAPTURE;
  graph *x = e;
  counts[1]++;
  for (int i = 0; i < x->n; i++) run(&x->r[i]);
  return 0;
}
cu_result cuGraphDestroy(void *g) {
  graph *x = g;
  if (x) free(x->r), free(x);
  return 0;
}
cu_result cuGraphExecDestroy(void *e) { return cuGraphDestroy(e); }

/* tests/gpu/gpu_jit_groups.c: kernels with workgroup barriers, lane
 * exchanges, shared memory and asynchronous copies run through LLVM's JIT
 * (gpu_jit_harness.h: gpu_jit_group_host, gpu_jit_run_grid). A
 * workgroup's threads run as concurrent threads of this process: a
 * workgroup barrier is a pthread barrier of them all, a lane exchange one
 * of the 32 threads of its warp; shared memory is one module global (one
 * workgroup runs at a time); workgroups one after another in a scrambled
 * order. Asynchronous copies are plain 16-byte copies done at once (their
 * waits are no-ops) and the "matrix" fragment is the FMA fragment, so the
 * tiled matrix kernel's channels-last path runs too. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_jit_harness.h"

enum { WARP = 32, MAX_WARPS = GPU_JIT_MAX_THREADS / WARP };

/* the running workgroup's: its threads' ids, its barrier, each warp's
 * barrier and exchange slots */
static _Thread_local int32_t t_tid, t_bid[3];
static pthread_barrier_t g_bar, g_warp_bar[MAX_WARPS];
static int32_t g_slot[GPU_JIT_MAX_THREADS];

/* ---- the host functions the kernel calls ---------------------------------- */

static int32_t host_get_tid(void) { return t_tid; }
static int32_t host_get_bid(int32_t d) { return d >= 0 && d < 3 ? t_bid[d] : 0; }
static int32_t host_sync(void) {
  pthread_barrier_wait(&g_bar);
  return 0;
}
/* v of the lane `mask` away within the warp (as the GPUs' shuffles: every
 * lane mask the lowering uses is below the warp's 32) */
static int32_t host_exchange(int32_t v, int32_t mask) {
  pthread_barrier_t *warp = &g_warp_bar[t_tid / WARP];
  g_slot[t_tid] = v;
  pthread_barrier_wait(warp);
  int32_t r = g_slot[t_tid / WARP * WARP + (t_tid % WARP ^ (mask & (WARP - 1)))];
  pthread_barrier_wait(warp);
  return r;
}

static LLVMErrorRef define_host(LLVMOrcLLJITRef J, LLVMOrcJITDylibRef jd) {
  static const char *names[4] = {"cov_host_tid", "cov_host_bid", "cov_host_sync", "cov_host_xor"};
  LLVMOrcExecutorAddress addr[4] = {
      (LLVMOrcExecutorAddress)(uintptr_t)host_get_tid, (LLVMOrcExecutorAddress)(uintptr_t)host_get_bid,
      (LLVMOrcExecutorAddress)(uintptr_t)host_sync, (LLVMOrcExecutorAddress)(uintptr_t)host_exchange};
  return gpu_jit_define_host(J, jd, names, addr, 4);
}

/* ---- the target operations -------------------------------------------------- */

static LLVMValueRef host_tid(gpu_gen *g) { return gpu_jit_host_call_i32(g, "cov_host_tid", NULL, 0); }
static LLVMValueRef host_bid(gpu_gen *g, int d) {
  LLVMValueRef a = gpu_i32(g, d);
  return gpu_jit_host_call_i32(g, "cov_host_bid", &a, 1);
}
static void host_barrier(gpu_gen *g) { gpu_jit_host_call_i32(g, "cov_host_sync", NULL, 0); }
static LLVMValueRef host_lane_xor(gpu_gen *g, LLVMValueRef x, int mask) {
  LLVMValueRef a[2] = {x, gpu_i32(g, mask)};
  return gpu_jit_host_call_i32(g, "cov_host_xor", a, 2);
}
static LLVMValueRef host_shared(gpu_gen *g, unsigned bytes) {
  LLVMTypeRef t = LLVMArrayType2(g->i8, bytes ? bytes : 1);
  LLVMValueRef v = LLVMAddGlobal(g->mod, t, "cov_smem");
  LLVMSetInitializer(v, LLVMConstNull(t));
  LLVMSetAlignment(v, 1024);
  return v;
}
static void host_copy16(gpu_gen *g, LLVMValueRef dst, LLVMValueRef src) {
  LLVMTypeRef v4 = LLVMVectorType(g->i32, 4);
  LLVMValueRef x = LLVMBuildLoad2(g->b, v4, src, "");
  LLVMSetAlignment(x, 16);
  LLVMSetAlignment(LLVMBuildStore(g->b, x, dst), 16);
}
static void host_copy16_zfill(gpu_gen *g, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef ok) {
  LLVMTypeRef v4 = LLVMVectorType(g->i32, 4);
  LLVMValueRef x = LLVMBuildLoad2(g->b, v4, src, "");
  LLVMSetAlignment(x, 16);
  x = LLVMBuildSelect(g->b, ok, x, LLVMConstNull(v4), "");
  LLVMSetAlignment(LLVMBuildStore(g->b, x, dst), 16);
}
static void host_commit(gpu_gen *g) { (void)g; }
static void host_wait(gpu_gen *g, int pending) { (void)g, (void)pending; }
static LLVMValueRef host_exp2(gpu_gen *g, LLVMValueRef x) { return gpu_call_intrinsic(g, "llvm.exp2", &g->f32, 1, &x, 1); }
static void host_mark(gpu_gen *g, LLVMValueRef fn) { (void)g, (void)fn; }
static const gpu_frag_ops *host_frag(const gpu_plan *p) { return gpu_fma_frag(p->warp_size); }
const gpu_target_ops gpu_jit_group_host = {.name = "host",
                                           .mark_kernel = host_mark,
                                           .thread_id = host_tid,
                                           .block_id = host_bid,
                                           .barrier = host_barrier,
                                           .shared_array = host_shared,
                                           .async_copy16 = host_copy16,
                                           .async_copy16_zfill = host_copy16_zfill,
                                           .async_commit = host_commit,
                                           .async_wait = host_wait,
                                           .exp2 = host_exp2,
                                           .lane_xor = host_lane_xor,
                                           .matrix_frag = host_frag};

int gpu_jit_compile_groups(const char *name, gpu_jit_lower_fn lower, const void *what, gpu_jit_kernel *out) {
  return gpu_jit_compile(name, lower, what, &gpu_jit_group_host, define_host, out);
}

/* ---- running a grid ----------------------------------------------------------- */

/* One thread of every workgroup, in the order of a prime step through
 * them. */
typedef struct lane_run {
  gpu_jit_fn f;
  void *const *a;
  const unsigned *grid;
  int64_t stride;
  int32_t tid;
} lane_run;

static void *run_lane(void *p) {
  const lane_run *r = p;
  int64_t n = (int64_t)r->grid[0] * r->grid[1] * r->grid[2];
  t_tid = r->tid;
  for (int64_t w = 0; w < n; w++) {
    int64_t id = w * r->stride % n;
    t_bid[0] = (int32_t)(id % r->grid[0]), t_bid[1] = (int32_t)(id / r->grid[0] % r->grid[1]);
    t_bid[2] = (int32_t)(id / r->grid[0] / r->grid[1]);
    r->f(r->a[0], r->a[1], r->a[2], r->a[3], r->a[4], r->a[5], r->a[6], r->a[7]);
    pthread_barrier_wait(&g_bar); /* the workgroup done before the next reuses its shared memory */
  }
  return NULL;
}

/* The barriers of a workgroup of `threads`; 0, or 1 with none left set up. */
static int barriers_init(int threads) {
  if (pthread_barrier_init(&g_bar, NULL, (unsigned)threads)) return 1;
  for (int w = 0; w < threads / WARP; w++)
    if (pthread_barrier_init(&g_warp_bar[w], NULL, WARP)) {
      while (w-- > 0) pthread_barrier_destroy(&g_warp_bar[w]);
      pthread_barrier_destroy(&g_bar);
      return 1;
    }
  return 0;
}

static void barriers_destroy(int threads) {
  for (int w = 0; w < threads / WARP; w++) pthread_barrier_destroy(&g_warp_bar[w]);
  pthread_barrier_destroy(&g_bar);
}

int gpu_jit_run_grid(const char *name, const gpu_jit_kernel *k, const unsigned grid[3], int threads, int64_t stride,
                     void *const *args) {
  if (threads < WARP || threads > GPU_JIT_MAX_THREADS || threads % WARP || stride < 1) {
    fprintf(stderr, "FAIL %s: workgroups of %d threads (whole warps of %d, at most %d), step %lld\n", name, threads,
            WARP, GPU_JIT_MAX_THREADS, (long long)stride);
    return 1;
  }
  static lane_run r[GPU_JIT_MAX_THREADS];
  static pthread_t th[GPU_JIT_MAX_THREADS];
  pthread_attr_t attr;
  if (pthread_attr_init(&attr)) {
    fprintf(stderr, "FAIL %s: no thread attributes\n", name);
    return 1;
  }
  pthread_attr_setstacksize(&attr, 1 << 19);
  if (barriers_init(threads)) {
    pthread_attr_destroy(&attr);
    fprintf(stderr, "FAIL %s: no workgroup barrier\n", name);
    return 1;
  }
  int n = 0;
  for (; n < threads; n++) {
    r[n] = (lane_run){k->fn, args, grid, stride, n};
    if (pthread_create(&th[n], &attr, run_lane, &r[n])) break;
  }
  if (n > 0 && n < threads) { /* the started threads would wait for the others forever */
    fprintf(stderr, "FAIL %s: cannot start the threads of a workgroup\n", name);
    exit(1);
  }
  for (int j = 0; j < n; j++) pthread_join(th[j], NULL);
  barriers_destroy(threads);
  pthread_attr_destroy(&attr);
  if (!n) fprintf(stderr, "FAIL %s: cannot start the threads of a workgroup\n", name);
  return n == 0;
}

int gpu_jit_run_groups(const char *name, gpu_jit_lower_fn lower, const void *what, int64_t groups, void *const *args,
                       int n_args) {
  if (n_args < 0 || n_args > GPU_JIT_MAX_ARGS || groups < 0 || groups > UINT32_MAX) {
    fprintf(stderr, "FAIL %s: %d kernel arguments (at most %d), %lld workgroups\n", name, n_args, GPU_JIT_MAX_ARGS,
            (long long)groups);
    return 1;
  }
  gpu_jit_kernel k;
  if (gpu_jit_compile_groups(name, lower, what, &k)) return 1;
  void *a[GPU_JIT_MAX_ARGS] = {0};
  for (int i = 0; i < n_args; i++) a[i] = args[i];
  const unsigned grid[3] = {(unsigned)groups, 1, 1};
  int bad = gpu_jit_run_grid(name, &k, grid, GPU_EW_THREADS, 1000003, a);
  gpu_jit_kernel_free(&k);
  return bad;
}

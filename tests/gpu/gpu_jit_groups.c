/* tests/gpu/gpu_jit_groups.c: kernels with workgroup barriers, lane
 * exchanges and shared memory run through LLVM's JIT (gpu_jit_harness.h,
 * gpu_jit_run_groups): a workgroup's GPU_EW_THREADS threads run as
 * concurrent threads of this process meeting at a barrier for each
 * workgroup barrier and each lane exchange, over shared memory of their
 * own; workgroups one after another in a scrambled order. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_jit_harness.h"

enum { T = GPU_EW_THREADS };
static _Thread_local int32_t t_tid, t_bid;
static pthread_barrier_t g_bar; /* the running workgroup's threads */
static int32_t g_slot[T];       /* lane exchanges */

static int32_t host_get_tid(void) { return t_tid; }
static int32_t host_get_bid(void) { return t_bid; }
static int32_t host_sync(void) {
  pthread_barrier_wait(&g_bar);
  return 0;
}
static int32_t host_exchange(int32_t v, int32_t mask) {
  g_slot[t_tid] = v;
  pthread_barrier_wait(&g_bar);
  int32_t r = g_slot[t_tid ^ mask];
  pthread_barrier_wait(&g_bar);
  return r;
}

static LLVMValueRef host_tid(gpu_gen *g) { return gpu_jit_host_call_i32(g, "cov_host_tid", NULL, 0); }
static LLVMValueRef host_bid(gpu_gen *g, int d) {
  (void)d;
  return gpu_jit_host_call_i32(g, "cov_host_bid", NULL, 0);
}
static void host_barrier(gpu_gen *g) { gpu_jit_host_call_i32(g, "cov_host_sync", NULL, 0); }
static LLVMValueRef host_lane_xor(gpu_gen *g, LLVMValueRef x, int mask) {
  LLVMValueRef a[2] = {x, gpu_i32(g, mask)};
  return gpu_jit_host_call_i32(g, "cov_host_xor", a, 2);
}
/* the workgroup's shared memory: one array per module (workgroups run one
 * at a time) */
static LLVMValueRef host_shared(gpu_gen *g, unsigned bytes) {
  LLVMTypeRef t = LLVMArrayType2(g->i8, bytes);
  LLVMValueRef v = LLVMAddGlobal(g->mod, t, "cov_smem");
  LLVMSetInitializer(v, LLVMConstNull(t));
  LLVMSetAlignment(v, 16);
  return v;
}
static LLVMValueRef host_exp2(gpu_gen *g, LLVMValueRef x) { return gpu_call_intrinsic(g, "llvm.exp2", &g->f32, 1, &x, 1); }
static void host_mark(gpu_gen *g, LLVMValueRef fn) { (void)g, (void)fn; }
const gpu_target_ops gpu_jit_group_host = {.name = "host",
                                           .mark_kernel = host_mark,
                                           .thread_id = host_tid,
                                           .block_id = host_bid,
                                           .barrier = host_barrier,
                                           .shared_array = host_shared,
                                           .exp2 = host_exp2,
                                           .lane_xor = host_lane_xor};

static LLVMErrorRef define_host(LLVMOrcLLJITRef J, LLVMOrcJITDylibRef jd) {
  static const char *names[4] = {"cov_host_tid", "cov_host_bid", "cov_host_sync", "cov_host_xor"};
  LLVMOrcExecutorAddress addr[4] = {
      (LLVMOrcExecutorAddress)(uintptr_t)host_get_tid, (LLVMOrcExecutorAddress)(uintptr_t)host_get_bid,
      (LLVMOrcExecutorAddress)(uintptr_t)host_sync, (LLVMOrcExecutorAddress)(uintptr_t)host_exchange};
  return gpu_jit_define_host(J, jd, names, addr, 4);
}

/* One thread of every workgroup. */
typedef struct lane_run {
  gpu_jit_fn f;
  void **a;
  int32_t tid;
  int64_t groups;
} lane_run;
static void *run_lane(void *p) {
  lane_run *r = p;
  t_tid = r->tid;
  for (int64_t i = 0; i < r->groups; i++) {
    t_bid = (int32_t)(i * 1000003 % r->groups);
    pthread_barrier_wait(&g_bar);
    r->f(r->a[0], r->a[1], r->a[2], r->a[3], r->a[4], r->a[5], r->a[6], r->a[7]);
    pthread_barrier_wait(&g_bar);
  }
  return NULL;
}

int gpu_jit_run_groups(const char *name, gpu_jit_lower_fn lower, const void *what, int64_t groups, void *const *args,
                       int n_args) {
  if (n_args < 0 || n_args > GPU_JIT_MAX_ARGS) {
    fprintf(stderr, "FAIL %s: %d kernel arguments, at most %d\n", name, n_args, GPU_JIT_MAX_ARGS);
    return 1;
  }
  gpu_jit_kernel k;
  if (gpu_jit_compile(name, lower, what, &gpu_jit_group_host, define_host, &k)) return 1;
  void *a[GPU_JIT_MAX_ARGS] = {0};
  for (int i = 0; i < n_args; i++) a[i] = args[i];
  static lane_run r[T];
  static pthread_t th[T];
  pthread_attr_t attr;
  int n = 0, bad = pthread_barrier_init(&g_bar, NULL, T) != 0;
  if (!bad) bad = pthread_attr_init(&attr) != 0;
  if (!bad) pthread_attr_setstacksize(&attr, 1 << 16);
  for (; n < T && !bad; n++) {
    r[n] = (lane_run){k.fn, a, n, groups};
    if (pthread_create(&th[n], &attr, run_lane, &r[n])) break;
  }
  if (n > 0 && n < T) { /* the started threads would wait for the others forever */
    fprintf(stderr, "FAIL %s: cannot start the threads of a workgroup\n", name);
    exit(1);
  }
  for (int j = 0; j < n; j++) pthread_join(th[j], NULL);
  pthread_barrier_destroy(&g_bar);
  gpu_jit_kernel_free(&k);
  if (bad) fprintf(stderr, "FAIL %s: no workgroup barrier\n", name);
  return bad;
}

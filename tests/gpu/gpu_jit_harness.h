/* tests/gpu/gpu_jit_harness.h: what the JIT tests of the GPU lowering
 * (tests/gpu/test_gpu_*_jit.c) share. A kernel is lowered with one of two
 * host tables of target operations (work items one at a time, ids read
 * from two globals; or whole workgroups as concurrent threads), verified,
 * optimised at O2 and run on this CPU through LLVM's JIT, work items or
 * workgroups in a scrambled order: a kernel whose items depend on the
 * order they run in fails. Its outputs
 * are then compared element by element with an independent reference,
 * the first mismatch printed; with -t TARGET a kernel is also built as
 * that GPU target's code object. */
#ifndef TESTS_GPU_JIT_HARNESS_H
#define TESTS_GPU_JIT_HARNESS_H

#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <stdint.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_target.h"

enum { GPU_JIT_MAX_ARGS = 8, GPU_JIT_MAX_TARGETS = 4, GPU_JIT_MAX_THREADS = 1024 };

/* The host's target operations: a kernel's ids come from the globals
 * cov_tid and cov_bid, which gpu_jit_run sets before each work item. */
extern const gpu_target_ops gpu_jit_host;

/* Readies LLVM's native target for the JIT: once, before gpu_jit_run. */
void gpu_jit_init(void);

/* Lowers one kernel, named `fn`, into mod (gpu_lower_ew, gpu_lower_qdot,
 * gpu_lower_cdl, each behind a cast of `what`). */
typedef cov_status (*gpu_jit_lower_fn)(const void *what, const gpu_target_ops *ops, LLVMModuleRef mod, const char *fn);

/* Lowers `what` with gpu_jit_host, verifies and optimises the module and
 * runs `threads` work items, rounded up to whole workgroups of
 * GPU_EW_THREADS, in a scrambled order, each on args[0 .. n_args) (n_args
 * <= GPU_JIT_MAX_ARGS). Returns 0, or 1 after printing "FAIL name: ..."
 * to stderr. */
int gpu_jit_run(const char *name, gpu_jit_lower_fn lower, const void *what, int64_t threads, void *const *args,
                int n_args);

/* A kernel compiled for this CPU (the steps of gpu_jit_run and
 * gpu_jit_run_groups). Every kernel takes pointers only and is called with
 * GPU_JIT_MAX_ARGS of them, those past its own count ignored. */
typedef void (*gpu_jit_fn)(void *, void *, void *, void *, void *, void *, void *, void *);
typedef struct gpu_jit_kernel {
  LLVMOrcLLJITRef jit;
  gpu_jit_fn fn;
  int32_t *tid, *bid; /* with gpu_jit_host, the globals the ids are read from; else NULL */
} gpu_jit_kernel;

/* Symbols the JIT's main library gets before the kernel's module (host
 * functions that a host table's target operations call). */
typedef LLVMErrorRef (*gpu_jit_define_fn)(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef lib);

/* Defines n host functions (addr[i] under names[i], n at most 8) in the
 * JIT's library: the body of a gpu_jit_define_fn. */
LLVMErrorRef gpu_jit_define_host(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef lib, const char *const *names,
                                 const LLVMOrcExecutorAddress *addr, int n);
/* A call of host function `name` taking n (at most 2) i32 arguments and
 * returning an i32, declared in the module on first use: the thread and
 * workgroup ids, barriers and lane exchanges of the test targets. */
LLVMValueRef gpu_jit_host_call_i32(gpu_gen *g, const char *name, LLVMValueRef *args, int n);

/* Lowers `what` for target operations `ops` into a module, verifies,
 * optimises at O2 and compiles it (define, where not NULL, adding its
 * symbols first). Returns 0, or 1 after printing "FAIL name: ...". */
int gpu_jit_compile(const char *name, gpu_jit_lower_fn lower, const void *what, const gpu_target_ops *ops,
                    gpu_jit_define_fn define, gpu_jit_kernel *out);
void gpu_jit_kernel_free(gpu_jit_kernel *k);

/* The host's target operations for kernels that need their workgroup
 * (gpu_jit_groups.c): thread and workgroup ids (three dims) thread-local,
 * workgroup barriers, lane exchanges within a warp of 32 threads, shared
 * memory, 16-byte asynchronous copies done at once and the FMA matrix
 * fragment. The kernels must run through gpu_jit_run_grid. */
extern const gpu_target_ops gpu_jit_group_host;

/* gpu_jit_compile with gpu_jit_group_host and the host functions its
 * operations call. */
int gpu_jit_compile_groups(const char *name, gpu_jit_lower_fn lower, const void *what, gpu_jit_kernel *out);

/* Runs k (from gpu_jit_compile_groups) over the grid[0] x grid[1] x
 * grid[2] workgroups one at a time, in the order of the prime step
 * `stride` through them, each as `threads` concurrent threads (whole
 * warps, at most GPU_JIT_MAX_THREADS) on args[0 .. GPU_JIT_MAX_ARGS).
 * Returns 0, or 1 after printing "FAIL name: ..." to stderr. */
int gpu_jit_run_grid(const char *name, const gpu_jit_kernel *k, const unsigned grid[3], int threads, int64_t stride,
                     void *const *args);

/* Lowers `what` with gpu_jit_group_host, verifies, optimises and runs
 * `groups` workgroups in a scrambled order, each as GPU_EW_THREADS
 * concurrent threads on args[0 .. n_args). Returns 0, or 1 after
 * printing "FAIL name: ..." to stderr. */
int gpu_jit_run_groups(const char *name, gpu_jit_lower_fn lower, const void *what, int64_t groups, void *const *args,
                       int n_args);

/* Element i of an array of dtype d, as a double (every float dtype and
 * integers up to 2^53 exactly; bool as 0 / 1). */
double gpu_jit_elem(cov_dtype d, const void *data, int64_t i);

/* Whether `got` passes for `want`, values of dtype d. */
typedef int (*gpu_jit_close_fn)(double got, double want, cov_dtype d);

/* n elements of dtype d, got against want, through `close` (NULL: equal
 * values). Returns 0, or 1 after printing the first mismatch as
 * "FAIL name: who element i: got, want expected". */
int gpu_jit_compare(const char *name, const char *who, cov_dtype d, const void *got, const void *want, int64_t n,
                    gpu_jit_close_fn close);

/* The tests' seeded random stream (xorshift64 on *rng): the next value
 * in [0, 1), 53 bits. */
double gpu_jit_unit(uint64_t *rng);
/* v rounded to f16 and back (an f16 buffer's value as f32). */
float gpu_jit_h16(float v);

/* The GPU targets of the command line's -t options. */
typedef struct gpu_jit_targets {
  gpu_target t[GPU_JIT_MAX_TARGETS];
  int n;
} gpu_jit_targets;

/* Opens the shipped target `name` (f16 matrix dtype) into ts; an error
 * when it does not open or GPU_JIT_MAX_TARGETS are open already. */
cov_status gpu_jit_target_add(gpu_jit_targets *ts, const char *name);
void gpu_jit_targets_close(gpu_jit_targets *ts);
/* Opens the targets of argv's "-t NAME" pairs into ts; 0, or 1 after
 * printing the error (ts closed). */
int gpu_jit_targets_from_args(int argc, char **argv, gpu_jit_targets *ts);

/* Builds e as t's code object, kernel "covenant_kern"; where the target's
 * code is text (PTX), it must hold `needle`. Returns 0, or 1 after
 * printing "FAIL name: ...". */
int gpu_jit_build(const char *name, const gpu_ew *e, const gpu_target *t, const char *needle);

#endif

/* backends/gpu/gpu_target.h: what a GPU target supplies to the shared lowering.
 *
 * gpu_lower.c builds the whole kernel (tile loops, the global -> shared
 * pipeline, the warp tiling, the implicit-GEMM gathers and the epilogue) as
 * LLVM IR through the C API; a target answers only the questions that
 * differ between GPUs: ids, barriers, address spaces, how shared memory is
 * declared, asynchronous copies, and its matrix instructions, described as
 * fragment operations. AMDGPU's table is in backends/amdgpu/, NVPTX's in
 * backends/nvptx/. */
#ifndef COV_GPU_TARGET_H
#define COV_GPU_TARGET_H

#include <llvm-c/Core.h>

#include "backends/gpu/gpu_plan.h"

/* The builder state shared with targets. */
typedef struct gpu_gen {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMTypeRef i1, i8, i16, i32, i64, f16, bf16, f32, in_t, gptr, sptr;
  const gpu_plan *plan;
  const struct gpu_target_ops *target;
  LLVMValueRef lane; /* thread id within the warp */
} gpu_gen;

/* A tile in shared memory: `rows` x `cols` elements of `elt`, rows of
 * cols*esize bytes whose 16-byte chunks are swizzled (gpu_swizzle_chunk).
 * With `slab` > 0 (warpgroup-MMA B tiles) the columns are cut into slabs
 * of `slab` columns (128 bytes), stored one after the other, each
 * [rows][slab] with the same swizzle: the 128-byte-swizzled, N-contiguous
 * layout the warpgroup instructions read. */
typedef struct gpu_tile {
  LLVMValueRef base; /* ptr in the shared address space */
  int rows, cols, esize;
  int slab;
} gpu_tile;

/* Address of element (row, col) of a shared tile. */
LLVMValueRef gpu_tile_addr(gpu_gen *g, const gpu_tile *t, LLVMValueRef row, LLVMValueRef col);

/* Matrix instruction fragments: A fragments cover fm x fk of the A tile
 * ([m][k] layout), B fragments fk x fn of the B tile ([k][n] layout); an
 * accumulator is n_acc f32 values per lane. */
typedef struct gpu_frag_ops {
  int fm, fn, fk;
  int n_acc;
  LLVMValueRef (*load_a)(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, int k0);
  LLVMValueRef (*load_b)(gpu_gen *g, const gpu_tile *b, int k0, LLVMValueRef col0);
  void (*mma)(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *acc);
  /* fragment row and column of accumulator element i held by g->lane */
  void (*acc_coord)(gpu_gen *g, int i, LLVMValueRef *row, LLVMValueRef *col);
  /* optional: the B fragments at col0 and col0 + fn in one instruction
   * (NVPTX ldmatrix.x4.trans); NULL where the target has no such load */
  void (*load_b2)(gpu_gen *g, const gpu_tile *b, int k0, LLVMValueRef col0, LLVMValueRef out[2]);
  /* 1: accumulator elements 2j and 2j+1 of a lane are columns c, c+1 (c
   * even) of one row, so a matmul epilogue stores them as one 8-byte pair */
  int acc_pairs;
} gpu_frag_ops;

typedef struct gpu_target_ops {
  const char *name;
  unsigned global_as, shared_as;
  /* calling convention, kernel annotations, launch bounds */
  void (*mark_kernel)(gpu_gen *g, LLVMValueRef fn);
  LLVMValueRef (*thread_id)(gpu_gen *g);        /* x, within the workgroup */
  LLVMValueRef (*block_id)(gpu_gen *g, int dim); /* 0..2 */
  void (*barrier)(gpu_gen *g);
  /* optional: orders this thread's global-memory accesses before and after
   * it for every workgroup of the device (split-K's partials and counter,
   * gpu_lower_split.c); NULL: an LLVM fence (sequentially consistent) */
  void (*device_fence)(gpu_gen *g);
  /* A shared-memory array of `bytes` bytes (16-byte aligned). */
  LLVMValueRef (*shared_array)(gpu_gen *g, unsigned bytes);
  /* 16-byte global -> shared copies that bypass registers, grouped and
   * awaited; NULL where the target has none (copies then go through
   * registers, synchronously). */
  void (*async_copy16)(gpu_gen *g, LLVMValueRef dst_shared, LLVMValueRef src_global);
  /* the same copy of 16 bytes if `ok` (i1), else 16 zero bytes written
   * without reading the source (which must still be a valid address);
   * present where async_copy16 is */
  void (*async_copy16_zfill)(gpu_gen *g, LLVMValueRef dst_shared, LLVMValueRef src_global, LLVMValueRef ok);
  void (*async_commit)(gpu_gen *g);
  void (*async_wait)(gpu_gen *g, int pending);
  /* 2^x in f32 (the GELU epilogue's exponential) */
  LLVMValueRef (*exp2)(gpu_gen *g, LLVMValueRef x);
  /* optional (NULL: exp2 and two conversions): 2^x with results below
   * 2^-126 flushed to zero, one instruction where exp2 needs several (the
   * fused attention's softmax numerators, next to a row maximum of 1); and
   * two f32 rounded to the 16-bit dtype `t` (f16 or bf16) as one i32, x in
   * the low half */
  LLVMValueRef (*exp2_ftz)(gpu_gen *g, LLVMValueRef x);
  LLVMValueRef (*pack_half2)(gpu_gen *g, LLVMTypeRef t, LLVMValueRef x, LLVMValueRef y);
  /* optional: f32 x of the lane whose id is this lane's xor `mask`
   * (butterfly shuffle within a warp; the fused attention's row max and
   * sum over a quad); NULL where absent */
  LLVMValueRef (*shfl_xor)(gpu_gen *g, LLVMValueRef x, int mask);
  /* optional: i32 x of the lane whose index in its warp (NVPTX) or wave
   * (AMDGPU) is this lane's xor `mask` (1..16), every lane of the 32
   * aligned ones taking part: the codelet kernels' team reductions
   * (gpu_lower_cdl.c); NULL: codelets with teams are refused */
  LLVMValueRef (*lane_xor)(gpu_gen *g, LLVMValueRef x, int mask);
  /* optional: c + the sum of the products of the four signed bytes of a
   * and b (i32 each), wrapping, as one instruction (the integer kernel of
   * quantized layers, gpu_lower_qdot.c); NULL: plain IR */
  LLVMValueRef (*dot4_i8)(gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
  /* the fragment operations for the plan's matrix shape and dtype, NULL if
   * the target has no such instruction */
  const gpu_frag_ops *(*matrix_frag)(const gpu_plan *p);
  /* matrix instruction shapes it implements for `in` inputs (m, n, k) */
  int (*matrix_shapes)(cov_dtype in, int (*out)[3], int max);
  /* Optional (NULL where absent): warpgroup matrix instructions (4 warps,
   * asynchronous, operands read from shared memory). wg_mma issues
   * acc[64 x n] += A[row0 .. +64][k0 .. +16] * B[k0 .. +16][col0 .. +n],
   * A a K-contiguous tile of 128-byte rows, B a slab tile (gpu_tile.slab),
   * both 1024-byte aligned; acc holds the lane's n/2 values, laid out per
   * warp (16 rows each) as wg_acc describes. wg_fence precedes a batch of
   * them, wg_commit closes it, wg_wait(pending) waits until at most
   * `pending` batches are in flight and passes the accumulators through
   * (so that nothing reads them earlier); async_proxy_fence makes this
   * thread's completed shared-memory writes visible to the instructions'
   * operand reads. */
  void (*wg_mma)(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, const gpu_tile *b, LLVMValueRef col0, int k0,
                 int n, LLVMValueRef *acc);
  void (*wg_fence)(gpu_gen *g);
  void (*wg_commit)(gpu_gen *g);
  void (*wg_wait)(gpu_gen *g, int pending, LLVMValueRef *acc, int n_acc);
  void (*async_proxy_fence)(gpu_gen *g);
  const gpu_frag_ops *wg_acc; /* fm x fn blocks of a warp's accumulators (acc_coord, n_acc) */
  /* Optional (NULL where absent; the fused attention's warpgroup path):
   * wg_mma_bt issues acc[64 x n] += A[row0 .. +64][k0 .. +16] *
   * B^T with B read K-major from b (b's rows n0 .. n0+n are B's columns,
   * 128-byte rows like A: softmax's S = Q K^T on K's [key][dim] tile);
   * wg_mma_ra issues acc[64 x n] += A * B[k0 .. +16][0 .. n] with A from
   * registers (`a`: the 4 i32 registers of the lane's m16n8k16 A fragment
   * of its warp's 16 rows, as load_a returns) and B a slab tile (P V).
   * wg_mma_bt with undefined accumulators (LLVMGetUndef) overwrites them
   * (acc = A B^T: no zeros to define inside the batch, which would
   * serialise the warpgroup's pipeline). */
  void (*wg_mma_bt)(gpu_gen *g, const gpu_tile *a, LLVMValueRef row0, const gpu_tile *b, LLVMValueRef n0, int k0,
                    int n, LLVMValueRef *acc);
  void (*wg_mma_ra)(gpu_gen *g, LLVMValueRef a, const gpu_tile *b, int k0, int n, LLVMValueRef *acc);
  /* Optional (NULL where absent; plan.tma): transaction barriers in shared
   * memory (8 bytes, `bar` a shared pointer) and 2-D bulk tensor copies.
   * mbar_init sets the arrival count (one thread, before a workgroup
   * barrier; mbar_init_fence publishes the inits to the copy engine);
   * mbar_wait spins until the phase of the given parity (i32 0/1) has
   * completed; mbar_arrive arrives; mbar_expect_tx arrives and adds `bytes`
   * (i32) of copies the phase waits for; tma_load_2d copies the box at
   * (c0, c1) (innermost first, i32) of the tensor map at `map` (a global
   * pointer) to `dst` (shared) and counts its bytes on `bar`; set_max_regs
   * moves the executing warpgroup's registers per thread to `regs`
   * (increase or decrease). */
  void (*mbar_init)(gpu_gen *g, LLVMValueRef bar, int count);
  void (*mbar_init_fence)(gpu_gen *g);
  void (*mbar_wait)(gpu_gen *g, LLVMValueRef bar, LLVMValueRef parity);
  void (*mbar_arrive)(gpu_gen *g, LLVMValueRef bar);
  void (*mbar_expect_tx)(gpu_gen *g, LLVMValueRef bar, int bytes);
  void (*tma_load_2d)(gpu_gen *g, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef c0, LLVMValueRef c1,
                      LLVMValueRef bar);
  void (*set_max_regs)(gpu_gen *g, int regs, int increase);
  /* starts fetching the tensor map at `map` (global) ahead of its first use */
  void (*tma_prefetch)(gpu_gen *g, LLVMValueRef map);
  /* named barrier `id` (1..15) of `count` threads: arrive only (no wait),
   * or arrive and wait until all `count` have arrived */
  void (*named_barrier)(gpu_gen *g, LLVMValueRef id, int count, int arrive_only);
} gpu_target_ops;

/* The plain-FMA fragment every target shares (fm = warp_size / 8, fn = 8,
 * fk = 4; one accumulator per lane), for f32 inputs and targets or dtypes
 * without a matrix instruction. */
const gpu_frag_ops *gpu_fma_frag(int warp_size);

/* Calls an intrinsic by name (overloaded ones with their type list). */
LLVMValueRef gpu_call_intrinsic(gpu_gen *g, const char *name, LLVMTypeRef *overloads, int n_over,
                                LLVMValueRef *args, int n_args);
LLVMValueRef gpu_i32(gpu_gen *g, long long v);

/* Builds kernel `name` for `plan` into `mod` (for a channels-last conv
 * also its input transform, gpu_nhwc_kernel_name). */
cov_status gpu_lower(const gpu_plan *plan, const gpu_target_ops *target, LLVMModuleRef mod,
                     const char *name);

/* Builds generic kernel `name` for `e` (struct gpu_ew, gpu_mplan.h) into
 * `mod` (gpu_lower_ew.c). */
struct gpu_ew;
cov_status gpu_lower_ew(const struct gpu_ew *e, const gpu_target_ops *target, LLVMModuleRef mod, const char *name);

#endif

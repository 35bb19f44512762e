/* backends/gpu/gpu_pool.h: the pooling kernels of compiled models
 * (GPU_EW_MAXPOOL, GPU_EW_GAVGPOOL; gpu_lower_pool.c) and how their
 * threads split the work, shared by the lowering, their C meaning
 * (gpu_ew_emu.c) and the plan (gpu_mlayout.c).
 *
 * Both read x [N][C][H][W] as NCHW f32 (in_dtype f32) or as the NHWC f16
 * form channels-last convolutions write (in_dtype f16).
 *
 * MAXPOOL: y [N][C][P][Q] = the max of x over the R x S window at strides
 * sh x sw from -pt, -pl (padding never wins: torch's max_pool2d), stored
 * NCHW f32 (out_dtype f32) or NHWC f16 (out_dtype f16). A thread per output
 * element, in the output's order; NHWC to NHWC with C a multiple of 8: a
 * thread per 8 channels of a pixel, each tap one 16-byte load.
 *
 * GAVGPOOL: y [N][C] = the mean of x over its H x W pixels, f32 or (out_dtype
 * f16) the next matrix kernel's f16 operand, rounded once. A
 * workgroup per (image, block of channels): `slots` channel slots of `vec`
 * channels (8 from NHWC f16 with C a multiple of 8: a 16-byte load a
 * pixel; else 1) times `lanes` pixel lanes (a power of two). Lane l sums
 * pixels l, l + lanes, ... in that order (f32); the lanes' sums then meet
 * in shared memory by a fixed pairwise tree (lane l += lane l + half, half
 * = lanes/2 .. 1, a barrier after each round), and lane 0 divides by H*W:
 * a fixed order, so results are deterministic and gpu_ew_emulate follows
 * it exactly. NHWC: neighbouring threads take neighbouring channels of a
 * pixel; NCHW: neighbouring pixels of a channel (coalesced either way). */
#ifndef COV_GPU_POOL_H
#define COV_GPU_POOL_H

#include <stdint.h>

#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_target.h"

typedef struct gpu_gpool_map {
  int vec;        /* channels a thread loads at once: 8 or 1 */
  int lanes;      /* pixel lanes per channel slot: a power of two */
  int slots;      /* channel slots per workgroup: GPU_EW_THREADS / lanes */
  int64_t blocks; /* workgroups per image */
} gpu_gpool_map;

/* The split of a GAVGPOOL e (lanes from H*W, at least enough that the
 * slots do not outnumber the channel vectors). */
gpu_gpool_map gpu_gpool_map_of(const gpu_ew *e);
/* Whether a MAXPOOL thread takes 8 channels (NHWC in and out, C % 8 == 0). */
int gpu_maxpool_vec8(const gpu_ew *e);
/* Threads of a launch of e (GAVGPOOL: whole workgroups) and the shared
 * bytes (GAVGPOOL: a float per thread and channel of its vector). */
int64_t gpu_pool_items(const gpu_ew *e);
unsigned gpu_pool_shared_bytes(const gpu_ew *e);
/* The kernel's body (x argument 0, y argument 2); an error where e's
 * sizes exceed the 32-bit indices. */
cov_status gpu_lower_pool_ew(gpu_gen *g, const gpu_ew *e, const char *name, LLVMValueRef x, LLVMValueRef y);

/* SEHEAD: a squeeze-excite head, a workgroup per image: x [N][C] f16
 * (argument 0, the pooled channels) through fc1 (argument 1, f16 [K][C],
 * or [C][K] with R = 1; bias argument 3, f32 [K]) and its activation
 * (post, post0, post1), then fc2 (argument 4, f16 [C][K], or [K][C] with
 * S = 1; bias argument 5, f32 [C]) and its activation (mul_fn, mul0,
 * mul1) into y [N][C] f32 (argument 2). fc1's output k: lane l of a warp
 * sums x[c] * w1 over c = l, l + GPU_SE_LANES, ... in order, the lanes
 * then add by a butterfly (masks GPU_SE_LANES/2 .. 1); fc2's output c sums
 * its K products in order. */
enum { GPU_SE_ARGS = 6, GPU_SE_LANES = 32, GPU_SE_MAX_C = 4096, GPU_SE_MAX_K = 1024 };
int gpu_se_ok(const gpu_ew *e);
unsigned gpu_se_shared_bytes(const gpu_ew *e);
cov_status gpu_lower_se(const gpu_ew *e, const gpu_target_ops *target, LLVMModuleRef mod, const char *name);
/* The head's C meaning (gpu_ew_emu.c) in the kernel's order. */
void gpu_se_emulate(const gpu_ew *e, const float *x, const float *w1, float *y, const float *b1, const float *w2,
                    const float *b2);

#endif

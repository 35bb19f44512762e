/* backends/gpu/gpu_lnorm.h: the layer normalisation kernel (GPU_EW_LNORM,
 * gpu_lower_ln.c) and how its threads split the work, shared by the
 * lowering, its C meaning (gpu_ew_emu.c) and the plan (gpu_mfuse_ln.c).
 *
 * x [N][C][W] is normalised over C for each of the N*W (n, w) pairs by
 * `lanes` threads (e->D, a power of two up to a workgroup), lane l taking
 * channels l, l + lanes, ... into registers. Where W > 1 (an NCHW
 * activation: pairs are pixels) a workgroup's thread t is pixel t % per_wg
 * and lane t / per_wg, so a warp's load of one channel reads neighbouring
 * pixels; where W == 1 (rows of contiguous channels) it is row t / lanes,
 * lane t % lanes, so a warp reads neighbouring channels. A sum over the
 * lanes (the mean, then the mean square deviation: f32, two passes, as the
 * codelet takes them) adds each warp's lanes of a pair by a butterfly of
 * lane exchanges (masks warp_lanes/2 .. 1), then the warps' sums in
 * shared memory in warp order: a fixed order, so results are
 * deterministic, and gpu_ew_emulate follows it exactly. */
#ifndef COV_GPU_LNORM_H
#define COV_GPU_LNORM_H

#include <stdint.h>

#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_target.h"

enum { GPU_LN_MAX_STEPS = 64 }; /* channels one lane holds in registers */

typedef struct gpu_ln_map {
  int lanes;       /* threads per pair */
  int per_wg;      /* pairs per workgroup: GPU_EW_THREADS / lanes */
  int warp_lanes;  /* lanes of a pair within one warp, summed by butterfly */
  int groups;      /* warps' sums per pair, added in shared memory: lanes / warp_lanes */
  int steps;       /* channels per lane: ceil(C / lanes) */
  int pixel_major; /* W > 1: thread t is pair t % per_wg, lane t / per_wg */
} gpu_ln_map;

/* The split of e (its D lanes); lanes 0 when D is not a power of two in
 * 1 .. GPU_EW_THREADS or a lane would hold more than GPU_LN_MAX_STEPS. */
gpu_ln_map gpu_ln_map_of(const gpu_ew *e);
/* The lanes per pair the plan gives C channels at W pairs per image
 * (about 8 channels a lane; at least a warp per row where W == 1); 0 where
 * C is too wide for GPU_LN_MAX_STEPS a lane. */
int gpu_ln_lanes(int64_t c, int64_t w);
/* Work items (whole workgroups: every thread takes part in the sums) and
 * the shared-memory bytes of a launch of e. */
int64_t gpu_ln_items(const gpu_ew *e);
unsigned gpu_ln_shared_bytes(const gpu_ew *e);
/* The kernel `name`'s body: every thread of the workgroup, no bound on
 * the work item around it (the sums need them all); y16: e->dual's f16
 * second store (NULL without). An error where e has
 * no split or the target no lane exchange its split needs. */
cov_status gpu_lower_lnorm(gpu_gen *g, const gpu_ew *e, const char *name, LLVMValueRef x, LLVMValueRef w,
                           LLVMValueRef y, LLVMValueRef bias, LLVMValueRef y16);

#endif

/* backends/gpu/gpu_mattn.h: fused attention found in a compiled model's
 * groups (gpu_mattn.c says which chains and how they are lowered).
 * Internal to backends/gpu. */
#ifndef COV_GPU_MATTN_H
#define COV_GPU_MATTN_H

#include "backends/gpu/gpu_attn.h"
#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"

enum {
  GPU_MATTN_COPIES = 8,     /* strided copies of the operands */
  GPU_MATTN_LOWERED = -1,   /* a group lowered as it is */
  GPU_MATTN_ABSORBED = -2,  /* a group the fused launch computes (no kernel of its own) */
};

/* One attention: the group of its P V product (where the launch goes), the
 * kernel's plan over [heads][seq][dim] padded to its tiles, and the copies
 * (from capture buffer ids src) of Q, K and V into one buffer of three
 * such tensors. */
typedef struct gpu_mattn_match {
  int pv;
  int64_t seq, dim; /* unpadded */
  gpu_attn attn;
  int mask_src; /* a run-time additive mask: its capture buffer id (-1: none) */
  int src[GPU_MATTN_COPIES];
  gpu_ew cp[GPU_MATTN_COPIES];
  int n_cp;
} gpu_mattn_match;

typedef struct gpu_mattn_set {
  int *role; /* per capture group: GPU_MATTN_LOWERED, GPU_MATTN_ABSORBED, or the match whose launch it is */
  gpu_mattn_match *m;
  int n;
} gpu_mattn_set;

/* Every attention chain of the capture that the target's attention
 * kernel takes (none where gpu_attn_plan refuses the target or the shape). */
struct gpu_target;
cov_status gpu_mattn_find(const gpu_capture *cap, const struct gpu_target *t, gpu_mattn_set *out);
/* The launches of match m (its P V group g): the copies of Q, K and V
 * into one zero-padded f16 buffer, the kernel writing the group's f32
 * result. */
cov_status gpu_mattn_lower(gpu_model_plan *p, const gpu_cap_group *g, const int *id_buf, const gpu_mattn_match *m);
void gpu_mattn_free(gpu_mattn_set *s);
/* After the plan-level passes: each fused attention whose f32 result only
 * one f16 copy reads (the heads merged into the next projection's
 * operand) stores that copy's elements itself, at the layout fitted to
 * the copy element by element (gpu_attn o_*, out_f16), and the copy goes;
 * each whose Q, K and V are copies of one matmul's result (a QKV
 * projection's head split) reads them in place from that matmul's f16
 * result (in_strided), and the copies go. */
cov_status gpu_mattn_fuse_out(gpu_model_plan *p);

#endif

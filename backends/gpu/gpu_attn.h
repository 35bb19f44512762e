/* backends/gpu/gpu_attn.h: fused attention, O = softmax(Q K^T * scale) V, in
 * one kernel (flash-attention 2: online softmax, S and P never leave the
 * registers). Internal to backends/gpu.
 *
 * Q, K, V and O are [heads][seq][dim] row-major 16-bit tensors (heads =
 * batch x attention heads, torch's [B][H][S][D] contiguous); O is written in
 * the input dtype, rounded once from f32, as torch's
 * scaled_dot_product_attention writes it. Kernel arguments (Q, K, V, O),
 * and the additive mask where `mask`. */
#ifndef COV_GPU_ATTN_H
#define COV_GPU_ATTN_H

#include <stdint.h>

#include "backends/gpu/gpu_target.h"

typedef struct gpu_attn {
  int64_t batch, heads, seq, dim; /* the layer: [batch][heads][seq][dim] */
  cov_dtype in_dtype;             /* f16 or bf16 */
  float scale;                    /* 1/sqrt(dim), or the model's scale (gpu_mattn.c) */
  /* keys past `keys` (< seq: a sequence padded to the tiles) and, when
   * causal, keys after the query row score -inf; key 0 is never masked,
   * so every row's first block sets its running max */
  int64_t keys;
  bool causal;
  /* mask: an f32 additive mask, a fifth argument: [heads?][keys][keys]
   * values added to the scaled scores of the valid rows and keys (head h
   * at h * mask_head elements: 0, one mask for every head), sums clamped
   * to the lowest finite float (a row every key of which is masked by
   * the lowest float weighs its keys equally, as the separate kernels do) */
  bool mask;
  int64_t mask_head;
  /* element offsets of K and V from their arguments (0: as given; a model
   * passes one buffer holding Q, K and V, gpu_mattn.c) */
  int64_t k_off, v_off;
  /* Q, K and V laid out as [heads][in_seq][in_dim] (seq, dim: the tiles'
   * sizes); rows past in_seq and columns past in_dim (a multiple of 8)
   * are read as zeros (asynchronous copies that read nothing) */
  int64_t in_seq, in_dim;
  /* in_strided: Q, K and V read at element (head h, row r, column d) =
   * off + (h / i_hn) * i_s1 + (h % i_hn) * i_s0 + r * i_row + d of their
   * arguments, off = q_off, k_off, v_off (all multiples of 8: 16-byte
   * chunks); the projection's f16 result read in place (gpu_mattn.c's
   * gpu_mattn_fuse_out: the head split fitted to the copy it replaces) */
  bool in_strided;
  int64_t q_off, i_hn, i_s0, i_s1, i_row;
  /* out_f32: O written as f32 [heads][out_seq][out_dim], only rows below
   * out_seq and columns below out_dim (a multiple of 8): the unpadded
   * result a model's next kernels read; else O as Q */
  bool out_f32;
  int64_t out_seq, out_dim;
  /* with out_f32, where O's element (head h, row i, column d) goes:
   * o_off + (h / o_hn) * o_s1 + (h % o_hn) * o_s0 + i * o_row + d (all
   * even); out_f16 stores it rounded to f16. gpu_attn_plan sets the
   * unpadded [heads][out_seq][out_dim] f32 layout; gpu_mattn.c's
   * gpu_mattn_fuse_out sets the layout and dtype of the copy it replaces
   * (the heads merged into the next projection's f16 operand) */
  int64_t o_off, o_hn, o_s0, o_s1, o_row;
  bool out_f16;
  /* schedule: bm query rows per workgroup, wm (16 or 32) per warp, whose
   * Q fragments stay in registers (K and V fragments are read from shared
   * memory once for both 16-row blocks of a 32-row warp), bn keys per step
   * (K and V tiles double-buffered in shared memory through asynchronous
   * copies) */
  int bm, bn, wm;
  /* warpgroup form only: block j's S issued with block j-1's P V, whose
   * softmax overlaps it (gpu_lower_attn.c, attn_wg) */
  bool pipe;
  /* warpgroup form only: block j-1's P V and block j's S issued as one
   * batch and awaited once, the softmax after it (attn_wg_chain) */
  bool chain;
  int threads;
  unsigned grid[3];
  unsigned shared_bytes;
} gpu_attn;

/* The plan of attention over [batch][heads][seq][dim] with `bm` query rows
 * per workgroup, `wm` per warp (16, 32; 64: one warpgroup) and `bn` keys
 * per block (64 or 128; 0: 64), pipelined, chained or neither (warpgroups only), as the mapper chose them
 * (map_gpu_attn_plan) or a spec fixed them: a located error where the shape
 * or the target does not fit (seq a multiple of the tiles, dim a multiple
 * of 16 up to 128, 16-bit inputs, matrix fragments m16n8k16, asynchronous
 * copies, a warp shuffle). */
cov_status gpu_attn_plan(int64_t batch, int64_t heads, int64_t seq, int64_t dim, cov_dtype in_dtype, int bm,
                         int wm, int bn, bool pipe, bool chain, const gpu_target_ops *target, const char *where,
                         gpu_attn *out);

/* Sets a's output layout to the unpadded [heads][out_seq][out_dim]
 * tensor (o_off 0, one run of heads at o_s0 = out_seq * out_dim). */
void gpu_attn_out_dense(gpu_attn *a);

/* Builds the kernel `name` for `a` into `mod`. */
cov_status gpu_lower_attn(const gpu_attn *a, const gpu_target_ops *target, LLVMModuleRef mod, const char *name);

/* The floor of an additively masked score (the sum of score and mask /
 * scale, before the scale): finite once scaled. */
double gpu_attn_mask_floor(const gpu_attn *a);

/* What the vendor's build reads of a plan (threads, dtype, matrix shape). */
void gpu_attn_vendor_plan(const gpu_attn *a, gpu_plan *p);

/* 1 if `spec` names fused attention (attn_BxHxSxD[:BMxWM[xBN][p|c]]). */
int gpu_attn_is_spec(const char *spec);

/* Compiles the spec (f16 unless opts->dtype) into out_dir and returns its
 * manifest entry (kind "attention": B, H, S, D, scale, launch). */
struct gpu_target;
struct cov_gpu_options;
struct json_t;
cov_status gpu_attn_compile(const struct gpu_target *t, const struct cov_gpu_options *opts, const char *spec,
                            const char *out_dir, struct json_t **entry);

#endif

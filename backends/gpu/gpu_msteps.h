/* backends/gpu/gpu_msteps.h: queries and edits of a compiled model's steps
 * that the plan-level passes share (gpu_mfuse.c, gpu_mfuse_act.c,
 * gpu_mfuse_ln.c): who uses a buffer, which step writes it, the fused copy
 * that replaces a group's kernel; and the appending of a buffer or a step
 * to a plan, for the files that build plans (gpu_mcompile.c, gpu_mlayout.c,
 * gpu_mattn.c). A pass marks the steps it removes in
 * `del` (one byte per step) and compacts the plan at its end. */
#ifndef COV_GPU_MSTEPS_H
#define COV_GPU_MSTEPS_H

#include "backends/gpu/gpu_mplan.h"

/* Adds a buffer of the given shape (copied first: it may point into
 * p->bufs) to the plan: its index, or -1 with *st set. */
int gpu_ms_add_buf(gpu_model_plan *p, const char *name, gpu_buf_kind kind, cov_dtype dt, int rank, const int64_t *shape,
                   cov_status *st);
/* Appends a step to the plan: zeroed, then group and label (copied,
 * truncated to the label's size) set, no module, no fill buffer, four
 * arguments all -1, a 1 x 1 x 1 grid and block; the caller sets op (0:
 * GPU_STEP_LAUNCH) and the rest. NULL with *st set where it cannot grow. */
gpu_mstep *gpu_ms_add_step(gpu_model_plan *p, int group, const char *label, cov_status *st);
/* The steps other than `skip` that use buffer b (launch arguments, fills;
 * with skip = -1 - k, launches other than k only): how many, the last one
 * in *who. */
int gpu_ms_users(const gpu_model_plan *p, const char *del, int b, int skip, int *who);
/* Whether step s writes buffer b (a launch's output or workspace, a fill). */
int gpu_ms_writes(const gpu_mstep *s, int b);
/* Whether step s is a launch of codelet `name`'s kernel. */
int gpu_ms_is_codelet(const gpu_mstep *s, const char *name);
/* Marks the fills of buffer b deleted (a fused kernel writes all of it). */
void gpu_ms_drop_fills(const gpu_model_plan *p, char *del, int b);
/* The activation of a unary codelet step, into e->post with its
 * parameters; 0: none. */
int gpu_ms_activation(const gpu_mstep *s, gpu_ew *e);
/* Whether buffer b is an f32 constant of one element equal to v (within
 * 1e-6 relative). */
int gpu_ms_scalar(const gpu_model_plan *p, int b, double v);
/* The whole-buffer f16 copy of buffer b after step `after` (a matrix
 * kernel's operand copy), -1 if none. */
int gpu_ms_f16_copy_from(const gpu_model_plan *p, const char *del, int b, int after);
/* Whether step s is the conversion of f32 NCHW buffer b to NHWC f16
 * (gpu_mlayout.c's), which a fused kernel can store instead. */
int gpu_ms_to_nhwc(const gpu_model_plan *p, const gpu_mstep *s, int b);
/* The copy kernel that replaces step `at`: z = x over x's elements, f32
 * out; the caller sets what it applies (a post function, a gate). */
gpu_mstep gpu_ms_fused_copy(const gpu_model_plan *p, const gpu_mstep *at, int x, int z, const char *suffix);
/* Puts f in place of step m and deletes step i (what it absorbed; none
 * where i == m); where
 * f's result is read only by its f16 operand copy, f writes that copy's
 * buffer instead and the copy goes too. */
void gpu_ms_replace(gpu_model_plan *p, char *del, int i, int m, gpu_mstep *f);
/* Step L, a LayerNorm between transposes to and from NHWC, as one kernel
 * over the channels of the NCHW activation (gpu_mfuse_ln.c); returns
 * whether it did. */
int gpu_ms_fuse_lnorm(gpu_model_plan *p, char *del, int L);
/* Concats along channels of channels-last results moved in their 16-bit
 * forms, layout copies writing their result's f16 operand copy
 * (gpu_mfuse_cat.c); scratch holds n_steps ints. Returns whether it
 * changed anything, -1 when out of memory. */
int gpu_ms_fuse_concat(gpu_model_plan *p, char *del, int *scratch);
/* Step i, a squeeze-excite block's fc1, with the f16 copy of its result
 * and fc2, as one head kernel in fc2's place (gpu_mfuse_se.c); returns
 * whether it did. */
int gpu_ms_fuse_se(gpu_model_plan *p, char *del, int i);
/* Step i, a squeeze-excite gate's copy writing the f16 operand of a matrix
 * kernel that gathers it from NCHW, applied by that kernel as it loads
 * the operand instead (gpu_mfuse_gate.c); returns whether it did. */
int gpu_ms_fuse_gate_a(gpu_model_plan *p, char *del, int i);
/* Step i, a plain f16 copy of an f32 activation that only a matrix kernel
 * gathering it from NCHW reads, done by that kernel as it loads the
 * operand (GPU_APRO_CAST, gpu_mfuse_gate.c); returns whether it did. */
int gpu_ms_fuse_cast_a(gpu_model_plan *p, char *del, int i);
/* Step i, a squeeze-excite gate's copy between a channels-last result's
 * conversion back to f32 NCHW and the next channels-last kernel's
 * conversion to NHWC f16, as one copy of the NHWC f16 activation scaled
 * by the per-(image, channel) gate (gpu_mfuse_gate.c): two launches and
 * 16 of 20 bytes an element fewer. Returns whether it did. */
int gpu_ms_fuse_gate_nhwc(gpu_model_plan *p, char *del, int i);
/* Whether conv step i is one of an MLP's two ungrouped convs: one
 * widening the channels whose f32 result goes whole, through one f16
 * operand copy, to one narrowing them; where the model compiler lets the
 * channels-last kernel zero-fill channel tails (gpu_mpad.c). */
int gpu_model_pad_link(const gpu_model_plan *p, int i);
/* Whether conv step i has so many output channels (512 or more) that the
 * channels-last kernel's zero-filled tail of its last N tile costs little,
 * and only a global average pool reads its result (gpu_mpad.c):
 * SqueezeNet's classifier conv, 1000 channels. */
int gpu_model_pad_wide(const gpu_model_plan *p, int i);
/* Whether copy e of a [M][N] buffer moves every row m whole to row (m / rq)
 * * r1 + (m % rq) * r0 of its result (a permutation, not the identity),
 * each element once: the fit in out[3] (rq, r0, r1); 0 if not so or out
 * of memory (gpu_mfuse_epi.c). */
int gpu_ms_fit_rows(const gpu_ew *e, int64_t M, int64_t N, int64_t out[3]);
/* Residual adds as the epilogue addend of the matmul producing their
 * other input, matmul results read only as f16 operands stored as those
 * (gpu_mfuse_epi.c). Returns whether it changed anything. */
int gpu_ms_fuse_matrix_epi(gpu_model_plan *p, char *del);
/* Whether copy e reads an NHWC f16 activation as the f32 NCHW buffer b
 * [N][C][H][W] (gpu_mlayout.c's conversion back: destination pixels
 * consecutive, source channels at stride 1). */
int gpu_ms_reads_nhwc_as(const gpu_model_plan *p, const gpu_ew *e, int b);
/* Drops the steps marked in del. */
void gpu_ms_compact(gpu_model_plan *p, const char *del);

/* A codelet kernel's weight made earlier for the same model constant
 * (name, dtype and elements: the recurrent weights every step of a layer
 * reads) that codelet kernels alone read (no later pass rewrites their
 * weights, as the channels-last pass reorders a convolution's), or -1. */
int gpu_ms_same_weight(const gpu_model_plan *p, const char *name, const cov_tensor *t);

#endif

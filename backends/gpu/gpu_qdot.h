/* backends/gpu/gpu_qdot.h: the integer dot-product kernel of quantized
 * layers (gpu_lower_qdot.c): an i8 x i8 convolution or matmul accumulated
 * in i32 four products per instruction (the target's dot4_i8: PTX
 * dp4a.s32.s32, AMDGPU v_dot4_i32_i8), its integer bias and the
 * requantisation to i8 / u8 fused, as the codelets conv2d_acc /
 * matmul_acc, bias_add / bias_add_chw / bias_add_2d and requant_* compute
 * them (codelets/quant.cdl), bit for bit.
 *
 * gpu_ew kind GPU_EW_QDOT, n its work items (gpu_qdot_kb), the conv fields (a matmul [M, Kr] x [Kr, N] is
 * the conv N = M, C = Kr, K = N, every spatial size 1); out_dtype i8 / u8
 * (requantised) or i32 (the accumulator); bias 0 (none), 1 (per output
 * channel, [K]) or 2 (per output position, [K, P, Q]). Arguments: x (i8,
 * NCHW), w (the packed weights, gpu_qdot_pack), y, bias (i32), m and zp
 * (f32 [K], the requantisation's scale and zero point). */
#ifndef COV_GPU_QDOT_H
#define COV_GPU_QDOT_H

#include <stdint.h>

#include "backends/gpu/gpu_mcapture.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_target.h"

enum { GPU_QDOT_ARGS = 6, GPU_QDOT_KB = 4 };

/* Output channels per work item: 4, 2 or 1, what divides K / groups;
 * the kernel's work items (gpu_ew.n) are N * K / kb * P * Q. */
int gpu_qdot_kb(const gpu_ew *e);
/* Words of four input channels per filter tap: ceil(C / groups / 4). */
int64_t gpu_qdot_c4(const gpu_ew *e);
/* i32 words of the packed weights: K * R * S * gpu_qdot_c4. */
int64_t gpu_qdot_words(const gpu_ew *e);
/* The weights as the kernel reads them, [K][R][S][C4] words of four i8
 * channels (channel 4j + b in byte b, channels past C / groups zero),
 * from OIHW [K][C/groups][R][S] i8, or with `kn` from a matmul's
 * [C][K] (then R = S = 1). */
void gpu_qdot_pack(const gpu_ew *e, const int8_t *w, int kn, int32_t *out);
/* The kernel into `mod` as `name` (one work item per output element). */
cov_status gpu_lower_qdot(const gpu_ew *e, const gpu_target_ops *target, LLVMModuleRef mod, const char *name);
/* The same in C, every work item; y is out_dtype. */
void gpu_qdot_emulate(const gpu_ew *e, const int8_t *x, const int32_t *w, void *y, const int32_t *bias,
                      const float *m, const float *zp);

/* A chain of a model group's calls the kernel takes (gpu_mqdot.c): the
 * kernel and the constant operands it reads. */
typedef struct gpu_qdot_layer {
  gpu_ew e;                     /* the kernel (kind GPU_EW_QDOT) */
  const gpu_cap_arg *w;         /* i8 weights: OIHW, or a matmul's [C][K] (kn) */
  const gpu_cap_arg *bias;      /* i32, or NULL */
  const gpu_cap_arg *m, *zp;    /* f32 [K], or NULL (an i32 result) */
  int x_call;                   /* the call whose argument 0 is x */
  int kn;
} gpu_qdot_layer;
/* How many calls of group g from c0 the kernel takes (0: none): conv2d_acc
 * or matmul_acc of a run-time i8 value and constant i8 weights, then
 * optionally its constant i32 bias (bias_add, bias_add_chw, bias_add_2d)
 * and requantisation (requant_i8 / _u8, requant_2d_i8 / _u8) with
 * constant f32 scales and zero points. */
size_t gpu_qdot_chain(const gpu_cap_group *g, size_t c0, gpu_qdot_layer *l);
/* The layer's weights packed (gpu_qdot_pack; gpu_qdot_words of them,
 * malloc'd: the caller frees; NULL: out of memory). */
int32_t *gpu_qdot_packed(const gpu_qdot_layer *l);

#endif

/* backends/gpu/gpu_driver.h: the GPU target registry and per-layer builds,
 * shared by cov_gpu_compile, cov_gpu_run and the tests. */
#ifndef COV_GPU_DRIVER_H
#define COV_GPU_DRIVER_H

#include <stddef.h>

#include "backends/gpu/gpu_layer.h"
#include "backends/gpu/gpu_target.h"
#include "covenant/gpu.h"

typedef struct gpu_vendor gpu_vendor; /* backends/gpu/gpu_vendor.h */

struct gpu_tuning;
typedef struct gpu_target {
  cov_acg *acg;
  const gpu_vendor *vendor; /* the one whose backend is the ACG's backend.name */
  const gpu_target_ops *ops;
  gpu_target_caps caps;
  int shapes[8][3];
  int n_shapes;
  /* the tuning file's schedules (gpu_tune.h; NULL: none), read by
   * gpu_plan_pick; freed by gpu_target_close */
  struct gpu_tuning *tuning;
  /* models: activations stay f32 NCHW between kernels (no channels-last
   * pass, gpu_model_channels_last); cov_gpu_options.f32_activations */
  int f32_activations;
  /* the operand dtype it was opened for: COV_F32 gives a compiled model's
   * matrix kernels f32 operands and weights instead of f16 */
  cov_dtype dtype;
  /* caps and shapes for f32 operands: what a group promoted to f32 in an
   * f16 plan is planned against */
  gpu_target_caps caps_f32;
  int shapes_f32[8][3];
  int n_shapes_f32;
  /* models: the layer groups whose matrix kernels take f32 operands (f32
   * weights, no f16 copies) in an otherwise f16 plan: group
   * g where g < n_f32_groups and f32_groups[g] (gpu_mprec.c picks them);
   * NULL: none */
  const unsigned char *f32_groups;
  int n_f32_groups;
  /* models: 1 keeps every matrix kernel on f16 operands; 0 lets
   * gpu_model_compile_with promote the first groups to f32 operands where
   * the f16 plan's estimated error is over budget (gpu_mprec.c;
   * cov_gpu_options.f16_operands) */
  int f16_operands;
} gpu_target;

typedef struct gpu_kernel_info {
  long vgprs, agprs, lds_bytes, scratch_bytes; /* -1 where unknown */
} gpu_kernel_info;

/* Loads target `name` and picks, from the NULL-terminated `vendors`, the
 * one that serves its backend.name. */
cov_status gpu_target_open(const gpu_vendor *const *vendors, const char *name, cov_dtype dtype, gpu_target *t);
void gpu_target_close(gpu_target *t);
/* Lowers `plan` as `kernel` and emits the target's code object. */
cov_status gpu_build_kernel(const gpu_target *t, const gpu_plan *plan, const char *kernel,
                            unsigned code_object_version, char **out, size_t *out_size,
                            gpu_kernel_info *info);
/* Lowers generic kernel `e` (struct gpu_ew, gpu_mplan.h) as `kernel` and
 * emits the target's code object. */
struct gpu_ew;
cov_status gpu_build_ew_kernel(const gpu_target *t, const struct gpu_ew *e, const char *kernel, char **out,
                               size_t *out_size, gpu_kernel_info *info);
/* Lowers fused attention `a` (struct gpu_attn, gpu_attn.h) as `kernel` and
 * emits the target's code object. */
struct gpu_attn;
cov_status gpu_build_attn_kernel(const gpu_target *t, const struct gpu_attn *a, const char *kernel, char **out,
                                 size_t *out_size, gpu_kernel_info *info);
cov_status gpu_compile_one(const gpu_target *t, const cov_gpu_options *opts, const char *spec,
                           gpu_layer *layer, gpu_plan *plan, char **code, size_t *code_size,
                           gpu_kernel_info *info);
/* Plans (or takes `schedule` = {bm, bn, bk, wm, wn, stages, wgmma,
 * inflight, out_f16}, may be NULL; wgmma 1: wm x wn is a warpgroup tile of
 * warpgroup MMAs, with `inflight` batches in flight, -1 for the default;
 * wgmma 2 / 3: the same fed by bulk tensor copies (plan.tma) without / with
 * setmaxnreg; out_f16: f16 outputs, plan.tma only), lowers and emits one
 * layer. */
cov_status gpu_compile_layer(const gpu_target *t, const cov_gpu_options *opts, gpu_layer *layer,
                             const int *schedule, gpu_plan *plan, char **code, size_t *code_size,
                             gpu_kernel_info *info);

/* Prints the mapper's ranked GPU schedules of `spec` that the lowering
 * takes (at most `top`), one per line: the spec, the same spec with the
 * schedule hand-fixed (SPEC:BMxBNxBK:WMxWN:STAGES[:wgD]), the kernel name
 * that compiles to, the rank and the predicted cycles (bench/nvptx/scripts/rank_*). */
cov_status gpu_spec_candidates(const gpu_target *t, const char *suite, const char *spec, cov_dtype dt, int top,
                               FILE *out);

#endif

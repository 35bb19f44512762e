/* backends/gpu/gpu_target.c: a GPU target opened: its ACG loaded, the
 * vendor whose backend is its backend.name picked from the list the
 * registry passes in (backends/gpu/gpu_vendor.h), the vendor's target
 * operations and capabilities, and the tuning file's schedules. */
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_tune.h"
#include "backends/gpu/gpu_vendor.h"

cov_status gpu_target_open(const gpu_vendor *const *vendors, const char *name, cov_dtype dtype, gpu_target *t) {
  memset(t, 0, sizeof *t);
  COV_RETURN_IF_ERROR(cov_acg_load_target(name, &t->acg));
  const char *be = t->acg->backend.name ? t->acg->backend.name : "";
  cov_status st = NULL;
  for (int i = 0; vendors[i] && !t->vendor; i++)
    if (!strcmp(be, vendors[i]->backend)) t->vendor = vendors[i];
  if (t->vendor)
    t->ops = t->vendor->ops;
  else
    st = cov_error(COV_UNSUPPORTED, GPU_LOC(cov_acg_file(t->acg), "$.backend.name"), "target %s has backend '%s'; the GPU lowering serves amdgpu and nvptx",
                   cov_acg_name(t->acg), be);
  if (!st && !t->acg->backend.mcpu)
    st = cov_error(COV_INVALID_INPUT, GPU_LOC(cov_acg_file(t->acg), "$.backend"), "backend.mcpu is required for a GPU target");
  if (!st) st = gpu_caps_from_acg(t->acg, dtype, &t->caps);
  if (!st) st = gpu_caps_from_acg(t->acg, COV_F32, &t->caps_f32);
  if (st) {
    cov_acg_free(t->acg);
    t->acg = NULL;
    return st;
  }
  t->caps.has_async_copy = t->ops->async_copy16 != NULL;
  t->caps.has_wgmma = t->ops->wg_mma != NULL;
  t->caps.has_tma = t->ops->wg_mma != NULL && t->ops->tma_load_2d != NULL && t->ops->mbar_init != NULL;
  t->caps_f32.has_async_copy = t->caps.has_async_copy;
  t->caps_f32.has_wgmma = t->caps.has_wgmma;
  t->caps_f32.has_tma = t->caps.has_tma;
  t->n_shapes = t->ops->matrix_shapes(dtype, t->shapes, 8);
  t->n_shapes_f32 = t->ops->matrix_shapes(COV_F32, t->shapes_f32, 8);
  t->dtype = dtype;
  return NULL;
}

void gpu_target_close(gpu_target *t) {
  if (t->acg) cov_acg_free(t->acg);
  t->acg = NULL;
  gpu_tuning_free(t->tuning);
  t->tuning = NULL;
}

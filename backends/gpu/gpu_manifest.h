/* backends/gpu/gpu_manifest.h: the layer manifest of `covenant gpu compile`
 * (gpu_driver.c), which the tuning artifact (gpu_tune_prep.c) and the model
 * compiler's plan keys (gpu_mcompile.c, gpu_mplan.c) describe kernels with:
 * one writer of a kernel's code object and entry, so every manifest names
 * files and kernels the same way. Internal to backends/gpu. */
#ifndef GPU_MANIFEST_H
#define GPU_MANIFEST_H

#include <jansson.h>
#include <stddef.h>

#include "backends/gpu/gpu_plan.h"
#include "backends/gpu/gpu_driver.h"

/* The plan's description (problem, tile, copies, layout, launch): equal
 * descriptions build equal kernels. */
json_t *gpu_plan_json(const gpu_plan *p);
/* Sets a kernel's launch in its manifest entry o: "grid" (3 workgroup
 * counts), "block" ([threads, 1, 1]) and "shared_bytes". */
void gpu_launch_json(json_t *o, const unsigned grid[3], int threads, uint64_t shared_bytes);
/* mkdir -p; errors name the directory. */
cov_status gpu_mkdir_p(const char *dir);
/* Writes a layer's code object (n bytes) to DIR/NAME.EXT and returns its
 * manifest entry in *entry: the plan, "name", "kernel" (covenant_NAME, also
 * copied to kernel[128] when not NULL), the NHWC pre-transform's kernel and
 * "file". */
cov_status gpu_write_kernel(const gpu_target *t, const char *dir, const char *name, const gpu_plan *plan,
                            const char *code, size_t n, json_t **entry, char *kernel);

#endif

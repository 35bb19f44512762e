/* what the check lets through: the registry's header, a target's name, a
 * path, a comment naming npu-sim, nvptx and gpu_target, a member called
 * gpus, an identifier that merely contains gpu_ */
#include "backends/registry/backend_registry.h"
static const char *help = "targets: nvptx-sm90, amdgpu-gfx942 (backends/npu-sim/ISA.md)";
static int count(const struct row *r) { return r->gpus + map_gpu_rank(r); } // nvptx here is a comment

/* runtime/crt_npu.h: NPU programs of an artifact in the simulator
 * (runtime/devices/crt_npu.c, the simulator's device). Built
 * with the simulator (CRT_WITH_NPU) in the full tree; the standalone
 * runtime (runtime/CMakeLists.txt on a GPU machine) has no simulator and
 * says so when given an NPU artifact. */
#ifndef CRT_NPU_H
#define CRT_NPU_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/crt.h"

typedef struct crt_npu crt_npu;

/* Loads the artifact's ACG (embedded, or a shipped target named by arch),
 * decodes every program, checks the plan's dataflow against the programs'
 * tensor roles and verifies every program (within the options' NPU
 * limits; 0: the simulator's defaults), all before any runs. */
cov_status crt_npu_open(const crt_artifact *a, const crt_options *o, crt_npu **out, char *device, size_t device_size);
/* Runs step `step` (an npu step): bound buffers at host addresses addr[]. */
cov_status crt_npu_step(crt_npu *n, const crt_artifact *a, int step, const uint64_t *addr);
void crt_npu_close(crt_npu *n);

#endif

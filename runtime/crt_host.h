/* runtime/crt_host.h: host steps and control (format version 5): copies,
 * codelet calls run by the reference interpreter on the codelets the
 * artifact carries, parts of the model run by the reference interpreter
 * (the parts whose sizes depend on the data), loops and branches driven
 * from values in buffers (runtime/README.md, "Host steps and control",
 * "Data-dependent sizes").
 *
 * The executor knows no device: it reads and writes buffers at the host
 * addresses it is given. A session whose buffers live on a device gives
 * it host copies of the buffers a step names (crt_host_step_buffers) and
 * copies back what the step wrote. */
#ifndef CRT_HOST_H
#define CRT_HOST_H

#include <stdint.h>

#include "runtime/crt.h"

typedef struct crt_host crt_host;

/* Whether this runtime can run the artifact's host steps: codelet calls
 * and part steps need the reference interpreter, which the standalone
 * runtime (cmake -S runtime) does not have; its refusal, located at the
 * artifact's `codelets` or `onnx`, needs no device. NULL in the full tree. */
cov_status crt_host_check(const crt_artifact *a);
/* Parses the artifact's codelets and finds each host step's. */
cov_status crt_host_open(const crt_artifact *a, crt_host **out);
/* Runs step s (copy, host, loop, next, if, jump) over buffers at host
 * addresses addr[]; *next: the step to run after it. */
cov_status crt_host_step(crt_host *h, const crt_artifact *a, int s, const uint64_t *addr, int *next);
void crt_host_close(crt_host *h);
/* A cap below the capacities: a part step's output holding more than n
 * elements in a run is an error naming it (crt_options.max_dynamic_elems;
 * 0: none). */
void crt_host_set_max_dynamic(crt_host *h, uint64_t n);
/* The buffers step s reads (*n_read of them first in out[]) and writes,
 * at most max; returns how many (more than max: out[] holds the first
 * max). For a device session's copies around a host step. */
int crt_host_step_buffers(const crt_artifact *a, int s, int *out, int max, int *n_read);
/* The shape buffer b holds now: the one the last part step that wrote it
 * gave it where its dims are set at run time (crt_buffer.dynamic; its
 * capacity before any did), else the manifest's. */
void crt_host_shape(const crt_host *h, const crt_artifact *a, int b, int *rank, int64_t *shape);

#endif

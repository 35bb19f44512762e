/* runtime/crt_host.h: host steps and control (format version 5): copies,
 * codelet calls run by the reference interpreter on the codelets the
 * artifact carries, loops and branches driven from values in buffers
 * (runtime/README.md, "Host steps and control"). */
#ifndef CRT_HOST_H
#define CRT_HOST_H

#include <stdint.h>

#include "runtime/crt.h"

typedef struct crt_host crt_host;

/* Parses the artifact's codelets and finds each host step's. */
cov_status crt_host_open(const crt_artifact *a, crt_host **out);
/* Runs step s (copy, host, loop, next, if, jump) over buffers at host
 * addresses addr[]; *next: the step to run after it. */
cov_status crt_host_step(crt_host *h, const crt_artifact *a, int s, const uint64_t *addr, int *next);
void crt_host_close(crt_host *h);

#endif

/* runtime/crt_tune.h: `covenant-run TUNE_DIR --tune`: step 2 of measured
 * tuning (backends/gpu/gpu_tune.h) on the device, through the CUDA driver
 * only (no LLVM, no torch).
 *
 * TUNE_DIR (covenant tune ... -o TUNE_DIR) holds the kernels (PTX),
 * manifest.json (each kernel's launch and problem, as `covenant gpu
 * compile` writes it) and tune.json (groups: a key, the compiler's pick,
 * the mapper's candidate schedules). For every group: random inputs
 * (seeded), the pick's output as the reference, every candidate's output
 * on the same inputs compared with it (max|x - ref| / max|ref| within the
 * tolerance, else "ok": false: never chosen), then every kernel of the
 * group timed with CUDA events, repetitions alternating between the
 * kernels, the median kept. Writes times.json (gpu_tune_record reads it). */
#ifndef CRT_TUNE_H
#define CRT_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "covenant/status.h"

typedef struct crt_tune_options {
  uint64_t seed;    /* random inputs */
  int iters;        /* launches per timed repetition */
  int reps;         /* repetitions; the median is kept */
  double tolerance; /* largest accepted max|x - ref| / max|ref| */
} crt_tune_options;

/* Runs the tuning artifact `dir`, writes times.json to `out_path`, one line
 * per kernel to log. COV_DEVICE_ERROR without a CUDA driver or GPU. */
cov_status crt_tune_run(const char *dir, const crt_tune_options *o, const char *out_path, FILE *log);

#endif

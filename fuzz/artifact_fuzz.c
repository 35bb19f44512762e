/* fuzz/artifact_fuzz.c: libFuzzer target for the artifact reader
 * (runtime/crt_artifact.c) and its JSON reader (runtime/crt_json.c). Each
 * input is tried twice: as a whole artifact file, and as a manifest placed
 * in a well-formed container whose data section is 64 KiB of zeros, so the
 * fuzzer reaches the manifest's checks without having to forge checksums
 * (the seeds, tests/runtime/fuzz_seeds, are real manifests with their blob
 * checksums rewritten for zero bytes). An artifact that reads is walked
 * whole and offered to crt_session_open with a target it does not have
 * (refused before any device is opened). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "runtime/crt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { ZEROS = 64 * 1024 };

static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void walk(const crt_artifact *a) {
  volatile uint64_t sum = 0;
  for (int i = 0; i < a->n_steps; i++) {
    const crt_step *s = &a->steps[i];
    for (int k = 0; k < s->n_args; k++)
      if (s->args[k].kind == CRT_ARG_BUFFER) sum += a->buffers[s->args[k].buffer].bytes;
    for (int k = 0; k < s->n_binds; k++) sum += a->buffers[s->binds[k].buffer].bytes + strlen(s->binds[k].tensor);
  }
  for (int i = 0; i < a->n_buffers; i++)
    if (a->buffers[i].kind == CRT_BUF_WEIGHT) sum += crt_blob_data(a, a->buffers[i].blob)[0] + crt_weight_offset(a, i);
  crt_options o = {.expect_target = "fuzz-target-that-does-not-exist"};
  crt_session *s = NULL;
  fuzz_rejected(crt_session_open(a, &o, &s));
  crt_session_close(s);
  (void)sum;
}

static void try_read(const uint8_t *bytes, size_t n) {
  crt_artifact *a = NULL;
  if (!fuzz_rejected(crt_artifact_read(bytes, n, "fuzz", &a))) walk(a);
  crt_artifact_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try_read(data, size);
  if (size > (1u << 20)) return 0;
  size_t doff = (64 + size + 255) / 256 * 256, total = doff + ZEROS;
  uint8_t *f = calloc(1, total);
  if (!f) return 0;
  memcpy(f, CRT_MAGIC, 8);
  f[8] = CRT_FORMAT_VERSION;
  f[12] = CRT_HEADER_BYTES;
  wr64(f + 16, total);
  wr64(f + 24, 64);
  wr64(f + 32, size);
  wr64(f + 40, crt_fnv1a64(data, size));
  wr64(f + 48, doff);
  wr64(f + 56, ZEROS);
  memcpy(f + 64, data, size);
  try_read(f, total);
  free(f);
  return 0;
}

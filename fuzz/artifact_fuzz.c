/* fuzz/artifact_fuzz.c: libFuzzer target for the artifact reader
 * (runtime/crt_artifact.c), its JSON reader (runtime/crt_json.c) and the
 * checks an NPU session makes before anything runs (runtime/devices/crt_npu.c: the
 * ACG, the programs, the plan's dataflow). Each input is tried two ways:
 *   1. as a whole artifact file, as it is;
 *   2. with every checksum the reader checks made right again (the
 *      header's sizes, version and manifest checksum, each blob's fnv1a64
 *      patched in the manifest's text). An input that is an artifact (the
 *      .cvx seeds in tests/runtime/fuzz_seeds, compiled models) keeps its
 *      data section: a mutation of it becomes a hand edit that keeps the
 *      file consistent, so the fuzzer learns manifest rewrites that reach
 *      the plan and dataflow checks rather than the checksum refusals. Any
 *      other input is a manifest (the .json seeds) over a data section of
 *      64 KiB of zeros.
 * An artifact that reads is walked whole; an npu-sim one is opened (its
 * ACG, programs decoded and verified under a small instruction limit, the
 * dataflow; nothing runs); any other is refused for a target it does not
 * have before any device is opened. */
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "runtime/crt.h"
#include "runtime/crt_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

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
  /* npu-sim: opened (the session allocates its buffers in host memory:
   * only where they are small, so a manifest's 2^40-byte arena is no
   * out-of-memory finding) */
  uint64_t bytes = a->arena_bytes + a->weight_bytes;
  for (int i = 0; i < a->n_buffers; i++) bytes += a->buffers[i].kind == CRT_BUF_VIEW ? 0 : a->buffers[i].bytes;
  int npu = !strcmp(a->backend, "npu-sim") && bytes < (64u << 20);
  crt_options o = {.expect_target = npu ? NULL : "fuzz-target-that-does-not-exist", .max_npu_insns = 100000};
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

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* The byte offset of line:col (1-based) in text[0..n), or n. */
static size_t offset_of(const char *text, size_t n, int line, int col) {
  size_t i = 0;
  for (int l = 1; l < line && i < n; i++)
    if (text[i] == '\n') l++;
  return col >= 1 && i + (size_t)col - 1 < n ? i + (size_t)col - 1 : n;
}

/* Each blob's "fnv1a64" in the manifest text rewritten (in place, same
 * length) to the checksum of the bytes its offset and size name in data. */
static void fix_blob_checksums(char *text, size_t n, const uint8_t *data, uint64_t dbytes) {
  crt_json_doc *doc = NULL;
  if (fuzz_rejected(crt_json_parse(text, n, "fuzz", &doc))) return;
  const crt_json *blobs = crt_json_get(crt_json_root(doc), "blobs");
  for (size_t i = 0; blobs && blobs->kind == CRT_JSON_ARRAY && i < blobs->n; i++) {
    const crt_json *b = blobs->items[i];
    if (b->kind != CRT_JSON_OBJECT) continue;
    const crt_json *off = crt_json_get(b, "offset"), *len = crt_json_get(b, "bytes"), *h = crt_json_get(b, "fnv1a64");
    if (!off || !len || !h || !off->is_int || !len->is_int || h->kind != CRT_JSON_STRING || h->len != 16) continue;
    if (off->i < 0 || len->i < 0 || (uint64_t)off->i > dbytes || (uint64_t)len->i > dbytes - (uint64_t)off->i) continue;
    size_t at = offset_of(text, n, h->line, h->col);
    if (at + 17 >= n || text[at] != '"' || text[at + 17] != '"') continue;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)crt_fnv1a64(data + off->i, (size_t)len->i));
    memcpy(text + at + 1, hex, 16);
  }
  crt_json_free(doc);
}

/* The manifest's "version" when it is one this runtime reads, else the newest. */
static unsigned manifest_version(const char *text, size_t n) {
  static const char key[] = "\"version\": ";
  unsigned v = 0;
  for (size_t i = 0; i + sizeof key < n && !v; i++)
    if (!memcmp(text + i, key, sizeof key - 1)) v = text[i + sizeof key - 1] >= '1' && text[i + sizeof key - 1] <= '9'
                                                    ? (unsigned)(text[i + sizeof key - 1] - '0')
                                                    : CRT_FORMAT_VERSION;
  return v >= CRT_FORMAT_VERSION_MIN && v <= CRT_FORMAT_VERSION ? v : CRT_FORMAT_VERSION;
}

static size_t laid_out_size(size_t mbytes, uint64_t dbytes) { return (64 + mbytes + 255) / 256 * 256 + (size_t)dbytes; }

/* A container in f[0..laid_out_size) around manifest[0..mbytes) and
 * data[0..dbytes) (neither inside f) whose every checksum is right;
 * returns its size. */
static size_t lay_out(uint8_t *f, const uint8_t *manifest, size_t mbytes, const uint8_t *data, uint64_t dbytes) {
  size_t doff = (64 + mbytes + 255) / 256 * 256, total = doff + (size_t)dbytes;
  memset(f, 0, doff);
  memcpy(f + 64, manifest, mbytes);
  memcpy(f + doff, data, (size_t)dbytes);
  fix_blob_checksums((char *)f + 64, mbytes, f + doff, dbytes);
  memcpy(f, CRT_MAGIC, 8);
  f[8] = (uint8_t)manifest_version((const char *)f + 64, mbytes);
  f[12] = CRT_HEADER_BYTES;
  wr64(f + 16, total);
  wr64(f + 24, 64);
  wr64(f + 32, mbytes);
  wr64(f + 40, crt_fnv1a64(f + 64, mbytes));
  wr64(f + 48, doff);
  wr64(f + 56, dbytes);
  return total;
}

static void try_consistent(const uint8_t *manifest, size_t mbytes, const uint8_t *data, uint64_t dbytes) {
  size_t total = laid_out_size(mbytes, dbytes);
  uint8_t *f = calloc(1, total);
  if (!f) return;
  try_read(f, lay_out(f, manifest, mbytes, data, dbytes));
  free(f);
}

/* The manifest and data section of an input that is an artifact (sizes
 * clamped to the input); 0 when it is not one. */
static int split(const uint8_t *data, size_t size, size_t *mbytes, size_t *doff) {
  if (size < 64 || memcmp(data, CRT_MAGIC, 8)) return 0;
  uint64_t m = rd64(data + 32), d = rd64(data + 48);
  if (m > size - 64) m = size - 64;
  if (d < 64 + m || d > size) d = 64 + m;
  *mbytes = (size_t)m, *doff = (size_t)d;
  return 1;
}

/* The k-th (mod their count) occurrence of key in m[0..n), or NULL. */
static uint8_t *nth(uint8_t *m, size_t n, const char *key, unsigned k) {
  size_t kl = strlen(key), count = 0;
  for (size_t i = 0; i + kl <= n; i++) count += !memcmp(m + i, key, kl);
  if (!count) return NULL;
  k %= (unsigned)count;
  for (size_t i = 0; i + kl <= n; i++)
    if (!memcmp(m + i, key, kl) && !k--) return m + i;
  return NULL;
}

/* Rewrites a plan the way a hand edit or a compiler bug would, in place:
 * one buffer reference set to another small index (an npu step reading
 * what nothing wrote, writing the model's input), or one binding removed.
 * Returns the new size. */
static size_t rewrite_plan(uint8_t *m, size_t n, unsigned seed) {
  if (seed & 1) {
    uint8_t *at = nth(m, n, "\"buffer\": ", seed >> 4);
    if (!at) return n;
    at += 10;
    if (at < m + n && *at >= '0' && *at <= '9') *at = (uint8_t)('0' + (seed >> 1) % 4);
    return n;
  }
  uint8_t *at = nth(m, n, "{\"tensor\": ", seed >> 4), *end = at;
  while (end && end < m + n && *end != '}') end++;
  if (!at || end >= m + n) return n;
  end++;
  if (end + 2 <= m + n && end[0] == ',' && end[1] == ' ') end += 2;
  else if (at - m >= 2 && at[-2] == ',' && at[-1] == ' ') at -= 2;
  memmove(at, end, (size_t)(m + n - end));
  return n - (size_t)(end - at);
}

/* Mutations of an artifact change its manifest, seven times in eight (a
 * quarter of those a plan rewrite), and lay the file out again with every
 * checksum right: the blobs (nearly all of a compiled model's bytes) stay
 * intact, so the fuzzer explores manifest rewrites (indices, binds, steps,
 * sizes) that the reader must catch by its plan and dataflow checks rather
 * than by a checksum. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  size_t mbytes = 0, doff = 0;
  if (seed % 8 == 7 || !split(data, size, &mbytes, &doff)) return LLVMFuzzerMutate(data, size, max_size);
  /* the largest manifest whose layout fits max_size */
  size_t dbytes = size - doff, room = dbytes + 64 < max_size ? (max_size - dbytes) / 256 * 256 : 0;
  room = room > 64 ? room - 64 : 0;
  if (room < mbytes + 1) return LLVMFuzzerMutate(data, size, max_size);
  uint8_t *m = malloc(room), *d = malloc(dbytes + 1);
  if (!m || !d) {
    free(m), free(d);
    return LLVMFuzzerMutate(data, size, max_size);
  }
  memcpy(m, data + 64, mbytes);
  memcpy(d, data + doff, dbytes);
  size_t nm = seed % 8 >= 5 ? rewrite_plan(m, mbytes, seed / 8) : LLVMFuzzerMutate(m, mbytes, room);
  size_t n = laid_out_size(nm, dbytes) <= max_size ? lay_out(data, m, nm, d, dbytes) : size;
  free(m), free(d);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try_read(data, size);
  if (size > (1u << 20)) return 0;
  size_t mbytes = 0, doff = 0;
  if (split(data, size, &mbytes, &doff)) {
    /* a (mutated) artifact: its manifest and data section, made consistent */
    try_consistent(data + 64, mbytes, data + doff, size - doff);
    return 0;
  }
  static const uint8_t zeros[ZEROS];
  try_consistent(data, size, zeros, ZEROS);
  return 0;
}

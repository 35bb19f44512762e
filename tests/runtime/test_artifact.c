/* tests/runtime/test_artifact.c: artifacts written by crt_builder and read
 * back by crt_artifact_read: every field round trips, the arena plan shares
 * bytes only between buffers whose lifetimes do not overlap (checked by a
 * naive all-pairs loop), two builds give the same bytes, and truncated,
 * corrupt, wrong-version, inconsistent and wrong-target artifacts are
 * refused with located errors. Without a GPU driver, opening a GPU
 * artifact fails with COV_DEVICE_ERROR (never a fake run). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/crt.h"
#include "tests/check.h"

static const char k_ptx[] = ".version 8.0\n.target sm_90a\n// a module\n";

/* A small model: input -> conv (w, bias) -> t1 -> cast -> t2 -> conv -> t3 ->
 * view -> output; t1 and t3 can share bytes with nothing alive at once. */
static crt_builder *build(const char *target) {
  crt_builder *b = NULL;
  cov_status st = crt_builder_new(target, "nvptx", "sm_90a", "/some/dir/net.onnx", &b);
  if (st) {
    cov_status_print(stderr, st, 1);
    return NULL;
  }
  int64_t xs[4] = {1, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, bs[1] = {4}, ts[4] = {1, 4, 6, 6}, os[2] = {1, 144};
  uint16_t w[108];
  float bias[4] = {0.5f, -1, 2, 0};
  for (int i = 0; i < 108; i++) w[i] = (uint16_t)(i * 7);
  int mod = crt_add_module(b, "conv.ptx", "ptx", k_ptx, sizeof k_ptx);
  int x = crt_add_buffer(b, "input", CRT_BUF_INPUT, COV_F16, 4, xs, 1 * 3 * 8 * 8 * 2);
  int wb = crt_add_weight(b, "conv1.weight", COV_F16, 4, ws, w, sizeof w);
  int bb = crt_add_weight(b, "conv1.bias", COV_F32, 1, bs, bias, sizeof bias);
  int t1 = crt_add_buffer(b, "t1", CRT_BUF_INTERMEDIATE, COV_F32, 4, ts, 144 * 4);
  int t2 = crt_add_buffer(b, "t2", CRT_BUF_INTERMEDIATE, COV_F16, 4, ts, 144 * 2);
  int t3 = crt_add_buffer(b, "t3", CRT_BUF_INTERMEDIATE, COV_F32, 4, ts, 144 * 4);
  int out = crt_add_buffer(b, "output", CRT_BUF_OUTPUT, COV_F32, 2, os, 144 * 4);
  int v = crt_add_view(b, "t3 as [1, 144]", t3, 0, COV_F32, 2, os, 144 * 4);
  crt_add_input(b, "input", COV_F32, 4, xs, x);
  crt_add_output(b, "output", COV_F32, 2, os, out);
  uint32_t grid[3] = {2, 1, 1}, block[3] = {128, 1, 1};
  crt_arg a1[4] = {crt_buf_arg(x, 0), crt_buf_arg(wb, 0), crt_buf_arg(t1, 0), crt_buf_arg(bb, 0)};
  crt_add_fill(b, 0, "conv1", t1, 0, 144 * 4, 0);
  crt_add_launch(b, 0, "conv1", mod, "covenant_conv1", grid, block, 70000, a1, 4);
  crt_arg a2[4] = {crt_buf_arg(t1, 0), {.kind = CRT_ARG_I32, .i = -7}, crt_buf_arg(t2, 0), {.kind = CRT_ARG_F32, .f = 0.25f}};
  crt_add_launch(b, 1, "cast", mod, "covenant_cast", grid, block, 0, a2, 4);
  crt_arg a3[4] = {crt_buf_arg(t2, 16), crt_buf_arg(wb, 0), crt_buf_arg(t3, 0), {.kind = CRT_ARG_I64, .i = 1LL << 40}};
  crt_add_launch(b, 1, "conv2", mod, "covenant_conv2", grid, block, 0, a3, 4);
  crt_arg a4[4] = {crt_buf_arg(v, 0), {.kind = CRT_ARG_I64}, crt_buf_arg(out, 0), {.kind = CRT_ARG_I64}};
  crt_add_launch(b, 2, "copy", mod, "covenant_copy", grid, block, 0, a4, 4);
  return b;
}

static uint8_t *finish(crt_builder *b, size_t *n) {
  uint8_t *bytes = NULL;
  cov_status st = crt_builder_finish(b, &bytes, n);
  if (st) cov_status_print(stderr, st, 1), cov_status_free(st);
  crt_builder_free(b);
  return bytes;
}

/* The error text of reading bytes (NULL when it reads). */
static char *read_error(const uint8_t *bytes, size_t n, cov_code *code) {
  crt_artifact *a = NULL;
  cov_status st = crt_artifact_read(bytes, n, "t.cvx", &a);
  crt_artifact_free(a);
  if (!st) return NULL;
  static char buf[1024];
  cov_status_format(st, buf, sizeof buf);
  if (code) *code = cov_status_code(st);
  cov_status_free(st);
  return buf;
}

static int contains(const char *s, const char *sub) {
  int ok = s && strstr(s, sub);
  if (!ok) fprintf(stderr, "  expected '%s' in: %s\n", sub, s ? s : "(no error)");
  return ok;
}

static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The artifact with its manifest's text edited (first `from` -> `to`),
 * the header's sizes and checksum made consistent again. */
static uint8_t *edit_manifest(const uint8_t *bytes, size_t n, const char *from, const char *to, size_t *out_n) {
  uint64_t mbytes = 0, doff = 0;
  for (int i = 7; i >= 0; i--) mbytes = mbytes << 8 | bytes[32 + i], doff = doff << 8 | bytes[48 + i];
  char *m = malloc(mbytes + 1);
  memcpy(m, bytes + 64, mbytes);
  m[mbytes] = 0;
  char *at = strstr(m, from);
  if (!at) {
    fprintf(stderr, "edit: '%s' not in the manifest\n", from);
    free(m);
    return NULL;
  }
  size_t nm = mbytes - strlen(from) + strlen(to);
  uint64_t ndoff = (64 + nm + 255) / 256 * 256, data = n - doff;
  uint8_t *f = calloc(1, ndoff + data);
  memcpy(f, bytes, 64);
  size_t pre = (size_t)(at - m);
  memcpy(f + 64, m, pre);
  memcpy(f + 64 + pre, to, strlen(to));
  memcpy(f + 64 + pre + strlen(to), at + strlen(from), mbytes - pre - strlen(from));
  memcpy(f + ndoff, bytes + doff, data);
  wr64(f + 16, ndoff + data);
  wr64(f + 32, nm);
  wr64(f + 40, crt_fnv1a64(f + 64, nm));
  wr64(f + 48, ndoff);
  free(m);
  *out_n = ndoff + data;
  return f;
}

static void check_edit(const uint8_t *bytes, size_t n, const char *from, const char *to, const char *want) {
  size_t en = 0;
  uint8_t *e = edit_manifest(bytes, n, from, to, &en);
  CHECK(e != NULL);
  if (!e) return;
  char *err = read_error(e, en, NULL);
  CHECK(contains(err, want));
  free(e);
}

/* Tensor-map arguments (format version 2): the builder checks them and
 * writes version 2, the reader takes them back and refuses bad ones at
 * their place; an artifact without them stays version 1. */
static void check_tmaps(void) {
  crt_builder *b = NULL;
  cov_status st = crt_builder_new("nvptx-sm90", "nvptx", "sm_90a", "m.onnx", &b);
  CHECK(!st);
  if (st) return cov_status_free(st);
  int64_t as[2] = {256, 128}, bs[2] = {128, 192}, os[2] = {256, 192};
  int mod = crt_add_module(b, "mm.ptx", "ptx", k_ptx, sizeof k_ptx);
  int x = crt_add_buffer(b, "a", CRT_BUF_INPUT, COV_F16, 2, as, 256 * 128 * 2);
  int y = crt_add_buffer(b, "b", CRT_BUF_INPUT, COV_F16, 2, bs, 128 * 192 * 2);
  int o = crt_add_buffer(b, "out", CRT_BUF_OUTPUT, COV_F32, 2, os, 256 * 192 * 4);
  crt_add_input(b, "a", COV_F32, 2, as, x);
  crt_add_input(b, "b", COV_F32, 2, bs, y);
  crt_add_output(b, "out", COV_F32, 2, os, o);
  uint32_t grid[3] = {6, 1, 1}, block[3] = {384, 1, 1};
  /* a box too wide for the 128-byte swizzle, and a map over an f32 buffer */
  crt_arg wide[4] = {crt_tmap_arg(x, 0, 256, 128, 128, 128), crt_buf_arg(y, 0), crt_buf_arg(o, 0), {.kind = CRT_ARG_I64}};
  CHECK(crt_add_launch(b, 0, "mm", mod, "covenant_mm", grid, block, 1024, wide, 4) == -1);
  CHECK(contains(cov_status_message(crt_builder_status(b)), "at most the swizzle's 128 bytes"));
  crt_builder_free(b);
  st = crt_builder_new("nvptx-sm90", "nvptx", "sm_90a", "m.onnx", &b);
  CHECK(!st);
  if (st) return cov_status_free(st);
  mod = crt_add_module(b, "mm.ptx", "ptx", k_ptx, sizeof k_ptx);
  x = crt_add_buffer(b, "a", CRT_BUF_INPUT, COV_F16, 2, as, 256 * 128 * 2);
  y = crt_add_buffer(b, "b", CRT_BUF_INPUT, COV_F16, 2, bs, 128 * 192 * 2);
  o = crt_add_buffer(b, "out", CRT_BUF_OUTPUT, COV_F32, 2, os, 256 * 192 * 4);
  crt_add_input(b, "a", COV_F32, 2, as, x);
  crt_add_input(b, "b", COV_F32, 2, bs, y);
  crt_add_output(b, "out", COV_F32, 2, os, o);
  crt_arg args[4] = {crt_tmap_arg(x, 0, 256, 128, 128, 64), crt_tmap_arg(y, 0, 128, 192, 64, 64), crt_buf_arg(o, 0),
                     {.kind = CRT_ARG_I64}};
  crt_add_launch(b, 0, "mm", mod, "covenant_mm", grid, block, 1024, args, 4);
  size_t n = 0;
  uint8_t *bytes = finish(b, &n);
  CHECK(bytes && bytes[8] == CRT_FORMAT_VERSION_TMAP);
  if (!bytes) return;
  crt_artifact *a = NULL;
  st = crt_artifact_read(bytes, n, "tm.cvx", &a);
  CHECK(!st && a && a->version == CRT_FORMAT_VERSION_TMAP);
  cov_status_free(st);
  if (a) {
    const crt_arg *t = a->steps[0].args;
    CHECK(t[0].kind == CRT_ARG_TMAP && t[0].buffer == x && t[0].rows == 256 && t[0].cols == 128 &&
          t[0].box_rows == 128 && t[0].box_cols == 64 && t[0].swizzle == 128);
    CHECK(t[1].kind == CRT_ARG_TMAP && t[1].buffer == y && t[1].rows == 128 && t[1].cols == 192);
    CHECK(t[2].kind == CRT_ARG_BUFFER);
  }
  crt_artifact_free(a);
  const char *m0 = "{\"tmap\": {\"buffer\": 0, \"offset\": 0, \"rows\": 256, \"cols\": 128";
  check_edit(bytes, n, m0, "{\"tmap\": {\"buffer\": 2, \"offset\": 0, \"rows\": 256, \"cols\": 128",
             "steps[0].args[0]: manifest: tensor map over buffer 2 ('out', f32");
  check_edit(bytes, n, m0, "{\"tmap\": {\"buffer\": 0, \"offset\": 0, \"rows\": 512, \"cols\": 128",
             "past the buffer's end");
  /* rows x cols x 2 bytes wraps around 2^64 to 64 bytes: refused by checked arithmetic */
  check_edit(bytes, n, m0, "{\"tmap\": {\"buffer\": 0, \"offset\": 0, \"rows\": 2147614724, \"cols\": 4294705160",
             "past the buffer's end");
  crt_arg huge = crt_tmap_arg(0, 0, 2147614724u, 4294705160u, 64, 64);
  CHECK(contains(crt_tmap_problem(&huge, 540, 2), "past the buffer's end"));
  check_edit(bytes, n, "\"swizzle\": 128}", "\"swizzle\": 64}", "the swizzle is 128");
  check_edit(bytes, n, "\"swizzle\": 128}", "\"swizzle\": 128, \"interleave\": 1}", "unknown member 'interleave'");
  check_edit(bytes, n, ", \"box_rows\": 128", "", "missing member 'box_rows'");
  /* a version-1 artifact has no tensor maps */
  size_t en = 0;
  uint8_t *e = edit_manifest(bytes, n, "\"version\": 2,", "\"version\": 1,", &en);
  CHECK(e != NULL);
  if (e) {
    e[8] = 1;
    CHECK(contains(read_error(e, en, NULL), "a tensor-map argument needs format version 2; the artifact says 1"));
    free(e);
  }
  free(bytes);
}

/* Inputs and outputs of every dtype the frontend has: i64 token ids, a
 * bool mask, u8 / i8 values kept as they are, an f16 input and output
 * held in f32 buffers (the host converts); each buffer's bytes checked
 * against its dtype, and an input's dtype against its buffer's. An input
 * with a symbolic dim (format version 4): "symbolic" written and read
 * back, refused when malformed or under version 4, and an input of another
 * batch refused before any device, naming --shape. */
static void check_dtypes(void) {
  crt_builder *b = NULL;
  cov_status st = crt_builder_new("nvptx-sm90", "nvptx", "sm_90a", "bert.onnx", &b);
  CHECK(!st);
  if (st) return cov_status_free(st);
  int64_t is[2] = {2, 4}, xs[2] = {2, 3}, qs[1] = {4};
  int mod = crt_add_module(b, "k.ptx", "ptx", k_ptx, sizeof k_ptx);
  int ids = crt_add_buffer(b, "input_ids", CRT_BUF_INPUT, COV_I64, 2, is, 8 * 8);
  int mask = crt_add_buffer(b, "attention_mask", CRT_BUF_INPUT, COV_BOOL, 2, is, 8);
  int x = crt_add_buffer(b, "x", CRT_BUF_INPUT, COV_F32, 2, xs, 6 * 4);
  int q = crt_add_buffer(b, "q", CRT_BUF_INPUT, COV_U8, 1, qs, 4);
  int r = crt_add_buffer(b, "r", CRT_BUF_OUTPUT, COV_I8, 1, qs, 4);
  int y = crt_add_buffer(b, "y", CRT_BUF_OUTPUT, COV_F32, 2, xs, 6 * 4);
  int ids_io = crt_add_input(b, "input_ids", COV_I64, 2, is, ids);
  crt_set_symbolic(b, ids_io, 1u);
  crt_set_range(b, ids_io, 0, 29999);
  crt_set_range(b, crt_add_input(b, "attention_mask", COV_BOOL, 2, is, mask), 0, 1);
  crt_add_input(b, "x", COV_F16, 2, xs, x);
  crt_add_input(b, "q", COV_U8, 1, qs, q);
  crt_add_output(b, "r", COV_I8, 1, qs, r);
  crt_add_output(b, "y", COV_F16, 2, xs, y);
  uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  crt_arg a1[4] = {crt_buf_arg(ids, 0), crt_buf_arg(mask, 0), crt_buf_arg(x, 0), crt_buf_arg(y, 0)};
  crt_add_launch(b, 0, "embed", mod, "covenant_embed", grid, block, 0, a1, 4);
  crt_arg a2[4] = {crt_buf_arg(q, 0), {.kind = CRT_ARG_I64}, crt_buf_arg(r, 0), {.kind = CRT_ARG_I64}};
  crt_add_launch(b, 1, "requant", mod, "covenant_requant", grid, block, 0, a2, 4);
  size_t n = 0;
  uint8_t *bytes = finish(b, &n);
  CHECK(bytes && bytes[8] == CRT_FORMAT_VERSION_SYMBOLIC);
  if (!bytes) return;
  crt_artifact *a = NULL;
  st = crt_artifact_read(bytes, n, "bert.cvx", &a);
  CHECK(!st && a);
  cov_status_free(st);
  if (a) {
    CHECK(a->n_inputs == 4 && a->inputs[0].dtype == COV_I64 && a->buffers[a->inputs[0].buffer].bytes == 64);
    CHECK(a->inputs[0].symbolic == 1u && a->inputs[1].symbolic == 0);
    CHECK(a->inputs[0].has_range && a->inputs[0].lo == 0 && a->inputs[0].hi == 29999);
    CHECK(a->inputs[1].has_range && a->inputs[1].hi == 1 && !a->inputs[2].has_range);
    CHECK(a->inputs[1].dtype == COV_BOOL && a->inputs[3].dtype == COV_U8 && a->outputs[0].dtype == COV_I8);
    CHECK(a->inputs[2].dtype == COV_F16 && a->buffers[a->inputs[2].buffer].dtype == COV_F32);
    CHECK(a->outputs[1].dtype == COV_F16 && a->buffers[a->outputs[1].buffer].dtype == COV_F32);
    /* inputs checked before a device is looked for */
    cov_tensor in[4] = {{0}};
    cov_tensor_alloc(&in[0], COV_F32, 2, is);
    cov_tensor_alloc(&in[1], COV_BOOL, 2, is);
    cov_tensor_alloc(&in[2], COV_F16, 2, xs);
    cov_tensor_alloc(&in[3], COV_U8, 1, qs);
    char buf[1024] = "";
    st = crt_check_inputs(a, in, 4);
    if (st) cov_status_format(st, buf, sizeof buf);
    CHECK(st && contains(buf, "input 'input_ids' must be i64[2, 4], not f32[2, 4]"));
    cov_status_free(st);
    cov_tensor_release(&in[0]);
    int64_t is3[2] = {3, 4};
    cov_tensor_alloc(&in[0], COV_I64, 2, is3);
    st = crt_check_inputs(a, in, 4);
    if (st) cov_status_format(st, buf, sizeof buf);
    CHECK(st && contains(buf, "the model leaves dim 0 symbolic and this artifact was compiled at 2 (covenant compile "
                              "--shape input_ids=3x4 compiles it for this shape)"));
    cov_status_free(st);
    cov_tensor_release(&in[0]);
    cov_tensor_alloc(&in[0], COV_I64, 2, is);
    st = crt_check_inputs(a, in, 4);
    CHECK(!st);
    cov_status_free(st);
    for (int k = 0; k < 4; k++) cov_tensor_release(&in[k]);
  }
  crt_artifact_free(a);
  /* hostile manifests: sizes against dtypes, dtypes against buffers */
  check_edit(bytes, n, "\"kind\": \"input\", \"dtype\": \"i64\"", "\"kind\": \"input\", \"dtype\": \"i32\"",
             "buffer 'input_ids': 8 i32 elements are 32 bytes, not 64");
  check_edit(bytes, n, "\"dtype\": \"i64\", \"shape\": [2, 4], \"symbolic\"", "\"dtype\": \"i32\", \"shape\": [2, 4], \"symbolic\"",
             "input 'input_ids' (i32, 8 elements) does not match its buffer 'input_ids' (i64, 8 elements)");
  check_edit(bytes, n, "{\"name\": \"attention_mask\", \"dtype\": \"bool\", \"shape\": [2, 4], \"range\": [0, 1]",
             "{\"name\": \"attention_mask\", \"dtype\": \"i32\", \"shape\": [2, 4], \"range\": [0, 1]",
             "input 'attention_mask' (i32, 8 elements) does not match its buffer 'attention_mask' (bool, 8 elements)");
  check_edit(bytes, n, "{\"name\": \"x\", \"dtype\": \"f16\"", "{\"name\": \"x\", \"dtype\": \"c64\"", "unknown dtype 'c64'");
  check_edit(bytes, n, "{\"name\": \"x\", \"dtype\": \"f16\"", "{\"name\": \"x\", \"dtype\": \"i8\"",
             "input 'x' (i8, 6 elements) does not match its buffer 'x' (f32, 6 elements)");
  check_edit(bytes, n, "{\"name\": \"q\", \"dtype\": \"u8\", \"shape\": [4]", "{\"name\": \"q\", \"dtype\": \"u8\", \"shape\": [8]",
             "input 'q' (u8, 8 elements) does not match its buffer 'q' (u8, 4 elements)");
  check_edit(bytes, n, "\"range\": [0, 29999]", "\"range\": [5, 4]", "'range' is [lo, hi], two integers with lo <= hi");
  check_edit(bytes, n, "\"range\": [0, 29999]", "\"range\": [0]", "'range' is [lo, hi]");
  check_edit(bytes, n, "\"range\": [0, 29999]", "\"range\": [0, 1.5]", "'range' is [lo, hi]");
  check_edit(bytes, n, "{\"name\": \"x\", \"dtype\": \"f16\", \"shape\": [2, 3]",
             "{\"name\": \"x\", \"dtype\": \"f16\", \"shape\": [2, 3], \"range\": [0, 1]",
             "'range' is for integer inputs; 'x' is f16");
  check_edit(bytes, n, "\"symbolic\": [0]", "\"symbolic\": [2]", "'symbolic' lists dims of the shape (rank 2)");
  check_edit(bytes, n, "\"symbolic\": [0]", "\"symbolic\": [0, 0]", "ascending, each once");
  check_edit(bytes, n, "\"symbolic\": [0]", "\"symbolic\": 0", "'symbolic' must be an array");
  check_edit(bytes, n, "{\"name\": \"r\", \"dtype\": \"i8\", \"shape\": [4]",
             "{\"name\": \"r\", \"dtype\": \"i8\", \"shape\": [4], \"symbolic\": [0]", "unknown member 'symbolic'");
  size_t en = 0;
  uint8_t *e = edit_manifest(bytes, n, "\"version\": 4,", "\"version\": 3,", &en);
  CHECK(e != NULL);
  if (e) {
    e[8] = 3;
    CHECK(contains(read_error(e, en, NULL), "'symbolic' needs format version 4; the artifact says 3"));
    free(e);
  }
  free(bytes);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  size_t n = 0, n2 = 0;
  uint8_t *bytes = finish(build("nvptx-sm90"), &n), *again = finish(build("nvptx-sm90"), &n2);
  CHECK(bytes && again);
  if (!bytes || !again) return check_summary();
  /* determinism */
  CHECK(n == n2 && !memcmp(bytes, again, n));
  free(again);
  check_tmaps();
  check_dtypes();

  /* round trip */
  crt_artifact *a = NULL;
  cov_status st = crt_artifact_read(bytes, n, "t.cvx", &a);
  if (st) cov_status_print(stderr, st, 1), cov_status_free(st);
  CHECK(a != NULL);
  if (!a) return check_summary();
  CHECK(a->version == CRT_FORMAT_VERSION_MIN); /* no tensor maps: written as version 1 */
  CHECK_STR(a->target, "nvptx-sm90");
  CHECK_STR(a->backend, "nvptx");
  CHECK_STR(a->arch, "sm_90a");
  CHECK_STR(a->model, "net.onnx"); /* no directories: the same bytes from anywhere */
  CHECK(a->n_modules == 1 && !strcmp(a->modules[0].format, "ptx"));
  CHECK(a->n_blobs == 3);
  CHECK(!memcmp(crt_blob_data(a, a->modules[0].blob), k_ptx, sizeof k_ptx));
  CHECK(a->n_buffers == 8 && a->n_inputs == 1 && a->n_outputs == 1 && a->n_steps == 5);
  CHECK(a->inputs[0].dtype == COV_F32 && a->buffers[a->inputs[0].buffer].dtype == COV_F16);
  CHECK(a->inputs[0].rank == 4 && a->inputs[0].shape[1] == 3);
  const crt_buffer *w = &a->buffers[1], *bias = &a->buffers[2];
  CHECK(w->kind == CRT_BUF_WEIGHT && w->bytes == 216 && crt_blob_data(a, w->blob)[2] == 7);
  CHECK(bias->kind == CRT_BUF_WEIGHT && crt_weight_offset(a, 1) == 0 && crt_weight_offset(a, 2) == CRT_ALIGN);
  float b0;
  memcpy(&b0, crt_blob_data(a, bias->blob), 4);
  CHECK(b0 == 0.5f);
  CHECK(a->weight_bytes == 2 * CRT_ALIGN);
  const crt_step *s1 = &a->steps[1], *s2 = &a->steps[2], *s3 = &a->steps[3];
  CHECK(a->steps[0].op == CRT_STEP_FILL && a->steps[0].bytes == 576);
  CHECK(s1->op == CRT_STEP_LAUNCH && !strcmp(s1->kernel, "covenant_conv1") && s1->shared_bytes == 70000);
  CHECK(s1->grid[0] == 2 && s1->block[0] == 128 && s1->n_args == 4 && s1->args[3].buffer == 2);
  CHECK(s2->args[1].kind == CRT_ARG_I32 && s2->args[1].i == -7);
  CHECK(s2->args[3].kind == CRT_ARG_F32 && s2->args[3].f == 0.25f);
  CHECK(s3->args[0].kind == CRT_ARG_BUFFER && s3->args[0].offset == 16);
  CHECK(s3->args[3].kind == CRT_ARG_I64 && s3->args[3].i == (1LL << 40));
  CHECK(a->buffers[7].kind == CRT_BUF_VIEW && a->buffers[7].of == 5);
  /* the arena: every pair of intermediates alive at once is disjoint in bytes */
  int pairs = 0, shared = 0;
  for (int i = 0; i < a->n_buffers; i++)
    for (int j = i + 1; j < a->n_buffers; j++) {
      const crt_buffer *x = &a->buffers[i], *y = &a->buffers[j];
      if (x->kind != CRT_BUF_INTERMEDIATE || y->kind != CRT_BUF_INTERMEDIATE) continue;
      int live = x->first <= y->last && y->first <= x->last;
      int overlap = x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes;
      CHECK(!(live && overlap));
      CHECK(x->offset + x->bytes <= a->arena_bytes && x->offset % CRT_ALIGN == 0);
      pairs++, shared += overlap;
    }
  CHECK(pairs == 3);
  /* t1 (steps 0-2) and t3 (steps 3-4) do not live at once: they share */
  CHECK(a->buffers[3].offset == a->buffers[5].offset && shared == 1);
  CHECK(a->arena_bytes == 1280); /* t1 = t3 at 0 (576 -> 768 aligned), t2 at 768 (288 -> 512) */
  /* per inference: 4 launches and a fill; activation bytes by hand: the
   * fill 576, conv1 x 384 (f16) + t1 576, cast t1 576 + t2 288, conv2 t2
   * 288 + t3 576, copy the view 576 + output 576; weights not counted */
  crt_traffic tr;
  crt_artifact_traffic(a, &tr);
  CHECK(tr.launches == 4 && tr.fills == 1 && tr.npu == 0);
  CHECK(tr.act_bytes == 4416 && tr.f32_bytes == 2880 && tr.half_bytes == 960 && tr.fill_bytes == 576);
  /* wrong target, before any device is looked for */
  crt_options o = {.expect_target = "amdgpu-gfx942"};
  crt_session *s = NULL;
  st = crt_session_open(a, &o, &s);
  char buf[1024] = "";
  if (st) cov_status_format(st, buf, sizeof buf);
  CHECK(st && contains(buf, "for target nvptx-sm90, not amdgpu-gfx942") && contains(buf, "t.cvx"));
  cov_status_free(st);
  /* without a driver: a device error, never a fake run (with one, a real
   * run of this made-up PTX would fail to load: also an error) */
  st = crt_session_open(a, NULL, &s);
  CHECK(st != NULL && s == NULL);
  if (st) {
    cov_status_format(st, buf, sizeof buf);
    printf("opening a GPU artifact here: %s\n", buf);
  }
  cov_status_free(st);
  crt_artifact_free(a);

  /* a file round trip through crt_builder_write / crt_artifact_load */
  char path[4096];
  snprintf(path, sizeof path, "%s/t.cvx", dir);
  crt_builder *b = build("nvptx-sm90");
  st = crt_builder_write(b, path);
  crt_builder_free(b);
  CHECK(!st);
  cov_status_free(st);
  st = crt_artifact_load(path, &a);
  CHECK(!st && a && a->n_steps == 5);
  cov_status_free(st);
  crt_artifact_free(a);

  /* truncated: every prefix is refused, never read */
  int refused = 0, truncated_said = 0;
  for (size_t k = 0; k < n; k += (k < 200 ? 1 : 97)) {
    char *err = read_error(bytes, k, NULL);
    refused += err != NULL;
    truncated_said += err && (strstr(err, "truncated") || strstr(err, "not a covenant artifact"));
  }
  size_t tried = 0;
  for (size_t k = 0; k < n; k += (k < 200 ? 1 : 97)) tried++;
  CHECK(refused == (int)tried && truncated_said == (int)tried);
  CHECK(contains(read_error(bytes, n - 1, NULL), "truncated: the header says"));
  CHECK(contains(read_error(bytes, 40, NULL), "truncated: 40 bytes"));
  CHECK(contains(read_error(bytes, 3, NULL), "not a covenant artifact"));
  /* trailing bytes */
  uint8_t *longer = calloc(1, n + 5);
  memcpy(longer, bytes, n);
  CHECK(contains(read_error(longer, n + 5, NULL), "trailing bytes"));
  free(longer);
  /* wrong version */
  uint8_t *c = malloc(n);
  memcpy(c, bytes, n);
  c[8] = CRT_FORMAT_VERSION + 1;
  cov_code code = COV_OK;
  char want[96];
  snprintf(want, sizeof want, "format version %d; this runtime reads versions 1 to %d", CRT_FORMAT_VERSION + 1,
           CRT_FORMAT_VERSION);
  CHECK(contains(read_error(c, n, &code), want));
  CHECK(code == COV_UNSUPPORTED);
  /* corrupt manifest byte, corrupt blob byte, bad magic */
  memcpy(c, bytes, n);
  c[100] ^= 0x20;
  CHECK(contains(read_error(c, n, NULL), "manifest's checksum does not match"));
  memcpy(c, bytes, n);
  c[n - 300] ^= 1;
  {
    char *err = read_error(c, n, NULL);
    CHECK(contains(err, "checksum") && contains(err, "corrupt") && contains(err, "blobs["));
  }
  memcpy(c, bytes, n);
  c[1] = 'X';
  CHECK(contains(read_error(c, n, NULL), "not a covenant artifact"));
  free(c);
  /* an inconsistent manifest (checksums right): located errors */
  check_edit(bytes, n, "\"kind\": \"weight\"", "\"kind\": \"wieght\"", "unknown buffer kind 'wieght'");
  check_edit(bytes, n, "\"kind\": \"weight\"", "\"kind\": \"wieght\"", "buffers[1]");
  check_edit(bytes, n, "\"version\": 1,", "\"version\": 1, \"version\": 1,", "duplicate member name");
  check_edit(bytes, n, "\"grid\": [2, 1, 1]", "\"grid\": [2, 0, 1]", "steps[1]");
  check_edit(bytes, n, "\"buffer\": 4, \"offset\": 16", "\"buffer\": 99, \"offset\": 16", "steps[3].args[0]");
  check_edit(bytes, n, "\"shared_bytes\": 70000", "\"shared_bytes\": \"big\"", "'shared_bytes' must be a number");
  check_edit(bytes, n, "\"backend\": \"nvptx\"", "\"backend\": \"cuda\"", "unknown backend 'cuda'");
  check_edit(bytes, n, "\"format\": \"ptx\"", "\"format\": \"hsaco\"", "module format 'hsaco' on backend 'nvptx'");
  check_edit(bytes, n, "\"version\": 1,", "\"version\": 1, \"extra\": 1,", "unknown member 'extra'");
  check_edit(bytes, n, "\"steps\": [", "\"steps\": [{\"op\": \"launch\"},", "missing member");
  check_edit(bytes, n, "\"arena_bytes\": 1280", "\"arena_bytes\": 512", "arena");
  check_edit(bytes, n, "\"weight_bytes\": 512", "\"weight_bytes\": 256", "weight_bytes is 256");
  check_edit(bytes, n, "{\n", "[\n", "expected ',' or ']'");
  check_edit(bytes, n, "\"of\": 5", "\"of\": 7", "'of' must be an integer in [0, 6]");
  /* an incomplete artifact reads, but does not run: it names what is missing */
  {
    size_t en = 0;
    uint8_t *e = edit_manifest(bytes, n, "\"missing\": []", "\"missing\": [\"group 3 (add): not lowered\"]", &en);
    crt_artifact *ia = NULL;
    st = crt_artifact_read(e, en, "inc.cvx", &ia);
    CHECK(!st && ia && ia->n_missing == 1);
    cov_status_free(st);
    if (ia) {
      st = crt_session_open(ia, NULL, &s);
      if (st) cov_status_format(st, buf, sizeof buf);
      CHECK(st && contains(buf, "incomplete") && contains(buf, "group 3 (add): not lowered"));
      cov_status_free(st);
    }
    crt_artifact_free(ia);
    free(e);
  }
  /* the builder refuses nonsense with an error, not a bad file */
  b = build("nvptx-sm90");
  int64_t one = 1;
  CHECK(crt_add_buffer(b, "bad", CRT_BUF_INTERMEDIATE, COV_F32, 1, &one, 5) == -1);
  uint8_t *none = NULL;
  size_t nn = 0;
  st = crt_builder_finish(b, &none, &nn);
  CHECK(st && !none);
  cov_status_free(st);
  crt_builder_free(b);
  b = build("nvptx-sm90");
  crt_add_buffer(b, "unused", CRT_BUF_INTERMEDIATE, COV_F32, 1, &one, 4);
  st = crt_builder_finish(b, &none, &nn);
  if (st) cov_status_format(st, buf, sizeof buf);
  CHECK(st && contains(buf, "intermediate 'unused' is used by no step"));
  cov_status_free(st);
  crt_builder_free(b);
  free(bytes);
  return check_summary();
}

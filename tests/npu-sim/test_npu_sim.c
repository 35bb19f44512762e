/* tests/npu-sim/test_npu_sim.c: hand-built NPU programs on both shipped NPU
 * targets, checked against naive C loop nests (results) and against the
 * timing formulas written out here (cycles); encoding round trips; and
 * malformed programs (truncated, bad magic/version/opcode, out-of-range
 * addresses, loops too deep, wrong ACG) rejected with located messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "mapper/map_ir.h"
#include "tests/check.h"
#include "tests/npu-sim/npu_test.h"

static const char *g_out; /* where to save the hand-built programs, or NULL */

static void save(const npu_prog *p, const char *name) {
  if (!g_out) return;
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.npu", g_out, name);
  cov_status st = cov_npu_program_save(p, path);
  CHECK(!st);
  cov_status_free(st);
}

static cov_tensor make(cov_dtype dt, int64_t r, int64_t c) {
  cov_tensor t = {0};
  int64_t shape[2] = {r, c};
  cov_status st = cov_tensor_alloc(&t, dt, c ? 2 : 1, shape);
  CHECK(!st);
  cov_status_free(st);
  return t;
}

/* y = relu(x @ w + b) on npu-16x16 (weight-stationary): K and N split into
 * array-sized tiles, bias preloaded into the accumulators, relu on the SIMD
 * unit from obuf into vmem, stored from vmem. Bit-exact against the same
 * accumulation order in C. */
static void test_gemm_ws(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  cov_status st = npu_target_init(g, &t);
  CHECK(!st && !t.output_stationary);
  npu_prog *p = NULL;
  st = npu_prog_create(&p);
  CHECK(!st);
  npu_prog_set_target(p, &t);
  const uint32_t M = 40, K = 48, N = 32;
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){M, K});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 2, (uint32_t[]){K, N});
  uint64_t ab = add_tensor(p, "b", COV_F32, NPU_ROLE_WEIGHT, 1, (uint32_t[]){N});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){M, N});
  int ibuf = node(g, "ibuf"), wbuf = node(g, "wbuf"), obuf = node(g, "obuf"),
      bbuf = node(g, "bbuf"), vmem = node(g, "vmem");
  int arr = compute(g, "pe_array"), simd = compute(g, "simd");
  int mac = cap_of(g, "pe_array", COV_OP_MAC, COV_F16);
  int relu = cap_of(g, "simd", COV_OP_RELU, COV_F32);
  for (uint32_t n0 = 0; n0 < N; n0 += 16) {
    npu_insn bl = dma2(edge(g, "dram", "bbuf"), false, COV_F32, ab, 1, N, 0, (int32_t)n0, 1, 16,
                       0, 16, 1);
    add(p, bl);
    for (uint32_t k0 = 0; k0 < K; k0 += 16) {
      uint32_t half = (k0 / 16) % 2 * 16384; /* double buffering */
      add(p, dma2(edge(g, "dram", "wbuf"), false, COV_F16, aw, K, N, (int32_t)k0, (int32_t)n0, 16,
                  16, half, 16, 1));
      add(p, dma2(edge(g, "dram", "ibuf"), false, COV_F16, ax, M, K, 0, (int32_t)k0, M, 16, half,
                  16, 1));
      npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)arr,
                     .flags = k0 == 0 ? NPU_GEMM_BIAS : NPU_GEMM_ACC};
      gm.u.gemm.cap = (uint8_t)mac;
      gm.u.gemm.m = M;
      gm.u.gemm.k = 16;
      gm.u.gemm.n = 16;
      gm.u.gemm.a = (npu_mem){(uint8_t)ibuf, 0, half, 16, 1};
      gm.u.gemm.b = (npu_mem){(uint8_t)wbuf, 0, half, 16, 1};
      gm.u.gemm.c = (npu_mem){(uint8_t)obuf, 0, 0, 16, 1};
      gm.u.gemm.bias = (npu_mem){(uint8_t)bbuf, 0, 0, 0, 1};
      add(p, gm);
    }
    npu_insn v = vop(simd, relu, COV_OP_RELU, COV_F32, M, 16,
                     (npu_mem){(uint8_t)vmem, 0, 0, 16, 1}, (npu_mem){(uint8_t)obuf, 0, 0, 16, 1});
    add(p, v);
    add(p, dma2(edge(g, "dram", "vmem"), true, COV_F32, ay, M, N, 0, (int32_t)n0, M, 16, 0, 16, 1));
  }
  cov_tensor x = make(COV_F32, M, K), w = make(COV_F32, K, N), b = make(COV_F32, N, 0);
  float *fx = x.data, *fw = w.data, *fb = b.data;
  for (uint32_t i = 0; i < M * K; i++) fx[i] = rnd();
  for (uint32_t i = 0; i < K * N; i++) fw[i] = rnd();
  for (uint32_t i = 0; i < N; i++) fb[i] = rnd();
  save(p, "gemm_ws");
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x", "w", "b"}, (cov_tensor[]){x, w, b}, 3);
  cov_tensor y = {0};
  st = cov_npu_sim_read(sim, "y", &y);
  CHECK(!st && y.dtype == COV_F32);
  int bad = 0;
  for (uint32_t m = 0; m < M && y.data; m++)
    for (uint32_t n = 0; n < N; n++) {
      float acc = fb[n];
      for (uint32_t k = 0; k < K; k++) acc += fx[m * K + k] * fw[k * N + n];
      acc = acc > 0 ? acc : 0;
      if (((float *)y.data)[m * N + n] != acc) bad++;
    }
  CHECK(bad == 0);
  CHECK(cov_npu_stats_macs(s) == (uint64_t)M * K * N);
  CHECK(cov_npu_stats_cycles(s) > 0);
  double u = cov_npu_stats_array_utilization(s);
  CHECK(u > 0 && u <= 1);
  CHECK(cov_npu_stats_storage_bytes(s, "dram") ==
        (uint64_t)M * K * 2 * 2 + K * N * 2 + N * 4 + M * N * 4);
  if (s) cov_npu_stats_print(s, stdout);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&b);
  cov_tensor_release(&y);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);

  /* Round trip: encode, decode, encode again gives the same bytes. */
  uint8_t *b1 = NULL, *b2 = NULL;
  size_t n1 = 0, n2 = 0;
  npu_prog *q = NULL;
  CHECK(!npu_encode(p, &b1, &n1));
  CHECK(!npu_decode(b1, n1, "mem", &q));
  if (q) CHECK(!npu_encode(q, &b2, &n2));
  CHECK(n1 == n2 && b1 && b2 && memcmp(b1, b2, n1) == 0);
  /* Every truncation is rejected with a message, never a crash. */
  int truncated_ok = 0;
  for (size_t cut = 0; cut < n1; cut++) {
    npu_prog *r = NULL;
    cov_status e = npu_decode(b1, cut, "cut", &r);
    if (e && strstr(cov_status_message(e), "truncated")) truncated_ok++;
    else if (e && cut >= NPU_HEADER_BYTES) truncated_ok++; /* e.g. code_bytes mismatch */
    cov_status_free(e);
    npu_prog_free(r);
  }
  CHECK(truncated_ok == (int)n1);
  /* Bad magic, bad version, bad opcode (instruction 2). */
  uint8_t *c = malloc(n1);
  memcpy(c, b1, n1);
  c[0] = 'X';
  npu_prog *r = NULL;
  cov_status e = npu_decode(c, n1, "bad", &r);
  CHECK(e && strstr(cov_status_message(e), "magic"));
  cov_status_free(e);
  memcpy(c, b1, n1);
  c[4] = 9;
  e = npu_decode(c, n1, "bad", &r);
  CHECK(e && strstr(cov_status_message(e), "version"));
  cov_status_free(e);
  memcpy(c, b1, n1);
  size_t off = NPU_HEADER_BYTES + (size_t)p->n_tensors * NPU_TENSOR_BYTES;
  off += npu_insn_size(p->insns[0].op) + npu_insn_size(p->insns[1].op);
  c[off] = 0x77;
  e = npu_decode(c, n1, "bad", &r);
  CHECK(e && strstr(cov_status_message(e), "instruction 2") &&
        strstr(cov_status_message(e), "opcode"));
  cov_status_free(e);
  free(c);
  free(b1);
  free(b2);
  npu_prog_free(q);

  /* Disassembly names buffers and units. */
  char *text = NULL;
  size_t tn = 0;
  FILE *f = open_memstream(&text, &tn);
  CHECK(!npu_disasm(p, g, f));
  fclose(f);
  CHECK(text && strstr(text, "gemm    pe_array cap0 m=40 k=16 n=16 bias a=ibuf[0, 16, 1]"));
  CHECK(text && strstr(text, "dma     load dram->wbuf f16"));
  CHECK(text && strstr(text, "vop     simd relu"));
  free(text);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* The same layer shape on npu-32x32-os (output-stationary): A stored as
 * K x M (a transposing DMA), accumulators in `acc`, bias added by the vector
 * unit with a broadcast operand (row stride 0), result through ubuf. */
static void test_gemm_os(void) {
  cov_acg *g = load_target("npu-32x32-os");
  npu_target t;
  cov_status st = npu_target_init(g, &t);
  CHECK(!st && t.output_stationary);
  npu_prog *p = new_prog(&t);
  const uint32_t M = 32, K = 40, N = 16;
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){M, K});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 2, (uint32_t[]){K, N});
  uint64_t ab = add_tensor(p, "b", COV_F32, NPU_ROLE_WEIGHT, 1, (uint32_t[]){N});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){M, N});
  int ubuf = node(g, "ubuf"), accb = node(g, "acc");
  int e = edge(g, "dram", "ubuf");
  int arr = compute(g, "pe_array"), vec = compute(g, "vec");
  int mac = cap_of(g, "pe_array", COV_OP_MAC, COV_F16);
  int addc = cap_of(g, "vec", COV_OP_ADD, COV_F32);
  add(p, dma2(e, false, COV_F16, aw, K, N, 0, 0, K, N, 0, 16, 1)); /* w at ubuf 0 */
  add(p, dma2(e, false, COV_F32, ab, 1, N, 0, 0, 1, N, 4096, 16, 1)); /* b at 4096 */
  for (uint32_t m0 = 0; m0 < M; m0 += 16) {
    /* x[m0:m0+16, :] transposed into ubuf at 8192: element (m, k) at k*16+m. */
    npu_insn ld = dma2(e, false, COV_F16, ax, M, K, (int32_t)m0, 0, 16, K, 8192, 1, 16);
    add(p, ld);
    npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)arr};
    gm.u.gemm.cap = (uint8_t)mac;
    gm.u.gemm.m = 16;
    gm.u.gemm.k = (uint16_t)K;
    gm.u.gemm.n = 16;
    gm.u.gemm.a = (npu_mem){(uint8_t)ubuf, 0, 8192, 1, 16}; /* A^T: (m, k) at k*16 + m */
    gm.u.gemm.b = (npu_mem){(uint8_t)ubuf, 0, 0, 16, 1};
    gm.u.gemm.c = (npu_mem){(uint8_t)accb, 0, 0, 16, 1};
    add(p, gm);
    npu_insn v = vop(vec, addc, COV_OP_ADD, COV_F32, 16, 16,
                     (npu_mem){(uint8_t)ubuf, 0, 16384, 16, 1}, (npu_mem){(uint8_t)accb, 0, 0, 16, 1});
    v.u.vop.src2 = (npu_mem){(uint8_t)ubuf, 0, 4096, 0, 1};
    add(p, v);
    add(p, dma2(e, true, COV_F32, ay, M, N, (int32_t)m0, 0, 16, N, 16384, 16, 1));
  }
  cov_tensor x = make(COV_F32, M, K), w = make(COV_F32, K, N), b = make(COV_F32, N, 0);
  float *fx = x.data, *fw = w.data, *fb = b.data;
  for (uint32_t i = 0; i < M * K; i++) fx[i] = rnd();
  for (uint32_t i = 0; i < K * N; i++) fw[i] = rnd();
  for (uint32_t i = 0; i < N; i++) fb[i] = rnd();
  save(p, "gemm_os");
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x", "w", "b"}, (cov_tensor[]){x, w, b}, 3);
  cov_tensor y = {0};
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  int bad = 0;
  for (uint32_t m = 0; m < M && y.data; m++)
    for (uint32_t n = 0; n < N; n++) {
      float acc = 0;
      for (uint32_t k = 0; k < K; k++) acc += fx[m * K + k] * fw[k * N + n];
      acc += fb[n];
      if (((float *)y.data)[m * N + n] != acc) bad++;
    }
  CHECK(bad == 0);
  /* The accumulators hold one tile, so the second GEMM waits for the vector
   * unit to drain the first (a write-after-read dependency stall). */
  CHECK(cov_npu_stats_stalls(s, "dependency") > 0);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&b);
  cov_tensor_release(&y);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);

  /* The program is refused by the other NPU's simulator. */
  cov_acg *g16 = load_target("npu-16x16");
  cov_status v = cov_npu_program_verify(p, g16);
  CHECK(v && strstr(cov_status_message(v), "compiled for ACG 'npu-32x32-os'"));
  cov_status_free(v);
  cov_acg_free(g16);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* Padded, strided loads (a stride-2 convolution window with halo) against a
 * naive loop: out-of-range coordinates read as zeros. */
static void test_dma_padding(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  const uint32_t H = 7, W = 9;
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){H, W});
  uint64_t ay = add_tensor(p, "y", COV_F16, NPU_ROLE_OUTPUT, 2, (uint32_t[]){5, 6});
  npu_insn ld = dma2(edge(g, "dram", "vmem"), false, COV_F16, ax, H, W, -1, -2, 5, 6, 0, 6, 1);
  ld.u.dma.dim[0].step = 2; /* rows -1, 1, 3, 5, 7 (7 is past the end) */
  add(p, ld);
  add(p, dma2(edge(g, "dram", "vmem"), true, COV_F16, ay, 5, 6, 0, 0, 5, 6, 0, 6, 1));
  cov_tensor x = make(COV_F32, H, W);
  for (uint32_t i = 0; i < H * W; i++) ((float *)x.data)[i] = rnd();
  cov_npu_sim *sim = NULL;
  save(p, "dma_pad");
  cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x"}, &x, 1);
  cov_tensor y = {0};
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  int bad = 0;
  for (int r = 0; r < 5 && y.data; r++)
    for (int c = 0; c < 6; c++) {
      int hr = -1 + 2 * r, wc = -2 + c;
      float want = hr >= 0 && hr < (int)H && wc >= 0 && wc < (int)W ? ((float *)x.data)[hr * W + wc] : 0;
      if (cov_f16_to_f32(((uint16_t *)y.data)[r * 6 + c]) != want) bad++;
    }
  CHECK(bad == 0);
  /* Timing of two dependent DMAs: each takes latency + the larger of
   * local bytes / edge bandwidth and DRAM bursts / DRAM bandwidth. DRAM
   * serves whole 64-byte bursts (its 512-bit width) per contiguous run: the
   * load reads 3 valid rows (3 bursts), the store writes 5 rows (5 bursts). */
  const acg_edge *e = &g->edges[edge(g, "dram", "vmem")];
  double dbw = g->storage[node(g, "dram")].bandwidth_bytes_per_cycle;
  uint64_t want = 2 * (uint64_t)e->latency_cycles + (uint64_t)ceil(3 * 64 / dbw) +
                  (uint64_t)ceil(5 * 64 / dbw);
  CHECK(s && cov_npu_stats_cycles(s) == want);
  if (s && cov_npu_stats_cycles(s) != want) cov_npu_stats_print(s, stderr);
  cov_tensor_release(&x);
  cov_tensor_release(&y);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* Bank conflicts: reading a column of obuf (stride 16 f32 = the same bank for
 * every lane) is 16x slower than reading a row. */
static void test_bank_conflicts(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  uint64_t cyc[2];
  uint64_t bank[2];
  for (int strided = 0; strided < 2; strided++) {
    npu_prog *p = new_prog(&t);
    /* obuf read down its columns (every lane in one bank) or along its rows */
    npu_mem src = {(uint8_t)node(g, "obuf"), 0, 0, strided ? 1 : 16, strided ? 16 : 1};
    npu_insn v = unit_vop(g, "simd", COV_OP_COPY, COV_F32, 16, 16, (npu_mem){(uint8_t)node(g, "vmem"), 0, 0, 16, 1},
                          src);
    add(p, v);
    cov_npu_sim *sim = NULL;
    cov_npu_stats *s = run(g, p, &sim, NULL, NULL, 0);
    cyc[strided] = s ? cov_npu_stats_cycles(s) : 0;
    bank[strided] = s ? cov_npu_stats_stalls(s, "bank") : 0;
    cov_npu_stats_free(s);
    cov_npu_sim_free(sim);
    npu_prog_free(p);
  }
  /* 256 elements at 16 lanes/cycle = 16 cycles + latency 4. */
  CHECK(cyc[0] == 16 + 4 && bank[0] == 0);
  CHECK(cyc[1] == 16 * 16 + 4 && bank[1] == 15 * 16);
  cov_acg_free(g);
}

/* DRAM's interface serves each engine's transfer once it is ready, its
 * bursts between those of transfers reserved before it: a store that waits
 * for a SIMD op (64 x 16 f32 copied in 64 cycles, visible at 68) does not
 * hold back the loads after it in program order on other engines. On
 * npu-16x16 (DRAM 64 B/cycle, 64-byte bursts, every DRAM edge 64 B/cycle,
 * latency 200): load 1 (4 rows of 128 B, 8 cycles) goes at 0, load 2 (8 KiB, 128
 * cycles) at 8, pauses for the store's 64 cycles from 68 and ends at
 * 8 + 128 + 64: 400 cycles in all with its latency, and 8 cycles of
 * bandwidth stall (load 2 behind load 1). Served in program order the loads
 * waited for the store: 468 cycles. */
static void test_dram_arbitration(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){64, 16});
  uint64_t a1 = add_tensor(p, "x1", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){4, 64});
  uint64_t a2 = add_tensor(p, "x2", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){64, 64});
  npu_insn v = unit_vop(g, "simd", COV_OP_COPY, COV_F32, 64, 16, (npu_mem){(uint8_t)node(g, "vmem"), 0, 8192, 16, 1},
                        (npu_mem){(uint8_t)node(g, "vmem"), 0, 0, 16, 1});
  add(p, v);
  add(p, dma2(edge(g, "dram", "vmem"), true, COV_F32, ay, 64, 16, 0, 0, 64, 16, 8192, 16, 1));
  add(p, dma2(edge(g, "dram", "ibuf"), false, COV_F16, a1, 4, 64, 0, 0, 4, 64, 0, 64, 1));
  add(p, dma2(edge(g, "dram", "wbuf"), false, COV_F16, a2, 64, 64, 0, 0, 64, 64, 0, 64, 1));
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, NULL, NULL, 0);
  const acg_edge *e = &g->edges[edge(g, "dram", "wbuf")];
  double dbw = g->storage[node(g, "dram")].bandwidth_bytes_per_cycle;
  CHECK(dbw == 64 && e->bandwidth_bytes_per_cycle == 64);
  uint64_t want = 8 + 128 + 64 + (uint64_t)e->latency_cycles;
  uint64_t cyc = s ? cov_npu_stats_cycles(s) : 0, bw = s ? cov_npu_stats_stalls(s, "bandwidth") : 0;
  printf("DRAM arbitration: %llu cycles (want %llu), %llu cycles of bandwidth stall (want 8)\n",
         (unsigned long long)cyc, (unsigned long long)want, (unsigned long long)bw);
  CHECK(cyc == want && bw == 8);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* A vop source with col_stride 0 (one value per row: softmax's row max or
 * reciprocal) is read once per row into the SIMD unit's broadcast register
 * (ISA.md "Timing"): y = x - r over 8 x 128 f32 in vmem (64 B/cycle to the
 * unit, 16 lanes) moves 8 x 128 x 4 + 8 x 4 bytes, 65 cycles, not the
 * 128 of two full operands (the old rule); the same with a full second
 * operand still takes 128. Results against a naive loop. */
static void test_vop_broadcast(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  uint64_t busy[2] = {0};
  for (int full = 0; full < 2; full++) {
    npu_prog *p = new_prog(&t);
    uint64_t ax = add_tensor(p, "x", COV_F32, NPU_ROLE_INPUT, 2, (uint32_t[]){8, 128});
    uint64_t ar = add_tensor(p, "r", COV_F32, NPU_ROLE_INPUT, 2, (uint32_t[]){8, 128});
    uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){8, 128});
    int ev = edge(g, "dram", "vmem"), vm = node(g, "vmem");
    add(p, dma2(ev, false, COV_F32, ax, 8, 128, 0, 0, 8, 128, 0, 128, 1));
    add(p, dma2(ev, false, COV_F32, ar, 8, 128, 0, 0, 8, 128, 4096, 128, 1));
    npu_insn v = unit_vop(g, "simd", COV_OP_SUB, COV_F32, 8, 128, (npu_mem){(uint8_t)vm, 0, 8192, 128, 1},
                          (npu_mem){(uint8_t)vm, 0, 0, 128, 1});
    v.u.vop.src2 = (npu_mem){(uint8_t)vm, 0, 4096, 128, full ? 1 : 0}; /* r[i][0] or r[i][j] */
    add(p, v);
    add(p, dma2(ev, true, COV_F32, ay, 8, 128, 0, 0, 8, 128, 8192, 128, 1));
    cov_tensor in[2] = {make(COV_F32, 8, 128), make(COV_F32, 8, 128)};
    for (int i = 0; i < 8 * 128; i++) {
      ((float *)in[0].data)[i] = (float)(i % 37) * 0.25f;
      ((float *)in[1].data)[i] = (float)(i % 11) - 3.0f;
    }
    cov_npu_sim *sim = NULL;
    cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x", "r"}, in, 2);
    cov_tensor y = {0};
    CHECK(!cov_npu_sim_read(sim, "y", &y));
    int bad = 0;
    for (int i = 0; i < 8 && y.data; i++)
      for (int j = 0; j < 128; j++) {
        const float *x = in[0].data, *r = in[1].data;
        float want = x[i * 128 + j] - r[i * 128 + (full ? j : 0)];
        bad += ((float *)y.data)[i * 128 + j] != want;
      }
    CHECK(bad == 0);
    busy[full] = s ? (uint64_t)(cov_npu_stats_unit_utilization(s, "simd") *
                                    (double)cov_npu_stats_cycles(s) + 0.5)
                   : 0;
    cov_tensor_release(&in[0]);
    cov_tensor_release(&in[1]);
    cov_tensor_release(&y);
    cov_npu_stats_free(s);
    cov_npu_sim_free(sim);
    npu_prog_free(p);
  }
  printf("vop broadcast: SIMD busy %llu cycles with a per-row operand (want 65), %llu with a full "
         "one (want 128)\n",
         (unsigned long long)busy[0], (unsigned long long)busy[1]);
  CHECK(busy[0] == 65 && busy[1] == 128);
  cov_acg_free(g);
}

/* The fused forms of a unary op (ISA.md "vop": flags bias, rsum, rmax) on
 * npu-16x16's SIMD unit, whose exp lists "fused": y = exp(x + b) with b one
 * value per row (col_stride 0), and each row's sum of y written to `sum`,
 * against a naive C loop: y within an ulp of expf(x + b) rounded to f32
 * first (the simulator's exp is common_op_eval_f32), the sums bit-exact
 * against the same order over the stored y. Timing: exp's 4 lanes, 1,024
 * elements in 256 cycles (the operand and result bytes over 64 B/cycle
 * edges are less). Encoding round trip (88 bytes with rsum); the verifier
 * refuses the flags on a capability without them, a sum with a column
 * stride, and rsum with rmax. Then the drains' copy with each row's max. */
static void test_vop_fused(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  uint64_t ax = add_tensor(p, "x", COV_F32, NPU_ROLE_INPUT, 2, (uint32_t[]){8, 128});
  uint64_t ab = add_tensor(p, "b", COV_F32, NPU_ROLE_INPUT, 1, (uint32_t[]){8});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){8, 128});
  uint64_t as = add_tensor(p, "s", COV_F32, NPU_ROLE_OUTPUT, 1, (uint32_t[]){8});
  int ev = edge(g, "dram", "vmem"), vm = node(g, "vmem");
  add(p, dma2(ev, false, COV_F32, ax, 8, 128, 0, 0, 8, 128, 0, 128, 1));
  add(p, dma2(ev, false, COV_F32, ab, 1, 8, 0, 0, 1, 8, 4096, 8, 1));
  npu_insn v = unit_vop(g, "simd", COV_OP_EXP, COV_F32, 8, 128, (npu_mem){(uint8_t)vm, 0, 8192, 128, 1},
                        (npu_mem){(uint8_t)vm, 0, 0, 128, 1});
  v.flags = NPU_VOP_BIAS | NPU_VOP_RSUM;
  v.u.vop.src2 = (npu_mem){(uint8_t)vm, 0, 4096, 1, 0}; /* b[i], broadcast along the row */
  v.u.vop.sum = (npu_mem){(uint8_t)vm, 0, 12288, 1, 0};
  add(p, v);
  add(p, dma2(ev, true, COV_F32, ay, 8, 128, 0, 0, 8, 128, 8192, 128, 1));
  add(p, dma2(ev, true, COV_F32, as, 1, 8, 0, 0, 1, 8, 12288, 8, 1));
  CHECK(npu_insn_bytes(&p->insns[2]) == 88);
  save(p, "vop_fused");
  cov_tensor in[2] = {make(COV_F32, 8, 128), make(COV_F32, 8, 0)};
  for (int i = 0; i < 8 * 128; i++) ((float *)in[0].data)[i] = (float)(i % 37) * 0.125f - 2.0f;
  for (int i = 0; i < 8; i++) ((float *)in[1].data)[i] = -(float)i * 0.5f;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x", "b"}, in, 2);
  cov_tensor y = {0}, sm = {0};
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  CHECK(!cov_npu_sim_read(sim, "s", &sm));
  int bad = 0, bad_sum = 0;
  for (int i = 0; i < 8 && y.data && sm.data; i++) {
    const float *yy = (const float *)y.data + i * 128;
    float acc = 0;
    for (int j = 0; j < 128; j++) {
      float arg = ((const float *)in[0].data)[i * 128 + j] + ((const float *)in[1].data)[i];
      double want = exp((double)arg);
      bad += fabs((double)yy[j] - want) > 2.5e-7 * want;
      acc = j == 0 ? yy[j] : acc + yy[j];
    }
    bad_sum += ((const float *)sm.data)[i] != acc;
  }
  CHECK(bad == 0 && bad_sum == 0);
  uint64_t busy = s ? (uint64_t)(cov_npu_stats_unit_utilization(s, "simd") * (double)cov_npu_stats_cycles(s) + 0.5) : 0;
  printf("vop fused exp(x + b) with row sums: SIMD busy %llu cycles (want 256)\n", (unsigned long long)busy);
  CHECK(busy == 256);
  cov_tensor_release(&in[0]);
  cov_tensor_release(&in[1]);
  cov_tensor_release(&y);
  cov_tensor_release(&sm);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);

  /* encoding round trip: the sum operand comes back */
  uint8_t *bytes = NULL;
  size_t n = 0;
  CHECK(!npu_encode(p, &bytes, &n));
  npu_prog *q = NULL;
  CHECK(!npu_decode(bytes, n, "fused", &q));
  CHECK(q && q->insns[2].flags == (NPU_VOP_BIAS | NPU_VOP_RSUM) && q->insns[2].u.vop.sum.off == 12288 &&
        q->insns[2].u.vop.sum.row_stride == 1);
  free(bytes);
  npu_prog_free(q);

  /* pow lists no fused form; a sum must be one value per row */
  p->insns[2].u.vop.vop = COV_OP_POW;
  p->insns[2].u.vop.cap = (uint8_t)cap_of(g, "simd", COV_OP_POW, COV_F32);
  cov_status e = cov_npu_program_verify(p, g);
  CHECK(e && strstr(cov_status_message(e), "instruction 2 (vop): field flags: bias needs a unary op"));
  cov_status_free(e);
  p->insns[2].u.vop.vop = COV_OP_NEG;
  p->insns[2].u.vop.cap = (uint8_t)cap_of(g, "simd", COV_OP_NEG, COV_F32);
  e = cov_npu_program_verify(p, g);
  CHECK(e && strstr(cov_status_message(e), "does not list the fused form 'bias'"));
  cov_status_free(e);
  p->insns[2].u.vop.vop = COV_OP_EXP;
  p->insns[2].u.vop.cap = (uint8_t)cap_of(g, "simd", COV_OP_EXP, COV_F32);
  p->insns[2].u.vop.sum.col_stride = 1;
  e = cov_npu_program_verify(p, g);
  CHECK(e && strstr(cov_status_message(e), "field sum.col_stride: 1, must be 0"));
  cov_status_free(e);
  p->insns[2].u.vop.sum.col_stride = 0;
  p->insns[2].flags = NPU_VOP_BIAS | NPU_VOP_RSUM | NPU_VOP_RMAX;
  e = cov_npu_program_verify(p, g);
  CHECK(e && strstr(cov_status_message(e), "rsum and rmax together"));
  cov_status_free(e);

  /* An accumulator drain's form (row_max on the copy capability): y = x
   * and each row's max, against a C loop; 1,024 elements at 16 lanes, the
   * 32 bytes of maxes one more cycle over the 64 B/cycle edge: 65. */
  p->insns[2].flags = NPU_VOP_RMAX;
  p->insns[2].u.vop.vop = COV_OP_COPY;
  p->insns[2].u.vop.cap = (uint8_t)cap_of(g, "simd", COV_OP_COPY, COV_F32);
  p->insns[2].u.vop.src2 = (npu_mem){0};
  CHECK(!cov_npu_program_verify(p, g));
  save(p, "vop_rmax");
  in[0] = make(COV_F32, 8, 128);
  in[1] = make(COV_F32, 8, 0);
  for (int i = 0; i < 8 * 128; i++) ((float *)in[0].data)[i] = (float)((i * 37) % 101) * 0.5f - 20.0f;
  for (int i = 0; i < 8; i++) ((float *)in[1].data)[i] = 0;
  s = run(g, p, &sim, (const char *[]){"x", "b"}, in, 2);
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  CHECK(!cov_npu_sim_read(sim, "s", &sm));
  bad = bad_sum = 0;
  for (int i = 0; i < 8 && y.data && sm.data; i++) {
    const float *xx = (const float *)in[0].data + i * 128;
    float mx = xx[0];
    for (int j = 0; j < 128; j++) {
      bad += ((const float *)y.data)[i * 128 + j] != xx[j];
      if (xx[j] > mx) mx = xx[j];
    }
    bad_sum += ((const float *)sm.data)[i] != mx;
  }
  CHECK(bad == 0 && bad_sum == 0);
  busy = s ? (uint64_t)(cov_npu_stats_unit_utilization(s, "simd") * (double)cov_npu_stats_cycles(s) + 0.5) : 0;
  printf("vop copy with row maxes: SIMD busy %llu cycles (want 65)\n", (unsigned long long)busy);
  CHECK(busy == 65);
  cov_tensor_release(&in[0]);
  cov_tensor_release(&in[1]);
  cov_tensor_release(&y);
  cov_tensor_release(&sm);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* Loops with address registers: the same tile copied 4 times to successive
 * places, and malformed control (too deep, out-of-range addresses). */
static void test_loops_and_errors(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  uint64_t ax = add_tensor(p, "x", COV_F32, NPU_ROLE_INPUT, 1, (uint32_t[]){16});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){4, 16});
  int ev = edge(g, "dram", "vmem");
  add(p, dma2(ev, false, COV_F32, ax, 1, 16, 0, 0, 1, 16, 0, 16, 1));
  add(p, (npu_insn){.op = NPU_OP_SETR, .u.r = {1, (int64_t)ay}});
  add(p, (npu_insn){.op = NPU_OP_LOOP, .u.loop = {4, 2}});
  npu_insn st = dma2(ev, true, COV_F32, 0, 1, 16, 0, 0, 1, 16, 0, 16, 1);
  st.u.dma.dram_reg = 1;
  add(p, st);
  add(p, (npu_insn){.op = NPU_OP_ADDR, .u.r = {1, 64}});
  cov_tensor x = make(COV_F32, 16, 0);
  for (int i = 0; i < 16; i++) ((float *)x.data)[i] = (float)i;
  save(p, "loop");
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, (const char *[]){"x"}, &x, 1);
  cov_tensor y = {0};
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  int bad = 0;
  for (int i = 0; i < 64 && y.data; i++) bad += ((float *)y.data)[i] != (float)(i % 16);
  CHECK(bad == 0);
  cov_tensor_release(&x);
  cov_tensor_release(&y);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);

  /* One more iteration writes past y, into the end of DRAM: caught by the
   * verifier's dry run, naming the instruction and field. */
  p->insns[2].u.loop.count = 5;
  cov_status v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "instruction 3 (dma): field dram_off"));
  cov_status_free(v);
  p->insns[2].u.loop.count = 4;
  p->insns[0].u.dma.local_off = 65536 - 32; /* past vmem's 64 KiB */
  v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "instruction 0 (dma): field local_off") &&
        strstr(cov_status_message(v), "outside 'vmem'"));
  cov_status_free(v);
  p->insns[0].u.dma.local_off = 0;
  p->insns[2].u.loop.body = 3; /* runs past the program's end */
  v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "instruction 2 (loop): field body"));
  cov_status_free(v);
  p->insns[2].u.loop.body = 2;
  p->insns[1].u.r.reg = 0;
  v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "instruction 1 (setr): field reg"));
  cov_status_free(v);
  npu_prog_free(p);

  /* Nine nested loops. */
  p = new_prog(&t);
  for (int d = 0; d < 9; d++) add(p, (npu_insn){.op = NPU_OP_LOOP, .u.loop = {1, (uint32_t)(9 - d)}});
  add(p, (npu_insn){.op = NPU_OP_NOP});
  v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "instruction 8 (loop): loops nested deeper than 8"));
  cov_status_free(v);
  /* A loop nest that would run for ages is cut off. */
  for (int d = 0; d < 8; d++) p->insns[d].u.loop.count = 1000000;
  p->insns[8] = (npu_insn){.op = NPU_OP_NOP};
  v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "more than"));
  cov_status_free(v);
  npu_prog_free(p);

  /* GEMM larger than the array; a buffer with no path to the unit. */
  p = new_prog(&t);
  npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)compute(g, "pe_array")};
  gm.u.gemm.m = 4;
  gm.u.gemm.k = 17;
  gm.u.gemm.n = 16;
  gm.u.gemm.a = (npu_mem){(uint8_t)node(g, "ibuf"), 0, 0, 17, 1};
  gm.u.gemm.b = (npu_mem){(uint8_t)node(g, "wbuf"), 0, 0, 16, 1};
  gm.u.gemm.c = (npu_mem){(uint8_t)node(g, "obuf"), 0, 0, 16, 1};
  add(p, gm);
  v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "instruction 0 (gemm): field k: 17 > 16 array rows"));
  cov_status_free(v);
  p->insns[0].u.gemm.k = 16;
  p->insns[0].u.gemm.a.buf = (uint8_t)node(g, "vmem");
  v = cov_npu_program_verify(p, g);
  CHECK(v && strstr(cov_status_message(v), "field a.buf: the ACG has no path vmem -> pe_array"));
  cov_status_free(v);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* ---- chained gemms (ISA.md "Chained gemms") ---- */

/* Runs p (inputs: every input/weight tensor filled from a fixed seed) and
 * returns its cycles and a copy of tensor `outname`'s bytes. */
static uint64_t run_bytes(const cov_acg *g, const npu_prog *p, const char *outname,
                          uint8_t **bytes, size_t *n) {
  cov_npu_sim *sim = NULL;
  cov_status st = cov_npu_sim_create(g, &sim);
  if (!st) st = cov_npu_sim_load(sim, p);
  uint64_t seed = 0x1234567ull;
  for (uint32_t i = 0; i < p->n_tensors && !st; i++) {
    const npu_tensor *tn = &p->tensors[i];
    if (tn->role != NPU_ROLE_INPUT && tn->role != NPU_ROLE_WEIGHT) continue;
    int64_t shape[NPU_TENSOR_MAX_RANK];
    for (int d = 0; d < tn->rank; d++) shape[d] = tn->dims[d];
    cov_tensor t = {0};
    st = cov_tensor_alloc(&t, COV_F32, tn->rank, shape);
    for (int64_t j = 0; !st && j < cov_tensor_numel(&t); j++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      ((float *)t.data)[j] = (float)((seed >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    if (!st) st = cov_npu_sim_write(sim, tn->name, &t);
    cov_tensor_release(&t);
  }
  cov_npu_stats *stats = NULL;
  if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
  cov_tensor y = {0};
  if (!st) st = cov_npu_sim_read(sim, outname, &y);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
  }
  CHECK(stats && y.data);
  uint64_t cycles = stats ? cov_npu_stats_cycles(stats) : 0;
  *n = y.data ? (size_t)cov_tensor_numel(&y) * cov_dtype_size(y.dtype) : 0;
  *bytes = malloc(*n ? *n : 1);
  if (y.data) memcpy(*bytes, y.data, *n);
  cov_tensor_release(&y);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  return cycles;
}

static npu_prog *clone_unchained(const npu_prog *p) {
  uint8_t *buf = NULL;
  size_t size = 0;
  npu_prog *q = NULL;
  CHECK(!npu_encode(p, &buf, &size));
  CHECK(!npu_decode(buf, size, "clone", &q));
  free(buf);
  for (uint32_t i = 0; q && i < q->n_insns; i++)
    if (q->insns[i].op == NPU_OP_GEMM)
      q->insns[i].flags &= (uint16_t)~(NPU_GEMM_HOLD | NPU_GEMM_CHAIN | NPU_GEMM_WKEEP);
  return q;
}

static int count_flag(const npu_prog *p, uint16_t f) {
  int n = 0;
  for (uint32_t i = 0; i < p->n_insns; i++) n += p->insns[i].op == NPU_OP_GEMM && (p->insns[i].flags & f);
  return n;
}

/* Chained and unchained versions of the same program: bit-identical outputs,
 * fewer cycles chained. */
static void check_chain_same(const cov_acg *g, const npu_prog *chained, const char *what,
                             bool expect_faster) {
  npu_prog *plain = clone_unchained(chained);
  uint8_t *b1 = NULL, *b2 = NULL;
  size_t n1 = 0, n2 = 0;
  uint64_t c1 = run_bytes(g, chained, "y", &b1, &n1);
  uint64_t c2 = plain ? run_bytes(g, plain, "y", &b2, &n2) : 0;
  CHECK(n1 == n2 && n1 > 0 && memcmp(b1, b2, n1) == 0);
  if (expect_faster) CHECK(c1 < c2);
  printf("chain %-28s %8llu cycles chained, %8llu unchained\n", what, (unsigned long long)c1,
         (unsigned long long)c2);
  free(b1);
  free(b2);
  npu_prog_free(plain);
}

/* OS: y = x @ w with K = 40 reduced in 5 gemms of k = 8 into one acc tile,
 * then copied out by the SIMD unit. */
static npu_prog *os_chain_prog(const cov_acg *g, const npu_target *t) {
  npu_prog *p = new_prog(t);
  const uint32_t M = 16, K = 40, N = 16;
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){M, K});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 2, (uint32_t[]){K, N});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){M, N});
  int ubuf = node(g, "ubuf"), accb = node(g, "acc");
  int e = edge(g, "dram", "ubuf");
  int arr = compute(g, "pe_array"), vec = compute(g, "vec");
  int mac = cap_of(g, "pe_array", COV_OP_MAC, COV_F16);
  int addc = cap_of(g, "vec", COV_OP_ADD, COV_F32);
  add(p, dma2(e, false, COV_F16, aw, K, N, 0, 0, K, N, 0, 16, 1));
  add(p, dma2(e, false, COV_F16, ax, M, K, 0, 0, M, K, 8192, 1, 16)); /* A^T */
  for (uint32_t k0 = 0; k0 < K; k0 += 8) {
    npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)arr, .flags = k0 ? NPU_GEMM_ACC : 0};
    gm.u.gemm.cap = (uint8_t)mac;
    gm.u.gemm.m = M;
    gm.u.gemm.k = 8;
    gm.u.gemm.n = N;
    gm.u.gemm.a = (npu_mem){(uint8_t)ubuf, 0, 8192 + k0 * 16 * 2, 1, 16};
    gm.u.gemm.b = (npu_mem){(uint8_t)ubuf, 0, k0 * 16 * 2, 16, 1};
    gm.u.gemm.c = (npu_mem){(uint8_t)accb, 0, 0, 16, 1};
    add(p, gm);
  }
  npu_insn v = vop(vec, addc, COV_OP_ADD, COV_F32, M, N,
                   (npu_mem){(uint8_t)ubuf, 0, 16384, 16, 1}, (npu_mem){(uint8_t)accb, 0, 0, 16, 1});
  v.u.vop.src2 = (npu_mem){NPU_IMM_BUF, 0, 0, 0, 0};
  v.u.vop.imm = 0.0f;
  add(p, v);
  add(p, dma2(e, true, COV_F32, ay, M, N, 0, 0, M, N, 16384, 16, 1));
  return p;
}

/* WS: two row blocks of x through the same 16 x 16 weights. */
static npu_prog *ws_chain_prog(const cov_acg *g, const npu_target *t) {
  npu_prog *p = new_prog(t);
  const uint32_t M = 64, K = 16, N = 16;
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 2, (uint32_t[]){M, K});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 2, (uint32_t[]){K, N});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){M, N});
  int ibuf = node(g, "ibuf"), wbuf = node(g, "wbuf"), obuf = node(g, "obuf");
  int arr = compute(g, "pe_array");
  int mac = cap_of(g, "pe_array", COV_OP_MAC, COV_F16);
  add(p, dma2(edge(g, "dram", "wbuf"), false, COV_F16, aw, K, N, 0, 0, K, N, 0, 16, 1));
  add(p, dma2(edge(g, "dram", "ibuf"), false, COV_F16, ax, M, K, 0, 0, M, K, 0, 16, 1));
  for (uint32_t m0 = 0; m0 < M; m0 += 16) {
    npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)arr};
    gm.u.gemm.cap = (uint8_t)mac;
    gm.u.gemm.m = 16;
    gm.u.gemm.k = (uint16_t)K;
    gm.u.gemm.n = (uint16_t)N;
    gm.u.gemm.a = (npu_mem){(uint8_t)ibuf, 0, m0 * 16 * 2, 16, 1};
    gm.u.gemm.b = (npu_mem){(uint8_t)wbuf, 0, 0, 16, 1};
    gm.u.gemm.c = (npu_mem){(uint8_t)obuf, 0, m0 * 16 * 4, 16, 1};
    add(p, gm);
  }
  add(p, dma2(edge(g, "obuf", "dram"), true, COV_F32, ay, M, N, 0, 0, M, N, 0, 16, 1));
  return p;
}

static void expect_err(const npu_prog *p, const cov_acg *g, const char *a, const char *b) {
  cov_status v = cov_npu_program_verify(p, g);
  bool ok = v && strstr(cov_status_message(v), a) && (!b || strstr(cov_status_message(v), b));
  if (!ok) fprintf(stderr, "expected '%s' / '%s', got: %s\n", a, b ? b : "",
                   v ? cov_status_message(v) : "(no error)");
  CHECK(ok);
  cov_status_free(v);
}

static void test_chaining(void) {
  cov_acg *g = load_target("npu-32x32-os");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = os_chain_prog(g, &t);
  CHECK(!cov_npu_program_verify(p, g));
  CHECK(!npu_chain_gemms(p, &t));
  /* gemms 2..6: hold x4 then the last continues without hold. */
  CHECK(count_flag(p, NPU_GEMM_HOLD) == 4 && count_flag(p, NPU_GEMM_CHAIN) == 4);
  CHECK(p->insns[2].flags == NPU_GEMM_HOLD && !(p->insns[6].flags & NPU_GEMM_HOLD));
  CHECK(!cov_npu_program_verify(p, g));
  check_chain_same(g, p, "os k=40 in 5 gemms", true);
  /* The disassembly shows the flags. */
  FILE *f = tmpfile();
  CHECK(f && !cov_npu_program_disasm(p, g, f));
  char txt[16384] = {0};
  if (f) {
    rewind(f);
    size_t got = fread(txt, 1, sizeof txt - 1, f);
    txt[got] = 0;
    fclose(f);
  }
  CHECK(strstr(txt, " acc chain hold ") && strstr(txt, "m=16 k=8 n=16 hold "));
  save(p, "gemm_os_chain");

  /* Malformed chains, each refused by name. */
  npu_insn keep;
  keep = p->insns[3];
  p->insns[3].flags &= (uint16_t)~NPU_GEMM_CHAIN; /* gemm 2 holds, gemm 3 does not continue */
  expect_err(p, g, "instruction 3 (gemm): field flags: gemm 2 holds its tile in 'pe_array'",
             "must continue it");
  p->insns[3] = keep;
  p->insns[3].u.gemm.c.off = 1024; /* another tile */
  expect_err(p, g, "instruction 3 (gemm): field c (address): differs from gemm 2", NULL);
  p->insns[3] = keep;
  p->insns[3].u.gemm.m = 8;
  expect_err(p, g, "instruction 3 (gemm): field m: differs from gemm 2", NULL);
  p->insns[3] = keep;
  /* the same rows through m digits: the held tile's rows are addressed
   * otherwise, so the chain is refused (npu_gemm_same_mdig) */
  p->insns[3].flags |= NPU_GEMM_MDIG;
  p->insns[3].u.gemm.mrad = 8;
  p->insns[3].u.gemm.ma = 8 * p->insns[3].u.gemm.a.row_stride;
  p->insns[3].u.gemm.mc = 8 * p->insns[3].u.gemm.c.row_stride;
  expect_err(p, g, "instruction 3 (gemm): field m digits: differs from gemm 2", NULL);
  p->insns[3] = keep;
  p->insns[2].flags = 0; /* nothing held */
  expect_err(p, g, "instruction 3 (gemm): field flags: chain, but 'pe_array' holds no tile", NULL);
  p->insns[2].flags = NPU_GEMM_HOLD;
  p->insns[3].flags = NPU_GEMM_CHAIN | NPU_GEMM_HOLD; /* chain without acc */
  expect_err(p, g, "instruction 3 (gemm): field flags: chain accumulates", "needs acc");
  p->insns[3] = keep;
  p->insns[6].flags |= NPU_GEMM_HOLD; /* the vop then reads the held tile */
  expect_err(p, g, "instruction 7 (vop): reads bytes [0, 1024) of 'acc' while gemm 6 holds them",
             NULL);
  p->n_insns = 7; /* the program ends with the tile held */
  expect_err(p, g, "instruction 6 (gemm): field flags: the program ends while it holds", NULL);
  p->n_insns = 9;
  p->insns[6] = p->insns[5];
  p->insns[6].flags = NPU_GEMM_ACC | NPU_GEMM_CHAIN;
  p->insns[2].flags |= NPU_GEMM_WKEEP;
  expect_err(p, g, "instruction 2 (gemm): field flags: wkeep needs a weight-stationary array",
             NULL);
  npu_prog_free(p);

  /* Through the binary format: flags survive, the decoder's checks hold. */
  p = os_chain_prog(g, &t);
  CHECK(!npu_chain_gemms(p, &t));
  npu_prog *q = clone_unchained(p);
  CHECK(q && count_flag(q, NPU_GEMM_HOLD) == 0);
  npu_prog_free(q);
  uint8_t *bin = NULL;
  size_t bn = 0;
  CHECK(!npu_encode(p, &bin, &bn));
  CHECK(!npu_decode(bin, bn, "x", &q));
  CHECK(q && count_flag(q, NPU_GEMM_CHAIN) == 4);
  free(bin);
  npu_prog_free(q);
  npu_prog_free(p);
  cov_acg_free(g);

  /* Weight-stationary: the same weights for four row blocks. With one
   * weight register set (with two, reloading them would hide behind the
   * previous stream, as test_weight_double_buffer checks). */
  g = load_target("npu-16x16");
  g->compute[compute(g, "pe_array")].weight_buffers = 1;
  CHECK(!npu_target_init(g, &t));
  p = ws_chain_prog(g, &t);
  CHECK(!npu_chain_gemms(p, &t));
  CHECK(count_flag(p, NPU_GEMM_WKEEP) == 3 && !(p->insns[2].flags & NPU_GEMM_WKEEP));
  CHECK(!cov_npu_program_verify(p, g));
  check_chain_same(g, p, "ws 4 row blocks, one weight tile", true);
  /* saved for the shipped npu-16x16 (two weight register sets) */
  g->compute[compute(g, "pe_array")].weight_buffers = 2;
  CHECK(!npu_target_init(g, &t));
  npu_prog_set_target(p, &t);
  save(p, "gemm_ws_wkeep");
  keep = p->insns[3];
  p->insns[3].u.gemm.b.off = 512;
  expect_err(p, g, "instruction 3 (gemm): field b (address): differs from gemm 2", NULL);
  p->insns[3] = keep;
  p->insns[3].u.gemm.k = 8;
  expect_err(p, g, "instruction 3 (gemm): field k: differs from gemm 2", NULL);
  p->insns[3] = keep;
  p->insns[2].flags |= NPU_GEMM_WKEEP; /* the first gemm: nothing loaded yet */
  expect_err(p, g, "instruction 2 (gemm): field flags: wkeep, but 'pe_array' holds no weights", NULL);
  p->insns[2].flags = 0;
  /* A DMA rewrites the weights between two gemms: wkeep is stale. */
  npu_prog_free(p);
  p = ws_chain_prog(g, &t);
  CHECK(!npu_chain_gemms(p, &t));
  npu_prog *r = NULL;
  CHECK(!npu_prog_create(&r));
  npu_prog_set_target(r, &t);
  for (uint32_t i = 0; i < p->n_tensors; i++) CHECK(!npu_prog_add_tensor(r, &p->tensors[i]));
  for (uint32_t i = 0; i < p->n_insns; i++) {
    if (i == 3) CHECK(!npu_prog_add(r, &p->insns[0])); /* reload wbuf before gemm 4 */
    CHECK(!npu_prog_add(r, &p->insns[i]));
  }
  r->dram_bytes = p->dram_bytes;
  expect_err(r, g, "instruction 4 (gemm): field flags: wkeep, but 'pe_array' holds no weights",
             "written since");
  p->insns[2].flags |= NPU_GEMM_HOLD;
  expect_err(p, g, "instruction 2 (gemm): field flags: hold/chain need an output-stationary array",
             NULL);
  npu_prog_free(r);
  npu_prog_free(p);
  cov_acg_free(g);
}

/* The code generator's chains on real layers: same bytes as the program with
 * the chaining flags cleared, fewer cycles where it chains. */
static void test_chaining_codegen(void) {
  char suite[1024];
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", g_src);
  const char *targets[2] = {"npu-32x32-os", "npu-16x16"};
  const char *layers[2] = {"convnet_layer1", "convnet_layer2"};
  for (int ti = 0; ti < 2; ti++)
    for (int li = 0; li < 2; li++) {
      cov_acg *g = load_target(targets[ti]);
      cov_layer *l = NULL;
      cov_schedule *s = NULL;
      cov_npu_program *p = NULL;
      CHECK(!cov_layer_from_suite(suite, layers[li], 1, &l));
      CHECK(l && !cov_map(l, g, NULL, &s));
      CHECK(s && !cov_npu_compile(s, &p));
      if (p) {
        int ch = count_flag(p, NPU_GEMM_CHAIN) + count_flag(p, NPU_GEMM_WKEEP);
        if (ti == 0) CHECK(ch > 0); /* the OS programs reduce over r, s in separate gemms */
        /* rename the output for run_bytes */
        int o = npu_prog_find_tensor(p, "out");
        CHECK(o >= 0);
        if (o >= 0) snprintf(p->tensors[o].name, sizeof p->tensors[o].name, "y");
        char what[64];
        snprintf(what, sizeof what, "%s %s", layers[li], targets[ti]);
        check_chain_same(g, p, what, ch > 0);
      }
      cov_npu_program_free(p);
      cov_schedule_free(s);
      cov_layer_free(l);
      cov_acg_free(g);
    }
}

/* Double-buffered weights (ACG weight_buffers 2 on npu-16x16's array):
 * three gemms of m=40 k=16 n=16 on different weight blocks, data ready at
 * cycle 0. Each weight load is max(k, k*n*2/32) = 16 cycles, each stream
 * max(m, m*k*2/32, m*n*4/64, m*k*n/256) = 40, latency 32. One weight
 * register set: 3 * (16 + 40) + 32 = 200 cycles. Two: the second and third
 * loads hide behind the previous streams: 16 + 3 * 40 + 32 = 168. Weights
 * read from ibuf, the streamed operand's buffer, share its port: no
 * overlap, 200 again. */
static uint64_t ws_three_gemms(cov_acg *g, uint32_t wbufs, const char *wsrc) {
  g->compute[compute(g, "pe_array")].weight_buffers = wbufs;
  npu_target t;
  cov_status st = npu_target_init(g, &t);
  CHECK(!st);
  cov_status_free(st);
  npu_prog *p = NULL;
  st = npu_prog_create(&p);
  CHECK(!st);
  npu_prog_set_target(p, &t);
  add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 1, (uint32_t[]){16});
  int wb = node(g, wsrc);
  for (uint32_t i = 0; i < 3; i++) {
    npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)compute(g, "pe_array")};
    gm.u.gemm.cap = (uint8_t)cap_of(g, "pe_array", COV_OP_MAC, COV_F16);
    gm.u.gemm.m = 40;
    gm.u.gemm.k = 16;
    gm.u.gemm.n = 16;
    gm.u.gemm.a = (npu_mem){(uint8_t)node(g, "ibuf"), 0, 0, 16, 1};
    gm.u.gemm.b = (npu_mem){(uint8_t)wb, 0, 4096 + i * 512, 16, 1};
    gm.u.gemm.c = (npu_mem){(uint8_t)node(g, "obuf"), 0, i * 4096, 16, 1};
    add(p, gm);
  }
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, NULL, NULL, 0);
  uint64_t cyc = s ? cov_npu_stats_cycles(s) : 0;
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  return cyc;
}

static void test_weight_double_buffer(void) {
  cov_acg *g = load_target("npu-16x16");
  CHECK(g->compute[compute(g, "pe_array")].weight_buffers == 2);
  uint64_t two = ws_three_gemms(g, 2, "wbuf"), one = ws_three_gemms(g, 1, "wbuf");
  uint64_t shared = ws_three_gemms(g, 2, "ibuf");
  printf("weight double buffering: %llu cycles (one register set: %llu; weights over the "
         "stream's port: %llu)\n", (unsigned long long)two, (unsigned long long)one,
         (unsigned long long)shared);
  CHECK(two == 168);
  CHECK(one == 200);
  CHECK(shared == 200);
  cov_acg_free(g);
}

/* Long streams: resnet50_res5_1x1 (x 512x7x7, w 2048x512, bias) on
 * npu-16x16. The mapper's GEMM plan streams p and q through the array in
 * one GEMM (m = 49 rows per weight load instead of 7); every GEMM of the
 * program streams that many rows; and the program computes the layer: its
 * output against a naive loop over the same f16-rounded inputs. */
static void test_long_stream(void) {
  char suite[1024];
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", g_src);
  cov_acg *g = load_target("npu-16x16");
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  CHECK(!cov_layer_from_suite(suite, "resnet50_res5_1x1", 1, &l));
  CHECK(l && !cov_map(l, g, NULL, &s));
  CHECK(s && !cov_npu_compile(s, &p));
  if (!p) return;
  const map_schedule *ms = map_schedule_of(s);
  map_gemm_plan gp;
  map_gemm_plan_make(ms, &gp);
  int64_t m = map_gemm_m(ms, &gp);
  CHECK(gp.ml2 >= 0 && m == 49);
  uint32_t gemms = 0, long_ones = 0;
  for (uint32_t i = 0; i < p->n_insns; i++)
    if (p->insns[i].op == NPU_OP_GEMM) {
      gemms++;
      long_ones += p->insns[i].u.gemm.m == (uint32_t)m;
    }
  CHECK(gemms > 0 && long_ones == gemms);
  const int C = 512, K = 2048, HW = 49;
  cov_tensor x = {0}, w = {0}, b = {0}, y = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 4, (int64_t[]){1, C, 7, 7}));
  CHECK(!cov_tensor_alloc(&w, COV_F32, 4, (int64_t[]){K, C, 1, 1}));
  CHECK(!cov_tensor_alloc(&b, COV_F32, 1, (int64_t[]){K}));
  float *fx = x.data, *fw = w.data, *fb = b.data;
  for (int i = 0; i < C * HW; i++) fx[i] = rnd();
  for (int i = 0; i < K * C; i++) fw[i] = rnd() / 16;
  for (int i = 0; i < K; i++) fb[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_npu_stats *st = run(g, p, &sim, (const char *[]){"in0", "in1", "in2"}, (cov_tensor[]){x, w, b}, 3);
  CHECK(!cov_npu_sim_read(sim, "out", &y));
  double worst = 0, top = 0;
  for (int k = 0; k < K && y.data; k++)
    for (int i = 0; i < HW; i++) {
      double acc = fb[k];
      for (int c = 0; c < C; c++) acc += (double)fx[c * HW + i] * fw[k * C + c];
      double got = ((float *)y.data)[k * HW + i];
      worst = fmax(worst, fabs(got - acc));
      top = fmax(top, fabs(acc));
    }
  printf("long streams: resnet50_res5_1x1 on npu-16x16, %u gemms of m=%lld, %llu cycles, max "
         "err %.3g of %.3g\n", gemms, (long long)m,
         (unsigned long long)(st ? cov_npu_stats_cycles(st) : 0), worst, top);
  CHECK(y.data && worst <= 1e-4 * top);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&b);
  cov_tensor_release(&y);
  cov_npu_stats_free(st);
  cov_npu_sim_free(sim);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(l);
  cov_acg_free(g);
}

/* A DMA engine's writes travel its edge in order (ISA.md "Timing"): a store
 * over DRAM bytes the same engine's previous store wrote (here two rows of
 * 15 f32, 60 bytes each, sharing a 64-byte scoreboard block, as the rows
 * of a chunked epilogue's stores do) waits for that store's occupancy, not
 * for its data to arrive: 1 + 1 + 200 cycles, where the second store once
 * started after the first's latency (1 + 200 + 1 + 200 = 402). A load from
 * DRAM reading those bytes (another engine) still waits for the arrival. */
static void test_store_waw(void) {
  cov_acg *g = load_target("npu-16x16");
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){2, 15});
  int ev = edge(g, "dram", "vmem");
  add(p, dma2(ev, true, COV_F32, ay, 2, 15, 0, 0, 1, 15, 0, 15, 1));
  add(p, dma2(ev, true, COV_F32, ay, 2, 15, 1, 0, 1, 15, 64, 15, 1));
  cov_npu_sim *sim = NULL;
  cov_npu_stats *s = run(g, p, &sim, NULL, NULL, 0);
  uint64_t lat = g->edges[ev].latency_cycles, want = 1 + 1 + lat;
  uint64_t cyc = s ? cov_npu_stats_cycles(s) : 0;
  printf("store after store on one engine: %llu cycles (want %llu)\n", (unsigned long long)cyc,
         (unsigned long long)want);
  CHECK(cyc == want);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  /* the same rows read back into ibuf by another engine: after the arrival */
  p = new_prog(&t);
  ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 2, (uint32_t[]){2, 15});
  add(p, dma2(ev, true, COV_F32, ay, 2, 15, 0, 0, 1, 15, 0, 15, 1));
  add(p, dma2(edge(g, "dram", "ibuf"), false, COV_F32, ay, 2, 15, 0, 0, 1, 15, 0, 15, 1));
  s = run(g, p, &sim, NULL, NULL, 0);
  want = 1 + lat + 1 + lat;
  cyc = s ? cov_npu_stats_cycles(s) : 0;
  printf("load after store: %llu cycles (want %llu)\n", (unsigned long long)cyc, (unsigned long long)want);
  CHECK(cyc == want);
  cov_npu_stats_free(s);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  cov_acg_free(g);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  g_out = argc > 2 ? argv[2] : NULL;
  test_gemm_ws();
  test_gemm_os();
  test_dma_padding();
  test_bank_conflicts();
  test_dram_arbitration();
  test_vop_broadcast();
  test_vop_fused();
  test_loops_and_errors();
  test_chaining();
  test_chaining_codegen();
  test_weight_double_buffer();
  test_long_stream();
  test_store_waw();
  return check_summary();
}

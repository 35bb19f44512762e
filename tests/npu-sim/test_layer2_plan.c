/* tests/npu-sim/test_layer2_plan.c: a program for convnet_layer2 on the
 * bench's output-stationary 16x16 array (bench/npu-sim/npu-16x16-os.json),
 * built by hand, checked by the verifier, run in the simulator and compared
 * with a naive conv: the plan the mapper and the code generator were built
 * to reach (the compiler reaches 2,494 cycles, test_os_stream's
 * check_layer2), and a reference for what each of its parts is worth.
 *
 * convnet_layer2: 10 -> 10 channels, 5x5, 15x15 input, 11x11 output, bias,
 * relu. SCALE-Sim v2's OS count: (16 + 16 + 250 - 2) x ceil(121/16) x 1 - 1
 * = 2,239 cycles; the target is <= 1.15x = 2,575.
 *
 * The plan uses nothing the ISA lacks:
 * 1. 8 tiles, not 9, with neither padding nor a new ISA field: the 11x11
 *    pixels split into 8 rectangles of at most 16 (row 0 as 1x11, rows
 *    1-10 x columns 0-7 as five 2x8, rows 1-10 x columns 8-10 as two 5x3:
 *    121 of 128 array rows busy), each one chain of gemms with its own m
 *    digits (radix = the rectangle's width, a.m = an input row); the
 *    compiler's mapper/map_rect.c;
 * 2. a short head: the weights channel-major on chip ([c][kg][r s]) and
 *    both inputs loaded one channel at a time, interleaved (x c, w c, each
 *    channel on 64-byte blocks of its own); each tile's chain is one gemm
 *    per channel (k digits s, r, c; k0 = 25 c), so the first gemm waits
 *    for channel 0's 18 bursts only (first gemm at cycle 218, not 289);
 *    the compiler's map_gemm.c chan_major and npu_head.c;
 * 3. a short tail: each rectangle's bias add reads the accumulators
 *    directly (no copy), relu in place, the rectangle's store at once; the
 *    1x11 row goes last (10 DRAM runs of 44 bytes). The compiled program
 *    copies out of the accumulators first: 7 cycles more.
 * Measured here (the four variants below): 2,487 cycles (1.111x) for the
 * plan; 2,649 (1.183x) with whole loads (8 tiles alone); 2,758 (1.232x)
 * for 9 padded blocks with the short head; 2,920 (1.304x) for 9 blocks
 * and whole loads (a program without rectangles: 2,854 with
 * its input alone loaded channel by channel). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/npu.h"
#include "tests/check.h"
#include "tests/npu-sim/npu_test.h"

enum { C = 10, H = 15, K = 10, R = 5, OH = 11, TAPS = R * R, KT = C * TAPS };
/* SCALE-Sim v2's OS compute cycles on 16x16: (16 + 16 + 250 - 2) x
 * ceil(121 / 16) x ceil(10 / 16) - 1 */
enum { SCALESIM_OS = (16 + 16 + KT - 2) * ((OH * OH + 15) / 16) - 1 };
/* on-chip layout (ubuf bytes): each channel's input and weights on 64-byte
 * blocks of their own (the simulator's dependency blocks), so that a gemm
 * waits for its channel only; then the bias and y, [filter][row][column] */
enum { XB = 0, CH = 512, WB = XB + C * CH, BB = WB + C * CH, YB = BB + 64 };

typedef struct rect {
  int r0, c0, h, w;
} rect;

static int find_cap(const cov_acg *g, int unit, cov_op op) {
  for (int k = 0; k < g->compute[unit].n_caps; k++) {
    const acg_capability *c = &g->compute[unit].caps[k];
    if (c->op == op && c->in[0] == (op == COV_OP_MAC ? COV_F16 : COV_F32)) return k;
  }
  return -1;
}

static npu_dma_dim dim(uint32_t n, int32_t start, uint32_t extent, uint32_t ds, uint32_t ls) {
  return (npu_dma_dim){n, 1, start, extent, ds, ls};
}

/* The variants compared (the first is the plan). */
typedef struct variant {
  const char *what;
  bool split_head; /* loads one channel at a time (else w whole, then x whole) */
  bool nine;       /* 9 padded 4x4 blocks (today's tiling) instead of the 8 rectangles */
} variant;

/* Builds the program, runs it, checks its output against a naive conv and
 * returns its cycles. */
static uint64_t run_plan(const cov_acg *g, const variant *v) {
  npu_target t;
  CHECK(!npu_target_init(g, &t));
  npu_prog *p = new_prog(&t);
  uint64_t ax = add_tensor(p, "x", COV_F16, NPU_ROLE_INPUT, 3, (uint32_t[]){C, H, H});
  uint64_t aw = add_tensor(p, "w", COV_F16, NPU_ROLE_WEIGHT, 4, (uint32_t[]){K, C, R, R});
  uint64_t ab = add_tensor(p, "b", COV_F32, NPU_ROLE_WEIGHT, 1, (uint32_t[]){K});
  uint64_t ay = add_tensor(p, "y", COV_F32, NPU_ROLE_OUTPUT, 3, (uint32_t[]){K, OH, OH});
  int ubuf = acg_find_node(g, "ubuf"), acc = acg_find_node(g, "acc");
  int arr = acg_find_node(g, "pe_array") - g->n_storage, vec = acg_find_node(g, "vec") - g->n_storage;
  int mac = find_cap(g, arr, COV_OP_MAC), vadd = find_cap(g, vec, COV_OP_ADD), vrelu = find_cap(g, vec, COV_OP_RELU);
  int ld = npu_find_edge(g, t.dram, ubuf);
  CHECK(ubuf >= 0 && acc >= 0 && mac >= 0 && vadd >= 0 && vrelu >= 0 && ld >= 0);
  /* whole loads as the code generator orders them (the weights, then the
   * input), or one channel at a time: x[c] (225 contiguous elements, one
   * DRAM run), then w[:, c] (10 runs of 25) into [c][kg][r s] */
  if (!v->split_head) {
    npu_insn lw = {.op = NPU_OP_DMA, .unit = (uint8_t)ld};
    lw.u.dma.dtype = COV_F16;
    lw.u.dma.rank = 3;
    lw.u.dma.dram_off = aw;
    lw.u.dma.local_off = WB;
    lw.u.dma.dim[0] = dim(C, 0, C, TAPS, CH / 2);
    lw.u.dma.dim[1] = dim(K, 0, K, C * TAPS, TAPS);
    lw.u.dma.dim[2] = dim(TAPS, 0, TAPS, 1, 1);
    add(p, lw);
    npu_insn lx = {.op = NPU_OP_DMA, .unit = (uint8_t)ld};
    lx.u.dma.dtype = COV_F16;
    lx.u.dma.rank = 2;
    lx.u.dma.dram_off = ax;
    lx.u.dma.local_off = XB;
    lx.u.dma.dim[0] = dim(C, 0, C, H * H, CH / 2);
    lx.u.dma.dim[1] = dim(H * H, 0, H * H, 1, 1);
    add(p, lx);
  }
  for (int c = 0; c < C && v->split_head; c++) {
    npu_insn lx = {.op = NPU_OP_DMA, .unit = (uint8_t)ld};
    lx.u.dma.dtype = COV_F16;
    lx.u.dma.rank = 1;
    lx.u.dma.dram_off = ax + (uint64_t)c * H * H * 2;
    lx.u.dma.local_off = XB + c * CH;
    lx.u.dma.dim[0] = dim(H * H, 0, H * H, 1, 1);
    add(p, lx);
    npu_insn lw = {.op = NPU_OP_DMA, .unit = (uint8_t)ld};
    lw.u.dma.dtype = COV_F16;
    lw.u.dma.rank = 2;
    lw.u.dma.dram_off = aw + (uint64_t)c * TAPS * 2;
    lw.u.dma.local_off = WB + c * CH;
    lw.u.dma.dim[0] = dim(K, 0, K, C * TAPS, TAPS);
    lw.u.dma.dim[1] = dim(TAPS, 0, TAPS, 1, 1);
    add(p, lw);
  }
  npu_insn lb = {.op = NPU_OP_DMA, .unit = (uint8_t)ld};
  lb.u.dma.dtype = COV_F32;
  lb.u.dma.rank = 1;
  lb.u.dma.dram_off = ab;
  lb.u.dma.local_off = BB;
  lb.u.dma.dim[0] = dim(K, 0, K, 1, 1);
  add(p, lb);
  /* 8 rectangles; the 1x11 row last (the cheapest epilogue and store) */
  const rect tiles[8] = {{1, 0, 2, 8}, {3, 0, 2, 8}, {5, 0, 2, 8}, {7, 0, 2, 8},
                         {9, 0, 2, 8}, {1, 8, 5, 3}, {6, 8, 5, 3}, {0, 0, 1, 11}};
  /* today's tiling: p and q padded to 12, 4x4 blocks; the padded pixels
   * read past the input (the compiled program reads zeros there) and are
   * never stored */
  rect blocks[9];
  for (int i = 0; i < 9; i++) blocks[i] = (rect){4 * (i / 3), 4 * (i % 3), 4, 4};
  for (int ti = 0; ti < (v->nine ? 9 : 8); ti++) {
    const rect *rc = v->nine ? &blocks[ti] : &tiles[ti];
    int vh = rc->r0 + rc->h > OH ? OH - rc->r0 : rc->h, vw = rc->c0 + rc->w > OH ? OH - rc->c0 : rc->w;
    uint32_t m = (uint32_t)(rc->h * rc->w);
    for (int c = 0; c < C; c++) {
      uint16_t fl = NPU_GEMM_KDIG | NPU_GEMM_MDIG;
      if (c > 0) fl |= NPU_GEMM_ACC | NPU_GEMM_CHAIN;
      if (c < C - 1) fl |= NPU_GEMM_HOLD;
      npu_insn gm = {.op = NPU_OP_GEMM, .unit = (uint8_t)arr, .flags = fl};
      gm.u.gemm.cap = (uint8_t)mac;
      gm.u.gemm.m = m;
      gm.u.gemm.k = TAPS;
      gm.u.gemm.n = K;
      /* A(i, j): pixel i of the rectangle (m digits: column i % w, row
       * i / w), tap j = (s, r, c) digits */
      gm.u.gemm.a = (npu_mem){(uint8_t)ubuf, 0, (uint32_t)(XB + (rc->r0 * H + rc->c0) * 2), 1, 1};
      gm.u.gemm.b = (npu_mem){(uint8_t)ubuf, 0, WB, 1, TAPS};
      gm.u.gemm.c = (npu_mem){(uint8_t)acc, 0, 0, 1, 16};
      gm.u.gemm.k0 = (uint16_t)(c * TAPS);
      gm.u.gemm.krad[0] = R;
      gm.u.gemm.krad[1] = R;
      gm.u.gemm.ka[0] = H;
      gm.u.gemm.ka[1] = CH / 2;
      gm.u.gemm.kb[0] = R;
      gm.u.gemm.kb[1] = CH / 2;
      gm.u.gemm.mrad = (uint16_t)rc->w;
      gm.u.gemm.ma = H;
      gm.u.gemm.mc = rc->w;
      add(p, gm);
    }
    /* bias + relu per rectangle row, [filter][pixel], from the
     * accumulators into y's place, then the rectangle's store */
    for (int rr = 0; rr < vh; rr++) {
      uint32_t yo = (uint32_t)(YB + ((rc->r0 + rr) * OH + rc->c0) * 4);
      npu_insn va = vop(vec, vadd, COV_OP_ADD, COV_F32, K, (uint32_t)vw,
                        (npu_mem){(uint8_t)ubuf, 0, yo, OH * OH, 1},
                        (npu_mem){(uint8_t)acc, 0, (uint32_t)(rr * rc->w * 4), 16, 1});
      va.u.vop.src2 = (npu_mem){(uint8_t)ubuf, 0, BB, 1, 0};
      add(p, va);
      npu_insn vr = va;
      vr.u.vop.vop = COV_OP_RELU;
      vr.u.vop.cap = (uint8_t)vrelu;
      vr.u.vop.src1 = va.u.vop.dst;
      memset(&vr.u.vop.src2, 0, sizeof vr.u.vop.src2);
      add(p, vr);
    }
    npu_insn sy = {.op = NPU_OP_DMA, .unit = (uint8_t)ld, .flags = NPU_DMA_STORE};
    sy.u.dma.dtype = COV_F32;
    sy.u.dma.rank = 3;
    sy.u.dma.dram_off = ay;
    sy.u.dma.local_off = (uint32_t)(YB + (rc->r0 * OH + rc->c0) * 4);
    sy.u.dma.dim[0] = dim(K, 0, K, OH * OH, OH * OH);
    sy.u.dma.dim[1] = dim((uint32_t)vh, rc->r0, OH, OH, OH);
    sy.u.dma.dim[2] = dim((uint32_t)vw, rc->c0, OH, 1, 1);
    add(p, sy);
  }
  cov_status vs = cov_npu_program_verify(p, g);
  if (vs) cov_status_print(stderr, vs, 1);
  CHECK(!vs);
  cov_status_free(vs);
  cov_tensor x = {0}, w = {0}, b = {0}, y = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 3, (int64_t[]){C, H, H}));
  CHECK(!cov_tensor_alloc(&w, COV_F32, 4, (int64_t[]){K, C, R, R}));
  CHECK(!cov_tensor_alloc(&b, COV_F32, 1, (int64_t[]){K}));
  float *fx = x.data, *fw = w.data, *fb = b.data;
  for (int i = 0; i < C * H * H; i++) fx[i] = rnd();
  for (int i = 0; i < K * KT; i++) fw[i] = rnd();
  for (int i = 0; i < K; i++) fb[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_npu_stats *st = run(g, p, &sim, (const char *[]){"x", "w", "b"}, (cov_tensor[]){x, w, b}, 3);
  CHECK(!cov_npu_sim_read(sim, "y", &y));
  double worst = 0, top = 0;
  for (int k = 0; k < K && y.data; k++)
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OH; ox++) {
        double s = 0;
        for (int c = 0; c < C; c++)
          for (int r = 0; r < R; r++)
            for (int q = 0; q < R; q++)
              s += (double)fx[(c * H + oy + r) * H + ox + q] * fw[((k * C + c) * R + r) * R + q];
        s += fb[k];
        s = s > 0 ? s : 0;
        worst = fmax(worst, fabs(((float *)y.data)[(k * OH + oy) * OH + ox] - s));
        top = fmax(top, fabs(s));
      }
  uint64_t cyc = st ? cov_npu_stats_cycles(st) : 0;
  printf("  %-50s %5llu cycles, ratio %.3f; max err %.3g of %.3g\n", v->what, (unsigned long long)cyc,
         (double)cyc / SCALESIM_OS, worst, top);
  CHECK(y.data && worst <= 1e-5 * top);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&b);
  cov_tensor_release(&y);
  cov_npu_stats_free(st);
  cov_npu_sim_free(sim);
  npu_prog_free(p);
  return cyc;
}

static void test_plan(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/bench/npu-sim/npu-16x16-os.json", g_src);
  cov_acg *g = load_acg_file(path);
  static const variant vs[] = {{"8 rectangles, loads one channel at a time", true, false},
                               {"8 rectangles, whole loads", false, false},
                               {"9 padded 4x4 blocks, loads one channel at a time", true, true},
                               {"9 padded 4x4 blocks, whole loads", false, true}};
  uint64_t cyc[4];
  printf("convnet_layer2 by hand on npu-16x16-os (SCALE-Sim OS %d cycles):\n", SCALESIM_OS);
  for (int i = 0; i < 4; i++) cyc[i] = run_plan(g, &vs[i]);
  /* the plan meets the 1.15x target; each half of it alone does not */
  CHECK(cyc[0] > 0 && (double)cyc[0] <= 1.15 * SCALESIM_OS);
  CHECK(cyc[1] > cyc[0] && cyc[2] > cyc[0] && cyc[3] > cyc[1] && cyc[3] > cyc[2]);
  cov_acg_free(g);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  (void)load_target; /* npu_test.h's helpers: not needed here */
  (void)dma2;
  test_plan();
  return check_summary();
}

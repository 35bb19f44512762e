/* tests/npu-sim/test_os_stream.c: an output-stationary array streams a 3x3
 * convolution as SCALE-Sim's output-stationary model does
 * (bench/npu-sim/README.md, "SCALE-Sim anchor").
 *
 * resnet50_res4_3x3 (256 -> 256 channels, 3x3, 14x14) on the bench's
 * npu-16x16-os (npu-16x16's array and DRAM, output-stationary):
 * 1. the weights load as one DRAM run per filter (c x r x s = 2304
 *    elements: map_gemm_tile_strides keeps B in the tensor's order for an
 *    output-stationary array and npu_cg_emit_dma merges the dimensions),
 *    where one burst per 3-element filter row made each load 10x slower;
 * 2. the gemms read a row of B (16 filters) from 16 distinct banks (n's
 *    stride padded);
 * 3. the simulated cycles are within 1.15x of SCALE-Sim v2's OS compute
 *    cycles (R + C + K - 2) * ceil(M/R) * ceil(N/C) - 1 for M = 196 pixels,
 *    N = 256 filters, K = 2304: chained gemms leave c alone (the next tile
 *    accumulates while the SIMD unit reads the drained one) and the weight
 *    loads hide behind the array (1.38x before both);
 * 4. the output matches a naive conv loop (bias, relu) on f16-exact inputs.
 * resnet50_res5_1x1, resnet50_conv1 and mobilenetv2_dw3x3 likewise (3. and
 * 4.); res5's gemms stream 14 output rows (two of 7) each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "backends/npu-sim/npu_internal.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "mapper/map_internal.h"
#include "mapper/map_walk.h"
#include "tests/check.h"
#include "tests/npu-sim/npu_test.h"

enum { C = 256, H = 14, W = 14, KO = 256, R = 3 };

static cov_acg *load_bench_os(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/bench/npu-sim/npu-16x16-os.json", g_src);
  return load_acg_file(path);
}

static void check_program(const cov_acg *g, const cov_npu_program *p) {
  uint32_t wloads = 0, merged = 0, gemms = 0, bank_free = 0;
  int ubuf = -1;
  for (int s = 0; s < g->n_storage; s++)
    if (!strcmp(g->storage[s].name, "ubuf")) ubuf = s;
  CHECK(ubuf >= 0);
  for (uint32_t i = 0; i < p->n_insns; i++) {
    const npu_insn *in = &p->insns[i];
    if (in->op == NPU_OP_DMA && !(in->flags & NPU_DMA_STORE) && in->u.dma.rank >= 1 &&
        in->u.dma.dtype == COV_F16 && in->u.dma.dim[0].dram_stride == C * R * R) {
      wloads++;
      const npu_dma_dim *d = &in->u.dma.dim[in->u.dma.rank - 1];
      /* a filter's tile (its c tile x r x s) is one run: whole 3x3 windows of
       * whole channels, contiguous on both sides (the mapper may tile c) */
      merged += in->u.dma.rank == 2 && d->count >= R * R && d->count % (R * R) == 0 && C % (d->count / (R * R)) == 0 &&
                d->dram_stride == 1 && d->local_stride == 1;
    }
    if (in->op == NPU_OP_GEMM) {
      gemms++;
      const npu_mem *b = &in->u.gemm.b;
      bank_free += acg_bank_degree(&g->storage[ubuf], b->off, (int64_t)b->col_stride * 2, in->u.gemm.n) == 1;
    }
  }
  printf("weight loads %u (%u as one run per filter tile), gemms %u (%u reading B from distinct banks)\n",
         wloads, merged, gemms, bank_free);
  CHECK(wloads > 0 && merged == wloads);
  CHECK(gemms > 0 && bank_free == gemms);
}

/* A suite convolution (bias, then relu where `relu`) compiled for g and
 * simulated: its output against a naive loop on the same inputs, and its
 * cycles within 1.15x of SCALE-Sim v2's OS compute cycles on 16x16
 * (M = output pixels, N = filters, K = c x r x s). `check` inspects the
 * program first. */
typedef struct conv_case {
  const char *name;
  int c, h, w, ko, r, stride, pad;
  int relu; /* 0: none, 1: relu, 6: relu6 */
  bool dw;  /* depthwise: filter ko reads channel ko only (weights [ko, 1, r, r]) */
  double limit; /* most simulated / SCALE-Sim cycles (0: 1.15) */
} conv_case;

static void check_conv(const cov_acg *g, const char *suite, const conv_case *k,
                       void (*check)(const cov_acg *, const cov_npu_program *)) {
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  CHECK(!cov_layer_from_suite(suite, k->name, 1, &l));
  CHECK(l && !cov_map(l, g, NULL, &s));
  CHECK(s && !cov_npu_compile(s, &p));
  if (!p) {
    cov_schedule_free(s);
    cov_layer_free(l);
    return;
  }
  if (check) check(g, p);
  int oh = (k->h + 2 * k->pad - k->r) / k->stride + 1, ow = (k->w + 2 * k->pad - k->r) / k->stride + 1;
  cov_tensor x = {0}, w = {0}, b = {0}, y = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 4, (int64_t[]){1, k->c, k->h, k->w}));
  int wc = k->dw ? 1 : k->c; /* channels per filter */
  CHECK(!cov_tensor_alloc(&w, COV_F32, 4, (int64_t[]){k->ko, wc, k->r, k->r}));
  CHECK(!cov_tensor_alloc(&b, COV_F32, 1, (int64_t[]){k->ko}));
  float *fx = x.data, *fw = w.data, *fb = b.data;
  for (int i = 0; i < k->c * k->h * k->w; i++) fx[i] = rnd();
  for (int i = 0; i < k->ko * wc * k->r * k->r; i++) fw[i] = rnd();
  for (int i = 0; i < k->ko; i++) fb[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_npu_stats *st = run(g, p, &sim, (const char *[]){"in0", "in1", "in2"}, (cov_tensor[]){x, w, b}, 3);
  CHECK(!cov_npu_sim_read(sim, "out", &y));
  double worst = 0, top = 0;
  for (int ko = 0; ko < k->ko && y.data; ko++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++) {
        double acc = fb[ko];
        for (int c = k->dw ? ko : 0; c < (k->dw ? ko + 1 : k->c); c++)
          for (int r = 0; r < k->r; r++)
            for (int q = 0; q < k->r; q++) {
              int iy = oy * k->stride + r - k->pad, ix = ox * k->stride + q - k->pad;
              if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w) continue;
              acc += (double)fx[(c * k->h + iy) * k->w + ix] *
                     fw[((ko * wc + (k->dw ? 0 : c)) * k->r + r) * k->r + q];
            }
        if (k->relu) acc = acc > 0 ? acc : 0;
        if (k->relu == 6) acc = acc < 6 ? acc : 6;
        double got = ((float *)y.data)[(ko * oh + oy) * ow + ox];
        worst = fmax(worst, fabs(got - acc));
        top = fmax(top, fabs(acc));
      }
  /* depthwise: bench_npu's figure, the GEMM view of the rewritten problem
   * the mapper runs (map_depthwise.c: Mg = 4 x 56 column blocks, Ng = 144 x
   * 14 banded filters, Kg = 16 x 3), only for mobilenetv2_dw3x3's shape */
  double ss = k->dw ? (16.0 + 16 + 48 - 2) * ceil(224 / 16.0) * ceil(144 * 14 / 16.0) - 1
                    : (16.0 + 16 + k->c * k->r * k->r - 2) * ceil(oh * ow / 16.0) * ceil(k->ko / 16.0) - 1;
  uint64_t cyc = st ? cov_npu_stats_cycles(st) : 0;
  printf("%s on npu-16x16-os: %llu cycles, SCALE-Sim OS %.0f, ratio %.3f; max err %.3g of %.3g\n", k->name,
         (unsigned long long)cyc, ss, (double)cyc / ss, worst, top);
  CHECK(y.data && worst <= 1e-5 * top);
  CHECK(cyc > 0 && (double)cyc <= (k->limit > 0 ? k->limit : 1.15) * ss);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&b);
  cov_tensor_release(&y);
  cov_npu_stats_free(st);
  cov_npu_sim_free(sim);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(l);
}

/* res5's gemms stream 14 rows (p padded 7 -> 8, two rows of 7: map_pad.c
 * stream_pad, map_gemm.c long_stream), not one row of 7 (1.66x before). */
static void check_res5(const cov_acg *g, const cov_npu_program *p) {
  (void)g;
  uint32_t gemms = 0, long_rows = 0;
  for (uint32_t i = 0; i < p->n_insns; i++) {
    const npu_insn *in = &p->insns[i];
    if (in->op != NPU_OP_GEMM) continue;
    gemms++;
    long_rows += in->u.gemm.m == 14;
  }
  printf("resnet50_res5_1x1: %u gemms, %u of 14 rows\n", gemms, long_rows);
  CHECK(gemms > 0 && long_rows == gemms);
}

/* convnet_layer2 (10 -> 10 channels, 5x5, 11x11 outputs): the 121 output
 * pixels in 8 rectangles of at most 16 (map_rect.c: 1 x 11, five 2 x 8,
 * two 5 x 3), each streamed through m digits, where divisor tiling ran 9
 * blocks of 4 x 4 of a 12 x 12 padding. A rectangle's chain is one gemm
 * per channel, its k the 25 filter taps as k digits (map_gemm.c
 * os_k_digits), chained with the same digits. The first gemm waits for
 * channel 0 only: the weights laid out channel-major on chip (map_gemm.c
 * chan_major) and the input's channels on whole 64-byte blocks (map_gemm.c
 * head_block_dim), both load one input channel at a time, interleaved
 * (w[:, 0], x[0], w[:, 1], ...: the order the gemms read them), so that the
 * first gemm starts after 200 cycles of DRAM latency and the first
 * channel's bursts. The first gemm's start is read from the simulator's
 * trace. */
static uint64_t first_gemm_start(const cov_acg *g, const cov_npu_program *p) {
  cov_npu_sim *sim = NULL;
  cov_npu_stats *st = NULL;
  FILE *f = tmpfile();
  CHECK(f != NULL);
  if (!f) return UINT64_MAX;
  cov_status e = cov_npu_sim_create(g, &sim);
  if (!e) e = cov_npu_sim_load(sim, p);
  if (!e) e = cov_npu_sim_run(sim, f, &st);
  CHECK(!e);
  cov_status_free(e);
  cov_npu_stats_free(st);
  cov_npu_sim_free(sim);
  long n = ftell(f);
  char *buf = n > 0 ? malloc((size_t)n + 1) : NULL;
  uint64_t ts = UINT64_MAX;
  if (buf) {
    rewind(f);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    const char *ev = strstr(buf, "\"name\":\"gemm\"");
    const char *t = ev ? strstr(ev, "\"ts\":") : NULL;
    if (t) ts = strtoull(t + 5, NULL, 10);
  }
  free(buf);
  fclose(f);
  return ts;
}

static void check_layer2(const cov_acg *g, const cov_npu_program *p) {
  uint32_t gemms = 0, digits = 0, chained = 0, per_channel = 0, head_loads = 0, first = 0, w_loads = 0;
  uint32_t rects = 0, pixels = 0;
  uint32_t order = 0; /* head loads in pairs x[c], w[:, c] (either first), c = 0, 1, ... */
  for (uint32_t i = 0; i < p->n_insns; i++) {
    const npu_insn *in = &p->insns[i];
    if (in->op == NPU_OP_DMA && !gemms && !(in->flags & NPU_DMA_STORE) && in->u.dma.dtype == COV_F16 &&
        in->u.dma.rank == 3 && in->u.dma.dim[1].dram_stride == 25 && in->u.dma.dim[1].count == 1 &&
        in->u.dma.dim[1].start == (int32_t)w_loads) {
      order += i / 2 == w_loads;
      w_loads++; /* w[:, c] of the first chain, c = 0, 1, ... in order */
    }
    if (in->op == NPU_OP_DMA && !gemms && !(in->flags & NPU_DMA_STORE) && in->u.dma.dtype == COV_F16 &&
        in->u.dma.rank >= 2 && in->u.dma.dim[0].dram_stride == 225 && in->u.dma.dim[0].count == 1 &&
        in->u.dma.dim[0].start == (int32_t)head_loads) {
      order += i / 2 == head_loads;
      head_loads++; /* x[c], c = 0, 1, ... in order */
    }
    if (in->op != NPU_OP_GEMM) continue;
    if (!gemms++) first = i;
    digits += in->u.gemm.m <= 16 && (in->flags & NPU_GEMM_MDIG) && in->u.gemm.m % in->u.gemm.mrad == 0;
    chained += (in->flags & NPU_GEMM_CHAIN) != 0;
    per_channel += in->u.gemm.k == 25 && (in->flags & NPU_GEMM_KDIG) && in->u.gemm.k0 % 25 == 0;
    if (in->u.gemm.k0 == 0) { /* a rectangle's first gemm */
      rects++;
      pixels += in->u.gemm.m;
    }
  }
  uint64_t start = first_gemm_start(g, p);
  printf("convnet_layer2: %u gemms in %u rectangles of %u pixels, %u through m digits, %u chained, "
         "%u of one channel; %u loads of one input channel and %u of its weights before the first "
         "(instruction %u), %u of them in the gemms' order; the first starts at cycle %llu\n",
         gemms, rects, pixels, digits, chained, per_channel, head_loads, w_loads, first, order,
         (unsigned long long)start);
  CHECK(rects == 8 && pixels == 121 && gemms == 80);
  CHECK(digits == gemms && chained * 10 == gemms * 9 && per_channel == gemms);
  CHECK(head_loads == 10 && w_loads == 10 && order == 20);
  CHECK(start <= 225);
}

/* What the mapper decides and charges for convnet_layer2's head (above):
 * B (the weights, [kg][c][r][s]) laid out channel-major, c outermost on
 * whole 64-byte blocks, kg's stride padded for distinct banks; the first
 * gemm waits for a tenth of each operand's first load
 * (map_gemm_first_share, the pieces npu_head.c loads); and the prediction
 * stays within 3% of the simulated cycles (2,494). */
static void check_layer2_model(const cov_acg *g, const char *suite) {
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  CHECK(!cov_layer_from_suite(suite, "convnet_layer2", 1, &l));
  CHECK(l && !cov_map(l, g, NULL, &s));
  if (!s) {
    cov_layer_free(l);
    return;
  }
  const map_schedule *ms = map_schedule_of(s);
  map_gemm_plan gp;
  map_gemm_plan_make(ms, &gp);
  int64_t st[COV_MAX_RANK] = {0};
  int lv = map_walk_deepest(ms, gp.b_op);
  map_gemm_tile_strides(ms, &gp, gp.b_op, lv, st);
  printf("convnet_layer2 weights on chip: strides kg %lld c %lld r %lld s %lld\n", (long long)st[0],
         (long long)st[1], (long long)st[2], (long long)st[3]);
  CHECK(st[3] == 1 && st[2] == 5 && st[0] >= 25 && st[1] >= 10 * st[0] && st[1] * 2 % 64 == 0);
  int heads = 0;
  for (int i = 0; i < ms->n_xfers; i++) {
    const map_xfer *x = &ms->xfers[i];
    if (x->dir != MAP_LOAD || (x->operand != gp.a_op && x->operand != gp.b_op)) continue;
    double sh = map_gemm_first_share(ms, &gp, x);
    printf("  load of operand %d at level %d: the first gemm waits for %.2f of it\n", x->operand, x->level, sh);
    heads += fabs(sh - 0.1) < 1e-9;
  }
  CHECK(heads == 2);
  cov_npu_program *p = NULL;
  CHECK(!cov_npu_compile(s, &p));
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  cov_status e = p ? cov_npu_sim_create(g, &sim) : NULL;
  if (!e && p) e = cov_npu_sim_load(sim, p);
  if (!e && p) e = cov_npu_sim_run(sim, NULL, &stats);
  CHECK(!e && stats);
  cov_status_free(e);
  double sim_c = stats ? (double)cov_npu_stats_cycles(stats) : 0, pred = cov_schedule_cycles(s);
  printf("convnet_layer2 predicted %.0f, simulated %.0f cycles\n", pred, sim_c);
  CHECK(sim_c > 0 && fabs(pred - sim_c) <= 0.03 * sim_c);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(l);
}

/* convnet_layer1 (3x32x32 -> 10 filters 3x3, bias, relu, 2x2 max pool),
 * compiled as `covenant compile` does (the kept schedules re-ranked by
 * simulation): a level-1 tile's epilogue is dealt out between the next
 * tile's accumulator drains (npu_spread.c), where it had held the SIMD unit,
 * and so the array, for 86 cycles a tile (4,007 cycles, 1.23x, before).
 * Checks the program (no two drain groups in a row with all of a tile's
 * epilogue ops between them), the output against a naive conv, bias, relu
 * and pool, and 1.15x of SCALE-Sim's OS cycles (M = 900, N = 10, K = 27). */
static void check_convnet_layer1(const cov_acg *g, const char *suite) {
  enum { CI = 3, HI = 32, KF = 10, OH = 30, PH = 15 };
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *p = NULL;
  CHECK(!cov_layer_from_suite(suite, "convnet_layer1", 1, &l));
  CHECK(l && !cov_map(l, g, NULL, &s));
  CHECK(s && !cov_npu_select_by_simulation(s, g, COV_NPU_SELECT_MAX_OPS, NULL));
  CHECK(s && !cov_npu_compile(s, &p));
  if (!p) {
    cov_schedule_free(s);
    cov_layer_free(l);
    return;
  }
  /* SIMD ops between consecutive drains (vops reading the register file) */
  uint32_t most = 0, run_ops = 0, drains = 0, epi = 0, tiles = 0;
  for (uint32_t i = 0; i < p->n_insns; i++) {
    const npu_insn *in = &p->insns[i];
    tiles += in->op == NPU_OP_DMA && (in->flags & NPU_DMA_STORE);
    if (in->op != NPU_OP_VOP) continue;
    if (g->storage[in->u.vop.src1.buf].kind == ACG_REGFILE) { /* closes an interval */
      drains++;
      if (run_ops > most) most = run_ops;
      run_ops = 0;
    } else {
      epi++;
      run_ops++;
    }
  }
  printf("convnet_layer1: %u tiles, %u drains, %u epilogue ops, at most %u between two drains\n", tiles,
         drains, epi, most);
  CHECK(tiles > 1 && drains > tiles && epi > 0 && most < epi / tiles); /* not a tile's all at once */
  cov_tensor x = {0}, w = {0}, b = {0}, y = {0};
  CHECK(!cov_tensor_alloc(&x, COV_F32, 4, (int64_t[]){1, CI, HI, HI}));
  CHECK(!cov_tensor_alloc(&w, COV_F32, 4, (int64_t[]){KF, CI, 3, 3}));
  CHECK(!cov_tensor_alloc(&b, COV_F32, 1, (int64_t[]){KF}));
  float *fx = x.data, *fw = w.data, *fb = b.data;
  for (int i = 0; i < CI * HI * HI; i++) fx[i] = rnd();
  for (int i = 0; i < KF * CI * 9; i++) fw[i] = rnd();
  for (int i = 0; i < KF; i++) fb[i] = rnd();
  cov_npu_sim *sim = NULL;
  cov_npu_stats *st = run(g, p, &sim, (const char *[]){"in0", "in1", "in2"}, (cov_tensor[]){x, w, b}, 3);
  CHECK(!cov_npu_sim_read(sim, "out", &y));
  double worst = 0, top = 0;
  for (int k = 0; k < KF && y.data; k++)
    for (int py = 0; py < PH; py++)
      for (int px = 0; px < PH; px++) {
        double m = -INFINITY;
        for (int dy = 0; dy < 2; dy++)
          for (int dx = 0; dx < 2; dx++) {
            int oy = 2 * py + dy, ox = 2 * px + dx;
            double acc = fb[k];
            for (int c = 0; c < CI; c++)
              for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++)
                  acc += (double)fx[(c * HI + oy + r) * HI + ox + q] * fw[((k * CI + c) * 3 + r) * 3 + q];
            m = fmax(m, acc > 0 ? acc : 0);
          }
        worst = fmax(worst, fabs(((float *)y.data)[(k * PH + py) * PH + px] - m));
        top = fmax(top, m);
      }
  double ss = (16.0 + 16 + CI * 9 - 2) * ceil(OH * OH / 16.0) * ceil(KF / 16.0) - 1;
  uint64_t cyc = st ? cov_npu_stats_cycles(st) : 0;
  printf("convnet_layer1 on npu-16x16-os: %llu cycles, SCALE-Sim OS %.0f, ratio %.3f; max err %.3g of %.3g\n",
         (unsigned long long)cyc, ss, (double)cyc / ss, worst, top);
  CHECK(y.data && worst <= 1e-5 * top);
  CHECK(cyc > 0 && (double)cyc <= 1.15 * ss);
  cov_tensor_release(&x);
  cov_tensor_release(&w);
  cov_tensor_release(&b);
  cov_tensor_release(&y);
  cov_npu_stats_free(st);
  cov_npu_sim_free(sim);
  cov_npu_program_free(p);
  cov_schedule_free(s);
  cov_layer_free(l);
}

int main(int argc, char **argv) {
  g_src = argc > 1 ? argv[1] : ".";
  (void)load_target; /* npu_test.h's program builders: not needed here */
  (void)add;
  (void)add_tensor;
  (void)dma2;
  char suite[1024];
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", g_src);
  cov_acg *g = load_bench_os();
  /* res4 (1.38x before the merged weight runs and the chained c), res5
   * (1.66x before its long streams), conv1 (1.89x before the search's bound
   * stopped cutting its 16-row streams: map_bound.c) */
  check_conv(g, suite, &(conv_case){"resnet50_res4_3x3", C, H, W, KO, R, 1, 1, 1, false, 0}, check_program);
  check_conv(g, suite, &(conv_case){"resnet50_res5_1x1", 512, 7, 7, 2048, 1, 1, 0, 0, false, 0}, check_res5);
  check_conv(g, suite, &(conv_case){"resnet50_conv1", 3, 224, 224, 64, 7, 2, 3, 1, false, 0}, NULL);
  /* the epilogue on each drained accumulator tile (map_epi_per_subtile),
   * overlapping the array's next one: 1.66x before */
  check_conv(g, suite, &(conv_case){"mobilenetv2_dw3x3", 144, 56, 56, 144, 3, 1, 1, 6, true, 0}, NULL);
  /* 1.49x before (3,346 cycles: 11 tiles of one 11-pixel row), 1.27x
   * before its rectangles and its head loaded channel by channel;
   * SCALE-Sim's 8 folds of 16 pixels, and its count has none of the ~430
   * cycles of DRAM latency, first loads and last epilogue */
  check_conv(g, suite, &(conv_case){"convnet_layer2", 10, 15, 15, 10, 5, 1, 0, 1, false, 0}, check_layer2);
  check_layer2_model(g, suite);
  check_convnet_layer1(g, suite);
  cov_acg_free(g);
  return check_summary();
}

/* mapper/map_gpu_dw.c: the tile of a depthwise convolution on a GPU
 * (map_gpu.h).
 *
 * The GPU backend's depthwise kernel (backends/gpu/gpu_lower_dw.c) gives
 * each thread `pw` consecutive output pixels of one row times 8 channels
 * (16-byte NHWC vectors of 16-bit values); neighbouring threads take
 * neighbouring channel groups, then neighbouring pixel runs, so every load
 * of a warp is contiguous, and the R x S taps' re-reads of the input
 * (R * ((pw - 1) * stride + S) vectors per thread for pw pixels) hit the
 * core's L1, which is the scratchpad's storage (its path to the registers).
 * The mapper, the one planner of the pipeline, picks pw here by a
 * resource model read from the ACG; the lowering only checks and builds it.
 *
 * The model: the time is the slowest of three paths, each bytes over the
 * ACG's bytes per cycle of that path, divided by how full the cores are:
 *   DRAM      the input and output once, the weights and bias;
 *   cache     the input R / stride times (a workgroup spans part of one
 *             output row, so each input row is fetched again for every
 *             output row whose window holds it), the output once;
 *   L1        every tap's vector load, as above (scratchpad -> registers),
 *             at DW_L1_EFF of the path's bytes per cycle;
 *   fill      the threads over DW_WAVES times the threads the cores hold
 *             at once (65536 registers / the thread's estimate, at most
 *             2048, per core), capped at 1: with fewer the memory latency
 *             is not hidden.
 * Larger pw re-reads less (stride 1: 9 loads per pixel at pw 1, 4.5 at pw
 * 4) but needs more registers and leaves fewer threads; pw past the row's
 * width is not offered. Ties keep the smaller pw.
 * DW_L1_EFF and DW_WAVES were fitted to the H100 run of
 * bench/nvptx/results/depthwise-h100.json (mobilenet_v2's 10 depthwise shapes at batch
 * 32, each at pw 1, 2 and 4): the taps' 16-byte loads reach a third of the
 * L1's bytes per cycle, so stride-1 layers are L1-bound and gain from pw 2
 * to 4 (10-25%), and a stride-2 layer's fewer threads need two resident
 * waves, so larger pw loses there. With them the picks are within 6% of
 * the fastest measured pw on 9 of the 10 shapes (13% on 576 channels at
 * 14x14, stride 2, where pw 4 measured fastest and pw 2 slowest); with
 * the ACG's figures alone (pw 1 everywhere) within 28%. */
#include <math.h>

#include "acg/acg_ir.h"
#include "mapper/map_gpu.h"

/* Bytes per cycle of the paths from storage kind `from` to kind `to`,
 * summed (0 when the ACG has none). */
static double path_bw(const cov_acg *a, acg_storage_kind from, acg_storage_kind to) {
  double bw = 0;
  for (int i = 0; i < a->n_edges; i++) {
    const acg_edge *e = &a->edges[i];
    if (!acg_is_storage(a, e->from) || !acg_is_storage(a, e->to)) continue;
    acg_storage_kind f = a->storage[e->from].kind, t = a->storage[e->to].kind;
    if ((f == from && t == to) || (e->bidirectional && f == to && t == from)) bw += e->bandwidth_bytes_per_cycle;
  }
  return bw;
}

static int cores_of(const cov_acg *a) {
  for (int i = 0; i < a->n_storage; i++)
    if (a->storage[i].kind == ACG_SCRATCHPAD) return a->storage[i].instances ? (int)a->storage[i].instances : 1;
  return 1;
}

enum { DW_THREADS = 256, DW_CORE_THREADS = 2048, DW_CORE_REGS = 65536 };
#define DW_L1_EFF (1.0 / 3.0)
#define DW_WAVES 2.0

static double dw_cycles(const cov_acg *a, const map_gpu_dw_problem *p, int pw) {
  double es = p->es, in = (double)(p->n * p->c * p->h * p->w), out = (double)(p->n * p->c * p->oh * p->ow);
  double wb = (double)(p->c * p->r * p->s) * es + 4.0 * (double)p->c;
  double runs = (double)((p->ow + pw - 1) / pw), vec = 16.0 / es;
  double threads = (double)p->n * (double)p->oh * runs * (double)p->c / vec;
  int cols = (pw - 1) * p->stride + p->s;
  /* the thread's registers: 8 accumulators per pixel, one row of input
   * vectors (4 registers each), the taps' weights (8 halves in 4), and the
   * addressing */
  double regs = 8.0 * pw + 4.0 * cols + 4.0 * p->r * p->s + 24.0;
  double resident = fmin(DW_CORE_THREADS, floor(DW_CORE_REGS / regs)) * cores_of(a);
  double fill = fmin(1.0, threads / (resident * DW_WAVES));
  double dram = es * (in + out) + wb, cache = es * (in * p->r / p->stride + out);
  double l1 = threads * 16.0 * (double)(p->r * cols);
  double bw_dram = acg_dram_bandwidth(a), bw_cache = path_bw(a, ACG_CACHE, ACG_REGFILE);
  double bw_l1 = path_bw(a, ACG_SCRATCHPAD, ACG_REGFILE);
  double t = bw_dram > 0 ? dram / bw_dram : 0;
  if (bw_cache > 0) t = fmax(t, cache / bw_cache);
  if (bw_l1 > 0) t = fmax(t, l1 / (bw_l1 * DW_L1_EFF));
  return t / fill;
}

cov_status map_gpu_dw_plan(const cov_acg *acg, const map_gpu_dw_problem *p, const char *where, map_gpu_dw_sched *out,
                           int *n) {
  if (p->n < 1 || p->c < 1 || p->h < 1 || p->w < 1 || p->oh < 1 || p->ow < 1 || p->r < 1 || p->s < 1 || p->stride < 1 ||
      (p->es != 2 && p->es != 4) || p->n >= (1ll << 31) || p->c >= (1ll << 31) || p->h >= (1ll << 31) ||
      p->w >= (1ll << 31) || p->r > 16 || p->s > 16)
    return cov_error(COV_INVALID_ARGUMENT, MAP_LOC(NULL, where),
                     "depthwise conv %lldx%lldx%lldx%lld, filter %dx%d stride %d: sizes from 1 to 2^31-1, filters up to "
                     "16x16 and 2- or 4-byte elements expected",
                     (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w, p->r, p->s, p->stride);
  *n = 0;
  static const int pws[MAP_GPU_DW_MAX] = {1, 2, 4, 8};
  for (int i = 0; i < MAP_GPU_DW_MAX; i++) {
    if (i > 0 && pws[i] > p->ow) break;
    map_gpu_dw_sched c = {pws[i], DW_THREADS, dw_cycles(acg, p, pws[i])};
    /* insertion by cost; a tie (within 0.5%) keeps the smaller pw first */
    int j = *n;
    while (j > 0 && out[j - 1].cycles > c.cycles * 1.005) out[j] = out[j - 1], j--;
    out[j] = c;
    (*n)++;
  }
  return NULL;
}

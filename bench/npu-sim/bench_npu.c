/* bench/npu-sim/bench_npu.c: the NPU simulator against its references, on
 * every layer of the suite and the shipped NPU targets, in one run:
 *
 *  1. cost model vs simulator: the mapper's predicted cycles against the
 *     simulated cycles of the generated program; Spearman rank correlation
 *     and mean absolute percent error, per target and overall;
 *  2. anchor: simulated cycles against SCALE-Sim's analytical runtime for the
 *     same dataflow and array size (README.md gives the formula), as a ratio;
 *  3. cores: npu-4core's speed-ups on 1, 2 and 4 of its cores;
 *  4. speed: simulated MACs per second of wall time, against a plain C
 *     f32 multiply-accumulate loop doing the same MACs in the same run.
 *
 * usage: bench_npu [--scale N] [--suite FILE] [--model FILE.onnx]... [--no-models] [--groups]
 *                  [--max-group-mape PCT] (exit 1 where a shipped systolic NPU's groups
 *                  miss PCT or Spearman 0.95) [--gate-units] (the vector DSP's and the
 *                  matrix engine's groups too)
 * (default scale 1: full size; default models: the real 224x224 exports in
 * build/models when materialized, else the small exports) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/npu-sim/npu_internal.h"
#include "backends/npu-sim/npu_report.h"
#include "covenant/model.h"
#include "covenant/tensor.h"
#include "covenant/mapper.h"
#include "covenant/npu.h"
#include "mapper/map_internal.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Ranks with ties averaged, then Pearson on the ranks. */
static void ranks(const double *x, int n, double *r) {
  for (int i = 0; i < n; i++) {
    int less = 0, eq = 0;
    for (int j = 0; j < n; j++) less += x[j] < x[i], eq += x[j] == x[i];
    r[i] = less + (eq + 1) / 2.0;
  }
}
static double spearman(const double *a, const double *b, int n) {
  double *ra = malloc(sizeof(double) * (size_t)n), *rb = malloc(sizeof(double) * (size_t)n);
  ranks(a, n, ra);
  ranks(b, n, rb);
  double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) ma += ra[i] / n, mb += rb[i] / n;
  for (int i = 0; i < n; i++) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  free(ra);
  free(rb);
  return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
}

/* SCALE-Sim v2's compute cycles (scalesim/compute/systolic_compute_{ws,os}.py:
 * the rows of one fold's demand matrices, summed over folds, minus one) for
 * a layer seen as a GEMM of Mg output pixels x Ng filters x Kg reduction
 * (loops the weight operand does not index, loops it indexes, reduction
 * loops) on an R x C array:
 *   weight-stationary (Sr = Kg, Sc = Ng, T = Mg): each fold loads R weight
 *     rows, streams T inputs, fills R + C - 2:
 *     (2R + C + Mg - 2) * ceil(Kg/R) * ceil(Ng/C) - 1;
 *   output-stationary (Sr = Mg, Sc = Ng, T = Kg): no weight load:
 *     (R + C + Kg - 2) * ceil(Mg/R) * ceil(Ng/C) - 1.
 * No memory stalls, no epilogue (README.md). */
/* Loop l's extent in the layer as given: a loop the mapper padded
 * (mapper/map_pad.c) is read alone, from 0, by an operand's dimension of
 * the layer's size, so that size bounds it (SCALE-Sim sees the layer, not
 * the padded problem: convnet_layer2's 11 x 11 pixels, not 12 x 12). */
static double layer_extent(const map_problem *p, int l) {
  int64_t e = p->extent[l];
  for (int o = 0; o < p->n_operands; o++) {
    const map_operand *op = &p->operands[o];
    for (int d = 0; d < op->acc.rank; d++) {
      if (op->acc.coef[d][l] != 1 || op->acc.off[d] != 0 || op->shape[d] >= e) continue;
      bool alone = true;
      for (int k = 0; k < p->n_loops; k++)
        if (k != l && p->extent[k] > 1 && op->acc.coef[d][k]) alone = false;
      if (alone) e = op->shape[d];
    }
  }
  return (double)e;
}

static void gemm_view(const map_schedule *s, double *Mg, double *Ng, double *Kg) {
  const map_problem *p = &s->prob;
  const map_operand *w = &p->operands[1];
  *Mg = *Ng = *Kg = 1;
  for (int l = 0; l < p->n_loops; l++) {
    bool wdep = false;
    for (int d = 0; d < w->rank; d++) wdep |= w->acc.coef[d][l] != 0;
    if (p->reduction[l]) *Kg *= layer_extent(p, l);
    else if (wdep) *Ng *= layer_extent(p, l);
    else *Mg *= layer_extent(p, l);
  }
}
static double scalesim(const map_schedule *s, bool os, double R, double C) {
  double Mg, Ng, Kg;
  gemm_view(s, &Mg, &Ng, &Kg);
  if (os) return (R + C + Kg - 2) * ceil(Mg / R) * ceil(Ng / C) - 1;
  return (2 * R + C + Mg - 2) * ceil(Kg / R) * ceil(Ng / C) - 1;
}

static double mape(const double *pred, const double *sim, int n) {
  double m = 0;
  for (int i = 0; i < n; i++) m += fabs(pred[i] - sim[i]) / sim[i];
  return n ? 100 * m / n : 0;
}

#define N_TARGETS 8
/* the first four: systolic arrays (SCALE-Sim, the speed line); then the
 * other unit kinds: a vector DSP and a matrix engine, shipped and test ACGs */
#define MAX_ROWS 4096

typedef struct series {
  double pred[MAX_ROWS], sim[MAX_ROWS];
  int n;
} series;

static void add(series *s, double pred, double sim) {
  if (s->n < MAX_ROWS && sim > 0) {
    s->pred[s->n] = pred;
    s->sim[s->n] = sim;
    s->n++;
  }
}

/* The model's first input: FILE_input.npy next to it when present (the
 * exports in tests/ ship one), else deterministic values in [-1, 1). */
static cov_status model_input(const cov_model *m, const char *path, cov_tensor *in) {
  char npy[1024];
  size_t n = strlen(path);
  if (n > 5 && n < sizeof npy - 16 && strcmp(path + n - 5, ".onnx") == 0) {
    snprintf(npy, sizeof npy, "%.*s_input.npy", (int)(n - 5), path);
    FILE *f = fopen(npy, "rb");
    if (f) {
      fclose(f);
      return cov_npy_read(npy, in);
    }
  }
  cov_dtype dt;
  int rank;
  int64_t shape[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(cov_model_input_info(m, 0, &dt, &rank, shape));
  for (int d = 0; d < rank; d++)
    if (shape[d] < 0) shape[d] = 1;
  COV_RETURN_IF_ERROR(cov_tensor_alloc(in, COV_F32, rank, shape));
  float *x = in->data;
  uint64_t s = 88172645463325252ull;
  for (int64_t i = 0; i < cov_tensor_numel(in); i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  return NULL;
}

/* Runs a model on one target: its groups' predicted and simulated cycles
 * into `grp`; prints cycles, MACs and array utilisation. */
static cov_status bench_model(const char *path, const cov_acg *g, const char *tname, series *grp,
                              series *grp_e, bool list_groups) {
  cov_model *m = NULL;
  COV_RETURN_IF_ERROR(cov_model_load_file(path, NULL, &m));
  cov_tensor in = {0};
  cov_status st = model_input(m, path, &in);
  size_t no = cov_model_num_outputs(m);
  cov_tensor outs[8];
  memset(outs, 0, sizeof outs);
  cov_npu_report *rep = NULL;
  if (!st && no > 8) st = cov_error(COV_UNSUPPORTED, NULL, "%s: more than 8 outputs", path);
  if (!st) st = cov_npu_run_model(m, g, &in, 1, outs, no, &rep);
  if (!st) {
    int n = 0, s0 = grp->n, cpu = 0;
    const npu_row *rows = npu_report_rows(rep, &n);
    double macs = 0, cyc = 0;
    for (int i = 0; i < n; i++) {
      if (rows[i].kind == NPU_ROW_CPU) {
        cpu++;
        continue;
      }
      macs += (double)rows[i].macs;
      cyc += (double)rows[i].cycles;
      if (rows[i].predicted > 0) add(grp, rows[i].predicted, (double)rows[i].cycles);
      if (rows[i].energy_est_pj >= 0 && rows[i].energy_pj > 0) add(grp_e, rows[i].energy_est_pj, rows[i].energy_pj);
      if (list_groups && rows[i].predicted > 0)
        printf("    group %-13s %-24.24s %-24.24s %10llu sim %10.0f pred %5.2f pred/sim  energy %10.3f uJ "
               "%5.2f pred/sim  %s\n",
               tname, rows[i].node, rows[i].codelet, (unsigned long long)rows[i].cycles, rows[i].predicted,
               rows[i].predicted / (double)rows[i].cycles, rows[i].energy_pj * 1e-6,
               rows[i].energy_pj > 0 ? rows[i].energy_est_pj / rows[i].energy_pj : 0.0, rows[i].where);
    }
    double peak = 0;
    for (int c = 0; c < g->n_compute; c++)
      if (g->compute[c].kind == ACG_SYSTOLIC)
        for (int k = 0; k < g->compute[c].n_caps; k++)
          if (g->compute[c].caps[k].in[0] == COV_F16 && g->compute[c].caps[k].throughput > peak)
            peak = g->compute[c].caps[k].throughput;
    const char *base = strrchr(path, '/');
    printf("  %-26s %-13s %12.0f cycles %12.0f MACs  array %5.1f%% (f16 peak %.0f MAC/cycle)  "
           "groups %3d  MAPE %5.1f%%  Spearman %.3f  CPU calls %d\n",
           base ? base + 1 : path, tname, cyc, macs, cyc > 0 && peak > 0 ? 100 * macs / (cyc * peak) : 0,
           peak, grp->n - s0, mape(grp->pred + s0, grp->sim + s0, grp->n - s0),
           spearman(grp->pred + s0, grp->sim + s0, grp->n - s0), cpu);
  }
  cov_npu_report_free(rep);
  for (size_t i = 0; i < no && i < 8; i++) cov_tensor_release(&outs[i]);
  cov_tensor_release(&in);
  cov_model_free(m);
  return st;
}

/* Simulated cycles of a suite layer on g (the mapper's best schedule,
 * re-ranked by simulation, as covenant compile); 0 where it fails. */
static double layer_cycles(const char *suite, const char *name, int scale, const cov_acg *g) {
  cov_layer *layer = NULL;
  cov_schedule *sch = NULL;
  cov_npu_program *prog = NULL;
  cov_npu_sim *sm = NULL;
  cov_npu_stats *stats = NULL;
  cov_status st = cov_layer_from_suite(suite, name, scale, &layer);
  if (!st) st = cov_map(layer, g, NULL, &sch);
  if (!st) st = cov_npu_select_by_simulation(sch, g, COV_NPU_SELECT_MAX_OPS, NULL);
  if (!st) st = cov_npu_compile(sch, &prog);
  if (!st) st = cov_npu_sim_create(g, &sm);
  if (!st) st = cov_npu_sim_load(sm, prog);
  if (!st) st = cov_npu_sim_run(sm, NULL, &stats);
  double cyc = st ? 0 : (double)cov_npu_stats_cycles(stats);
  cov_status_free(st);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sm);
  cov_npu_program_free(prog);
  cov_schedule_free(sch);
  cov_layer_free(layer);
  return cyc;
}

/* The speed-ups of npu-4core's cores: each suite layer on the target with
 * 1, 2 and 4 cores (every compute node and on-chip buffer at that many
 * instances, as explore's --vary pe_array.instances derives them). */
static cov_status cores_speedups(const char *suite, char **names, int n, int scale) {
  cov_acg *g = NULL;
  COV_RETURN_IF_ERROR(cov_acg_load_target("npu-4core", &g));
  static const uint32_t cores[3] = {1, 2, 4};
  double cyc[64][3];
  for (int k = 0; k < 3; k++) {
    for (int s = 0; s < g->n_storage; s++)
      if (g->storage[s].kind != ACG_DRAM) g->storage[s].instances = cores[k];
    for (int c = 0; c < g->n_compute; c++) g->compute[c].instances = cores[k];
    for (int i = 0; i < n && i < 64; i++) cyc[i][k] = layer_cycles(suite, names[i], scale, g);
  }
  printf("\nnpu-4core's cores: simulated cycles of each suite layer on 1, 2 and 4 cores (one DRAM):\n");
  printf("%-22s %12s %12s %12s %8s %8s\n", "layer", "1 core", "2 cores", "4 cores", "2/1", "4/1");
  double l2 = 0, l4 = 0;
  int m = 0;
  for (int i = 0; i < n && i < 64; i++) {
    if (cyc[i][0] <= 0 || cyc[i][1] <= 0 || cyc[i][2] <= 0) continue;
    printf("%-22s %12.0f %12.0f %12.0f %8.3f %8.3f\n", names[i], cyc[i][0], cyc[i][1], cyc[i][2],
           cyc[i][1] / cyc[i][0], cyc[i][2] / cyc[i][0]);
    l2 += log(cyc[i][1] / cyc[i][0]);
    l4 += log(cyc[i][2] / cyc[i][0]);
    m++;
  }
  if (m) printf("%-22s %12s %12s %12s %8.3f %8.3f\n", "geomean", "", "", "", exp(l2 / m), exp(l4 / m));
  cov_acg_free(g);
  return NULL;
}

int main(int argc, char **argv) {
  int scale = 1;
  const char *suite = NULL;
  const char *models[16];
  int n_models = 0;
  bool no_models = false, list_groups = false, gate_units = false;
  double max_group_mape = 0; /* > 0: exit 1 if a shipped NPU's groups miss it */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) scale = atoi(argv[++i]);
    else if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc) suite = argv[++i];
    else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc && n_models < 16) models[n_models++] = argv[++i];
    else if (strcmp(argv[i], "--no-models") == 0) no_models = true;
    else if (strcmp(argv[i], "--groups") == 0) list_groups = true;
    else if (strcmp(argv[i], "--gate-units") == 0) gate_units = true;
    else if (strcmp(argv[i], "--max-group-mape") == 0 && i + 1 < argc) max_group_mape = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_npu [--scale N] [--suite FILE] [--model FILE.onnx]... [--no-models] [--groups] [--max-group-mape PCT] [--gate-units]\n");
      return 2;
    }
  }
  if (!suite) suite = cov_suite_default_path();
  if (n_models == 0 && !no_models) {
    /* the real torchvision exports at 224x224 once the models_materialize
     * fixture (or tests/models/materialize.py) has written them, else the
     * small exports shipped with the frontend tests */
    static const char *real[] = {BENCH_REAL_DIR "/squeezenet1_1.onnx",
                                 BENCH_REAL_DIR "/mobilenet_v2.onnx",
                                 BENCH_REAL_DIR "/shufflenet_v2_x1_0.onnx"};
    static const char *def[] = {BENCH_MODELS_DIR "/squeezenet1_1.onnx",
                                BENCH_MODELS_DIR "/mobilenet_v2.onnx",
                                BENCH_MODELS_DIR "/shufflenet_v2_x0_5.onnx"};
    bool have_real = true;
    for (int i = 0; i < 3; i++) {
      FILE *f = fopen(real[i], "rb");
      have_real = have_real && f;
      if (f) fclose(f);
    }
    for (int i = 0; i < 3; i++) models[n_models++] = have_real ? real[i] : def[i];
  }
  char **names = NULL;
  int n_names = 0;
  cov_status st = cov_suite_layer_names(suite, &names, &n_names);
  if (st) {
    cov_status_print(stderr, st, 0);
    return 1;
  }
  /* npu-16x16-os: npu-16x16's array and DRAM, output-stationary (this directory) */
  const char *targets[N_TARGETS] = {"npu-16x16", BENCH_DIR "/npu-16x16-os.json", "npu-32x32-os", "npu-4core",
                                    "dsp-hvx", BENCH_TESTS_DIR "/dsp-f32-512.json", "npu-matrix",
                                    BENCH_TESTS_DIR "/matrix-8x8x8.json"};
  const char *tnames[N_TARGETS] = {"npu-16x16", "npu-16x16-os", "npu-32x32-os", "npu-4core", "dsp-hvx",
                                   "dsp-f32-512", "npu-matrix", "matrix-8x8x8"};
  static series suite_s[N_TARGETS], group_s[N_TARGETS];
  /* the same for energy (pJ: the mapper's map_energy.c, the simulator's npu_energy.c) */
  static series suite_e[N_TARGETS], group_e[N_TARGETS];
  /* per layer: simulated / SCALE-Sim on the two 16x16 arrays (0: none) */
  double ss_ratio[64][2];
  memset(ss_ratio, 0, sizeof ss_ratio);
  double macs_total = 0, wall_total = 0;
  printf("npu-sim bench, suite layers at scale 1/%d\n", scale);
  printf("%-22s %-13s %12s %12s %8s %12s %8s %10s %10s %8s\n", "layer", "target", "simulated", "predicted",
         "pred/sim", "scale-sim", "sim/ss", "MAC/s", "sim uJ", "E p/s");
  for (int t = 0; t < N_TARGETS && !st; t++) {
    cov_acg *g = NULL;
    if ((st = cov_acg_load_target(targets[t], &g))) break;
    npu_target nt;
    npu_target_init(g, &nt);
    for (int i = 0; i < n_names && i < 64; i++) {
      cov_layer *layer = NULL;
      cov_schedule *sch = NULL;
      cov_npu_program *prog = NULL;
      cov_npu_sim *sm = NULL;
      cov_npu_stats *stats = NULL;
      double t0 = 0, t1 = 0;
      st = cov_layer_from_suite(suite, names[i], scale, &layer);
      if (!st) st = cov_map(layer, g, NULL, &sch);
      if (!st) st = cov_npu_select_by_simulation(sch, g, COV_NPU_SELECT_MAX_OPS, NULL);
      if (!st) st = cov_npu_compile(sch, &prog);
      if (!st) st = cov_npu_sim_create(g, &sm);
      if (!st) st = cov_npu_sim_load(sm, prog);
      if (!st) {
        t0 = now();
        st = cov_npu_sim_run(sm, NULL, &stats);
        t1 = now();
      }
      if (st) {
        fprintf(stderr, "%s on %s: ", names[i], tnames[t]);
        cov_status_print(stderr, st, 0);
        cov_status_free(st);
        st = NULL;
      } else {
        double cyc = (double)cov_npu_stats_cycles(stats), pc = cov_schedule_cycles(sch);
        double macs = (double)cov_npu_stats_macs(stats);
        const map_schedule *ms = &sch->s;
        char ss[32] = "-", ratio[32] = "-";
        if (ms->prob.kind == MAP_MAIN_MAC && g->compute[ms->node - g->n_storage].kind == ACG_SYSTOLIC) {
          const acg_capability *cap = &g->compute[ms->node - g->n_storage].caps[ms->cap];
          double v = scalesim(ms, nt.output_stationary, cap->tile[0], cap->tile[1]);
          snprintf(ss, sizeof ss, "%.0f", v);
          snprintf(ratio, sizeof ratio, "%.2f", cyc / v);
          if (t < 2) ss_ratio[i][t] = cyc / v;
        }
        double rate = macs / (t1 - t0 > 1e-9 ? t1 - t0 : 1e-9);
        cov_npu_energy en = cov_npu_stats_energy(stats);
        double pe = cov_schedule_energy_pj(sch);
        printf("%-22s %-13s %12.0f %12.0f %8.2f %12s %8s %10.2e %10.3f %8.2f\n", names[i], tnames[t], cyc, pc,
               pc / cyc, ss, ratio, macs ? rate : 0.0, en.total_pj * 1e-6,
               en.known && pe >= 0 && en.total_pj > 0 ? pe / en.total_pj : 0.0);
        add(&suite_s[t], pc, cyc);
        if (en.known && pe >= 0) add(&suite_e[t], pe, en.total_pj);
        if (macs >= 1e8 && t < 4) {
          macs_total += macs;
          wall_total += t1 - t0;
        }
      }
      cov_npu_stats_free(stats);
      cov_npu_sim_free(sm);
      cov_npu_program_free(prog);
      cov_schedule_free(sch);
      cov_layer_free(layer);
    }
    cov_acg_free(g);
  }
  if (st) {
    cov_status_print(stderr, st, 0);
    return 1;
  }
  printf("\nsimulated / SCALE-Sim v2 compute cycles, 16x16 arrays (weight-stationary: npu-16x16; "
         "output-stationary: npu-16x16-os):\n");
  printf("%-22s %8s %8s\n", "layer", "WS", "OS");
  double worst[2] = {0, 0};
  for (int i = 0; i < n_names && i < 64; i++) {
    if (ss_ratio[i][0] == 0 && ss_ratio[i][1] == 0) continue;
    printf("%-22s %8.2f %8.2f\n", names[i], ss_ratio[i][0], ss_ratio[i][1]);
    for (int k = 0; k < 2; k++)
      if (ss_ratio[i][k] > worst[k]) worst[k] = ss_ratio[i][k];
  }
  printf("%-22s %8.2f %8.2f\n", "worst", worst[0], worst[1]);
  if ((st = cores_speedups(suite, names, n_names, scale))) {
    cov_status_print(stderr, st, 0);
    return 1;
  }
  for (int i = 0; i < n_names; i++) free(names[i]);
  free(names);
  printf("\ncost model vs simulator over the suite layers (predicted vs simulated cycles):\n");
  for (int t = 0; t < N_TARGETS; t++)
    printf("  %-13s layers %3d  Spearman %.3f  MAPE %5.1f%%\n", tnames[t], suite_s[t].n,
           spearman(suite_s[t].pred, suite_s[t].sim, suite_s[t].n),
           mape(suite_s[t].pred, suite_s[t].sim, suite_s[t].n));
  printf("\ncost model vs simulator over the suite layers (predicted vs simulated energy):\n");
  for (int t = 0; t < N_TARGETS; t++)
    printf("  %-13s layers %3d  energy Spearman %.3f  MAPE %5.1f%%\n", tnames[t], suite_e[t].n,
           spearman(suite_e[t].pred, suite_e[t].sim, suite_e[t].n),
           mape(suite_e[t].pred, suite_e[t].sim, suite_e[t].n));
  if (n_models > 0) {
    printf("\nwhole models (covenant run; array utilisation = MACs / (cycles x f16 peak)):\n");
    for (int t = 0; t < N_TARGETS; t++) {
      cov_acg *g = NULL;
      if ((st = cov_acg_load_target(targets[t], &g))) break;
      for (int k = 0; k < n_models; k++) {
        cov_status ms = bench_model(models[k], g, tnames[t], &group_s[t], &group_e[t], list_groups);
        if (ms) {
          fprintf(stderr, "%s on %s: ", models[k], tnames[t]);
          cov_status_print(stderr, ms, 0);
          cov_status_free(ms);
        }
      }
      cov_acg_free(g);
    }
    printf("\ncost model vs simulator over the models' layer groups (each program run):\n");
    bool missed = false;
    for (int t = 0; t < N_TARGETS; t++) {
      double r = spearman(group_s[t].pred, group_s[t].sim, group_s[t].n);
      double e = mape(group_s[t].pred, group_s[t].sim, group_s[t].n);
      printf("  %-13s groups %3d  Spearman %.3f  MAPE %5.1f%%\n", tnames[t], group_s[t].n, r, e);
      /* the cost model's targets, on the shipped systolic NPUs and, with
       * --gate-units, the shipped vector DSP and matrix engine (not the
       * bench's 16x16-os or the test ACGs, which are reported) */
      bool gated = t == 0 || t == 2 || t == 3 || (gate_units && (t == 4 || t == 6));
      if (max_group_mape > 0 && gated && (group_s[t].n == 0 || e > max_group_mape || r < 0.95))
        missed = true;
    }
    printf("\ncost model vs simulator over the models' layer groups (predicted vs simulated energy):\n");
    for (int t = 0; t < N_TARGETS; t++)
      printf("  %-13s groups %3d  energy Spearman %.3f  MAPE %5.1f%%\n", tnames[t], group_e[t].n,
             spearman(group_e[t].pred, group_e[t].sim, group_e[t].n),
             mape(group_e[t].pred, group_e[t].sim, group_e[t].n));
    if (max_group_mape > 0) {
      printf("groups of the shipped NPUs: MAPE <= %.1f%% and Spearman >= 0.95: %s\n", max_group_mape,
             missed ? "MISSED" : "met");
      if (missed) return 1;
    }
  }
  /* Reference for speed: a plain C multiply-accumulate loop over the same
   * number of MACs (16-wide rows, like one array row), timed here. */
  if (wall_total > 0) {
    int64_t reps = (int64_t)(macs_total / 256);
    float acc[16] = {0}, a[16], b[16];
    for (int i = 0; i < 16; i++) a[i] = 1e-7f * (float)i, b[i] = 1.0f - 1e-7f * (float)i;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++)
      for (int k = 0; k < 16; k++)
        for (int j = 0; j < 16; j++) acc[j] += a[k] * b[j];
    double t1 = now();
    float sink = 0;
    for (int j = 0; j < 16; j++) sink += acc[j];
    double cref = (double)reps * 256 / (t1 - t0);
    printf("\nspeed on layers of >= 1e8 MACs: %.2e simulated MACs/s (functional + timing); plain C "
           "MAC loop %.2e MACs/s; ratio %.2f (checksum %g)\n",
           macs_total / wall_total, cref, macs_total / wall_total / cref, (double)sink);
  }
  return 0;
}

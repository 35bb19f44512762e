/* tests/mapper/test_search.c: the exhaustive search (branch and bound,
 * map_bound.c) against a brute-force enumeration that shares none of its
 * pruning: on small layers, every array binding, every ordered split of
 * every loop over the levels, every permutation of every level's loops and
 * both double-buffering settings are built with map_build and costed; the
 * exhaustive search must find exactly the cheapest, and the pruned search
 * must never beat it, and the bound (map_bound_cuts) must cut no partial
 * decision of any built schedule at that schedule's cost. Targets: the two shipped NPUs and a small three-level
 * ACG whose accumulator level can take partial sums back and whose
 * capacities bind the tiling, alone and as an NPU of 2 cores (every
 * output loop spread over them, their loops outermost or below the
 * output loops: the bound must divide a core's transfers among the
 * cores' own DMA engines, and their GEMMs among the cores).
 *
 * usage: test_search TARGET.json... (the small ACG is built in)
 *        test_search --small (the small ACG alone, on smaller layers) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mapper/map_internal.h"
#include "tests/check.h"
#include "tests/mapper/tiny_acg3.h"

/* npu-tiny3 as 2 cores (backends/npu-sim/ISA.md "Cores"), on a DRAM fast
 * enough that splitting a layer pays */
static const char k_acg3_cores[] =
    "{\"acg_version\": 1, \"name\": \"npu-tiny3-2core\", \"clock_mhz\": 1000,"
    " \"backend\": {\"name\": \"npu-sim\"},"
    " \"storage\": [{\"name\": \"dram\", \"kind\": \"dram\", \"capacity\": \"1GiB\","
    "   \"bandwidth_bytes_per_cycle\": 16},"
    "  {\"name\": \"buf\", \"kind\": \"scratchpad\", \"capacity\": \"1KiB\", \"double_buffer\": true,"
    "   \"instances\": 2},"
    "  {\"name\": \"acc\", \"kind\": \"regfile\", \"capacity\": \"128B\", \"double_buffer\": true,"
    "   \"instances\": 2}],"
    " \"compute\": [{\"name\": \"pe\", \"kind\": \"systolic\", \"dims\": [4, 4], \"instances\": 2,"
    "  \"capabilities\": [{\"op\": \"mac\", \"in\": [\"f32\", \"f32\"], \"out\": \"f32\","
    "   \"tile\": [4, 4, 1], \"throughput\": 16, \"latency\": 6}]},"
    "  {\"name\": \"vec\", \"kind\": \"simd\", \"lanes\": 4, \"instances\": 2,"
    "   \"capabilities\": [{\"op\": [\"add\", \"sub\", \"mul\", \"max\", \"relu\", \"copy\", \"mac\","
    "    \"div\", \"exp\", \"erf\", \"tanh\"], \"in\": \"f32\", \"out\": \"f32\", \"throughput\": 4}]}],"
    " \"edges\": [{\"from\": \"dram\", \"to\": \"buf\", \"bandwidth_bytes_per_cycle\": 8,"
    "   \"latency_cycles\": 20, \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"pe\", \"bandwidth_bytes_per_cycle\": 16, \"latency_cycles\": 1},"
    "  {\"from\": \"pe\", \"to\": \"acc\", \"bandwidth_bytes_per_cycle\": 64, \"bidirectional\": true},"
    "  {\"from\": \"acc\", \"to\": \"buf\", \"bandwidth_bytes_per_cycle\": 16, \"latency_cycles\": 2,"
    "   \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"vec\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true}]}";

static const char k_suite[] =
    "{\"layers\": ["
    " {\"name\": \"gemm_tiny\", \"op\": \"gemm\", \"M\": 8, \"N\": 4, \"K\": 6, \"post\": [\"bias\", \"gelu\"]},"
    " {\"name\": \"conv_tiny\", \"op\": \"conv2d\", \"N\": 1, \"C\": 2, \"H\": 4, \"W\": 4, \"K\": 2,"
    "  \"R\": 3, \"S\": 3, \"stride\": 1, \"pad\": 0, \"post\": [\"bias\", \"relu\"]},"
    " {\"name\": \"conv_pool_tiny\", \"op\": \"conv2d\", \"N\": 1, \"C\": 1, \"H\": 5, \"W\": 5, \"K\": 2,"
    "  \"R\": 2, \"S\": 2, \"stride\": 1, \"pad\": 0, \"post\": [\"bias\", \"relu\", \"maxpool2x2\"]},"
    " {\"name\": \"attn_tiny\", \"op\": \"batch_matmul\", \"B\": 2, \"M\": 4, \"N\": 4, \"K\": 4,"
    "  \"post\": [\"softmax\"]},"
    " {\"name\": \"conv_pool_mini\", \"op\": \"conv2d\", \"N\": 1, \"C\": 1, \"H\": 3, \"W\": 3, \"K\": 2,"
    "  \"R\": 2, \"S\": 2, \"stride\": 1, \"pad\": 0, \"post\": [\"bias\", \"relu\", \"maxpool2x2\"]}"
    "]}";


typedef struct brute {
  const map_target *t;
  const map_schedule *proto;
  const map_problem *p;
  int L;
  map_choice ch;
  int64_t rem[MAP_MAX_LOOPS];
  map_schedule s;
  double best;
  int64_t built;
  map_bound bd;
  int64_t inadmissible; /* built schedules the bound would have cut */
} brute;

static bool next_perm(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) t = a[l], a[l] = a[r], a[r] = t;
  return true;
}

static void b_orders(brute *B, int lv) {
  if (lv == B->L) {
    B->built++;
    if (map_build(B->t, B->proto, &B->ch, &B->s, NULL) != 0) return;
    if (B->s.cost.cycles < B->best) B->best = B->s.cost.cycles;
    /* the bound is admissible: no partial decision this schedule completes
     * (its factors of levels >= F, its orders of levels < K) is cut at
     * this schedule's own cost (the search's margin, map_search.c) */
    double lim = B->s.cost.cycles * (1 + 1e-9);
    for (int F = 0; F < B->L; F++)
      for (int K = 0; K <= (F == 0 ? B->L : 0); K++)
        if (map_bound_cuts(&B->bd, &B->ch, F, K, lim)) {
          if (B->inadmissible++ == 0)
            fprintf(stderr, "bound cuts a schedule of %.1f cycles at F=%d K=%d\n", B->s.cost.cycles, F, K);
        }
    return;
  }
  if (lv >= MAP_MAX_LEVELS) return; /* never (L <= MAP_MAX_LEVELS); bounds the recursion for gcc -O3 */
  /* loops of one trip are no scheduled loops (map_ir.h), so only the
   * others are permuted; every permutation of them is tried */
  int act[MAP_MAX_LOOPS], n = 0, rest[MAP_MAX_LOOPS], m = 0;
  for (int l = 0; l < B->p->n_loops; l++) {
    if (B->ch.fac[lv][l] > 1) act[n++] = l;
    else rest[m++] = l;
  }
  do {
    for (int i = 0; i < n; i++) B->ch.order[lv][i] = act[i];
    for (int i = 0; i < m; i++) B->ch.order[lv][n + i] = rest[i];
    b_orders(B, lv + 1);
  } while (next_perm(act, n));
}

static void b_split(brute *B, int l, int lv, int64_t left) {
  if (l == B->p->n_loops) {
    b_orders(B, 0);
    return;
  }
  if (lv == 0) {
    B->ch.fac[0][l] = left;
    b_split(B, l + 1, B->L - 1, l + 1 < B->p->n_loops ? B->rem[l + 1] : 1);
    return;
  }
  for (int64_t d = 1; d <= left; d++)
    if (left % d == 0) {
      B->ch.fac[lv][l] = d;
      b_split(B, l, lv - 1, left / d);
    }
}

/* Every tiling and order of one array binding (loop a on the rows by fa,
 * b on the columns by fb), with loop w (-1: none) spread over fw
 * workgroups, outermost or not. */
static void b_binding(brute *B, int a, int64_t fa, int b, int64_t fb, int w, int64_t fw, bool outer,
                      bool db) {
  const map_problem *p = B->p;
  memset(&B->ch, 0, sizeof B->ch);
  for (int l = 0; l < p->n_loops; l++) {
    B->ch.sp[l] = B->ch.wg[l] = B->ch.wave[l] = 1;
    for (int lv = 0; lv < MAP_MAX_LEVELS; lv++) B->ch.fac[lv][l] = 1;
  }
  B->ch.sp[a] = fa;
  B->ch.sp_axis[a] = MAP_AX_ROWS;
  B->ch.sp[b] = fb;
  B->ch.sp_axis[b] = MAP_AX_COLS;
  if (w >= 0) B->ch.wg[w] = fw;
  B->ch.wg_outer = outer;
  B->ch.dbuf = db;
  map_bound_config(&B->bd, &B->ch);
  for (int l = 0; l < p->n_loops; l++) B->rem[l] = p->extent[l] / (B->ch.sp[l] * B->ch.wg[l]);
  b_split(B, 0, B->L - 1, B->rem[0]);
}

/* The bindings of rows a (by fa) and columns b (by fb): alone, and on an
 * NPU's cores with each output loop spread over each count of them that
 * divides it, in both placements of their loops. */
static void b_spreads(brute *B, int a, int64_t fa, int b, int64_t fb) {
  const map_problem *p = B->p;
  for (int db = 0; db < 2; db++) {
    b_binding(B, a, fa, b, fb, -1, 1, false, db);
    for (int w = 0; w < p->n_loops && B->t->cores; w++) {
      int64_t left = p->extent[w] / (w == b ? fb : 1);
      for (int64_t fw = 2; fw <= B->t->wg_max && !p->reduction[w]; fw++)
        for (int outer = 0; outer < 2 && left % fw == 0; outer++)
          b_binding(B, a, fa, b, fb, w, fw, outer, db);
    }
  }
}

/* The cheapest schedule of every decision, by brute force (array targets). */
static double brute_force(const map_target *t, const map_schedule *proto, int64_t *built) {
  brute *B = calloc(1, sizeof *B);
  if (!B) return -1;
  B->t = t;
  B->proto = proto;
  B->p = &proto->prob;
  B->L = t->n_levels;
  B->best = HUGE_VAL;
  map_bound_init(&B->bd, t, proto);
  const map_problem *p = B->p;
  for (int a = 0; a < p->n_loops; a++) {
    if (!p->reduction[a]) continue;
    for (int b = 0; b < p->n_loops; b++) {
      if (p->reduction[b]) continue;
      for (int64_t fa = 1; fa <= p->extent[a] && (uint64_t)fa <= t->dims[0]; fa++)
        for (int64_t fb = 1; fb <= p->extent[b] && (uint64_t)fb <= t->dims[1]; fb++)
          if (p->extent[a] % fa == 0 && p->extent[b] % fb == 0) b_spreads(B, a, fa, b, fb);
    }
  }
  double best = B->best;
  *built = B->built;
  CHECK(B->inadmissible == 0);
  free(B);
  return best;
}

static void compare(const char *suite, const char *name, const cov_acg *acg) {
  cov_layer *l = NULL;
  cov_status st = cov_layer_from_suite(suite, name, 1, &l);
  map_schedule *proto = calloc(1, sizeof *proto);
  map_target *t = calloc(1, sizeof *t);
  cov_arena *arena = cov_arena_create();
  if (!st) st = map_prepare(l, acg, proto, t, arena);
  cov_schedule *x = NULL, *pr = NULL;
  if (!st) st = cov_map(l, acg, &(cov_map_options){.exhaustive = 1}, &x);
  if (!st) st = cov_map(l, acg, &(cov_map_options){0}, &pr);
  CHECK(st == NULL);
  if (st) {
    fprintf(stderr, "%s on %s: ", name, cov_acg_name(acg));
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
  } else {
    int64_t built = 0;
    double best = brute_force(t, proto, &built);
    /* cov_map keeps the cheapest of every unit's binding (map_units.c):
     * so does the enumeration */
    int units[MAP_MAX_COMPUTE];
    int n_units = map_mac_units(&proto->prob, acg, units, NULL, MAP_MAX_COMPUTE);
    for (int u = 0; u < n_units; u++) {
      if (units[u] == t->node) continue;
      map_schedule *pu = calloc(1, sizeof *pu);
      map_target *tu = calloc(1, sizeof *tu);
      int64_t bu = 0;
      if (pu && tu && !map_prepare_on(l, acg, units[u], pu, tu, arena)) {
        double c = brute_force(tu, pu, &bu);
        built += bu;
        if (c < best) best = c;
      }
      free(pu);
      free(tu);
    }
    double ex = cov_schedule_cycles(x), pc = cov_schedule_cycles(pr);
    printf("%-16s %-14s brute force %10.1f over %8lld schedules; exhaustive %10.1f (%lld "
           "evaluations); pruned %10.1f\n",
           name, cov_acg_name(acg), best, (long long)built, ex, (long long)cov_schedule_evaluations(x),
           pc);
    CHECK(best > 0 && isfinite(best));
    CHECK(ex == best);
    CHECK(pc >= ex);
    /* the shipped NPUs have room to start every on-chip tile (and the second
     * half of a double buffer) on the simulator's 64-byte dependency block */
    if (strncmp(cov_acg_name(acg), "npu-tiny3", 9) != 0)
      for (int o = 0; o < x->s.prob.n_operands; o++)
        for (int lv = 1; lv < x->s.n_levels; lv++) {
          const map_place *pl = &x->s.place[o][lv];
          if (!pl->present) continue;
          CHECK(pl->addr % MAP_PLACE_ALIGN == 0);
          CHECK(!pl->double_buffered || pl->bytes % MAP_PLACE_ALIGN == 0);
        }
  }
  cov_schedule_free(x);
  cov_schedule_free(pr);
  cov_arena_destroy(arena);
  free(proto);
  free(t);
  cov_layer_free(l);
}

int main(int argc, char **argv) {
  char path[] = "/tmp/cov_search_suite_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return check_summary();
  CHECK(write(fd, k_suite, sizeof k_suite - 1) == (ssize_t)(sizeof k_suite - 1));
  close(fd);
  /* --small (the sanitizer build, about 25x slower): the built-in ACG
   * only, and a smaller convolution with pooling in place of the two
   * convolutions, which build 2 of the 2.2 million schedules */
  static const char *const all[] = {"gemm_tiny", "conv_tiny", "conv_pool_tiny", "attn_tiny"};
  static const char *const small[] = {"gemm_tiny", "conv_pool_mini", "attn_tiny"};
  int is_small = argc > 1 && !strcmp(argv[1], "--small");
  const char *const *layers = is_small ? small : all;
  size_t n_layers = is_small ? sizeof small / sizeof *small : sizeof all / sizeof *all;
  for (int i = -1; i <= (is_small ? 0 : argc - 1); i++) {
    cov_acg *acg = NULL;
    cov_status st =
        i == -1  ? cov_acg_load_buffer(k_acg3_cores, strlen(k_acg3_cores), "npu-tiny3-2core.json", &acg)
        : i == 0 ? cov_acg_load_buffer(k_acg3, strlen(k_acg3), "npu-tiny3.json", &acg)
                 : cov_acg_load_target(argv[i], &acg);
    CHECK(st == NULL);
    if (st) {
      cov_status_print(stderr, st, 0);
      cov_status_free(st);
      continue;
    }
    for (size_t k = 0; k < n_layers; k++) compare(path, layers[k], acg);
    cov_acg_free(acg);
  }
  unlink(path);
  return check_summary();
}

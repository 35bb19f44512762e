/* tests/explore/test_explore_unit.c: design derivation (each path kind, the
 * derived-parameter rules, errors for bad specs), suite layer counts against
 * hand-computed figures, the roofline evaluator against the formula worked
 * by hand for a tiny ACG, the simulator evaluator (a backend's, reached
 * through the registry) against the simulator's API called directly, and
 * Pareto fronts on hand-made point sets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "covenant/mapper.h"
#include "covenant/model.h"
#include "covenant/npu.h"
#include "explore/explore.h"
#include "tests/check.h"

static const char *k_acg =
    "{\"acg_version\": 1, \"name\": \"t\", \"clock_mhz\": 500,\n"
    " \"backend\": {\"name\": \"npu-sim\"},\n"
    " \"storage\": [{\"name\": \"d\", \"kind\": \"dram\", \"capacity\": \"1GiB\",\n"
    "               \"bandwidth_bytes_per_cycle\": 32, \"energy_pj_per_byte\": {\"read\": 10, \"write\": 20}},\n"
    "             {\"name\": \"s\", \"kind\": \"scratchpad\", \"capacity\": \"64KiB\", \"area_mm2\": 1.0}],\n"
    " \"compute\": [{\"name\": \"p\", \"kind\": \"systolic\", \"dims\": [8, 4], \"area_mm2\": 2.0,\n"
    "   \"capabilities\": [{\"op\": \"mac\", \"in\": [\"f16\", \"f16\"], \"out\": \"f32\", \"tile\": [8, 4, 1],\n"
    "                      \"throughput\": 32, \"energy_pj_per_op\": 0.5}]},\n"
    "   {\"name\": \"v\", \"kind\": \"simd\", \"lanes\": 8,\n"
    "   \"capabilities\": [{\"op\": [\"add\", \"exp\"], \"in\": \"f32\", \"throughput\": 8},\n"
    "                      {\"op\": \"div\", \"in\": \"f32\", \"throughput\": 2}]}],\n"
    " \"edges\": [{\"from\": \"d\", \"to\": \"s\", \"bandwidth_bytes_per_cycle\": 64},\n"
    "           {\"from\": \"s\", \"to\": \"p\", \"bandwidth_bytes_per_cycle\": 8, \"bidirectional\": true},\n"
    "           {\"from\": \"s\", \"to\": \"v\", \"bandwidth_bytes_per_cycle\": 8, \"bidirectional\": true},\n"
    "           {\"from\": \"s\", \"to\": \"d\", \"bandwidth_bytes_per_cycle\": 8}]}\n";

static json_t *base_doc(void) {
  json_error_t e;
  json_t *d = json_loads(k_acg, 0, &e);
  if (!d) fprintf(stderr, "test ACG: %s\n", e.text);
  return d;
}

/* Parses spec against the base, applies value `which` to a copy, loads it. */
static cov_acg *derive(const char *spec, int which, char *note, size_t note_size) {
  cov_arena *a = cov_arena_create();
  json_t *base = base_doc();
  explore_vary v;
  cov_acg *g = NULL;
  cov_status st = explore_vary_parse(a, spec, base, &v);
  if (!st) {
    json_t *doc = json_deep_copy(base);
    st = explore_vary_apply(&v, which, doc, note, note_size);
    char *text = st ? NULL : json_dumps(doc, 0);
    if (text) st = cov_acg_load_buffer(text, strlen(text), "derived.json", &g);
    free(text);
    json_decref(doc);
  }
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
  }
  explore_vary_release(&v);
  json_decref(base);
  cov_arena_destroy(a);
  return g;
}

/* The first diagnostic of a spec that must be refused. */
static void expect_error(const char *spec, const char *want) {
  cov_arena *a = cov_arena_create();
  json_t *base = base_doc();
  explore_vary v;
  cov_status st = explore_vary_parse(a, spec, base, &v);
  CHECK(st != NULL);
  char buf[512] = "";
  if (st) cov_status_format(st, buf, sizeof buf);
  if (!strstr(buf, want)) {
    check_failed++;
    fprintf(stderr, "spec %s: got '%s', want '%s'\n", spec, buf, want);
  } else {
    check_passed++;
  }
  cov_status_free(st);
  explore_vary_release(&v);
  json_decref(base);
  cov_arena_destroy(a);
}

static void test_paths(void) {
  char note[512];
  /* node.field with the dims rule: tile, throughput and area follow */
  cov_acg *g = derive("p.dims=16x8,4x4", 0, note, sizeof note);
  CHECK(g != NULL);
  if (g) {
    CHECK(g->compute[0].dims[0] == 16 && g->compute[0].dims[1] == 8);
    CHECK(g->compute[0].caps[0].tile[0] == 16 && g->compute[0].caps[0].tile[1] == 8);
    CHECK(g->compute[0].caps[0].tile[2] == 1);
    CHECK(g->compute[0].caps[0].throughput == 128);
    CHECK(fabs(g->compute[0].area_mm2 - 8.0) < 1e-12); /* 2.0 x 128/32 */
    CHECK(fabs(acg_peak_macs_per_cycle(g, COV_F16, COV_F16, COV_F32) - 128) < 1e-12);
    CHECK(strstr(note, "p mac throughput 32->128") != NULL);
    cov_acg_free(g);
  }
  g = derive("p.dims=16x8,4x4", 1, note, sizeof note);
  if (g) {
    CHECK(g->compute[0].caps[0].throughput == 16);
    CHECK(fabs(g->compute[0].area_mm2 - 1.0) < 1e-12);
    cov_acg_free(g);
  }
  /* capacity rescales area */
  g = derive("s.capacity=32KiB,256KiB", 1, note, sizeof note);
  CHECK(g != NULL);
  if (g) {
    CHECK(g->storage[1].capacity_bytes == 256 * 1024);
    CHECK(fabs(g->storage[1].area_mm2 - 4.0) < 1e-12);
    cov_acg_free(g);
  }
  /* a field left at its default in the base can still be swept */
  g = derive("s.banks=4,8", 1, note, sizeof note);
  CHECK(g && g->storage[1].banks == 8);
  cov_acg_free(g);
  /* simd lanes: every throughput scales */
  g = derive("v.lanes=32", 0, note, sizeof note);
  CHECK(g != NULL);
  if (g) {
    CHECK(g->compute[1].dims[0] == 32 && g->compute[1].caps[0].throughput == 32);
    CHECK(g->compute[1].caps[2].throughput == 8); /* div 2 x 32/8 */
    cov_acg_free(g);
  }
  /* edge path */
  g = derive("d->s.bandwidth_bytes_per_cycle=16,128", 0, note, sizeof note);
  CHECK(g != NULL);
  if (g) {
    CHECK(g->edges[0].bandwidth_bytes_per_cycle == 16);
    CHECK(acg_dram_bandwidth(g) == 16); /* 16 < the interface's 32 */
    cov_acg_free(g);
  }
  /* nested field of a node */
  g = derive("d.energy_pj_per_byte.read=3.5", 0, note, sizeof note);
  CHECK(g && g->storage[0].read_pj_per_byte == 3.5);
  cov_acg_free(g);
  /* JSON pointer, with the capacity rule applied as for node.field */
  g = derive("/storage/1/capacity=128KiB", 0, note, sizeof note);
  CHECK(g != NULL);
  if (g) {
    CHECK(g->storage[1].capacity_bytes == 128 * 1024);
    CHECK(fabs(g->storage[1].area_mm2 - 2.0) < 1e-12);
    cov_acg_free(g);
  }
  g = derive("/compute/0/capabilities/0/throughput=7", 0, note, sizeof note);
  CHECK(g && g->compute[0].caps[0].throughput == 7);
  cov_acg_free(g);
  g = derive("acg.clock_mhz=1200", 0, note, sizeof note);
  CHECK(g && g->clock_mhz == 1200);
  cov_acg_free(g);
}

static void test_errors(void) {
  expect_error("q.dims=8x8", "--vary q.dims: the base ACG has no storage or compute node 'q'");
  expect_error("p.dimz=8x8", "--vary p.dimz: 'dimz' is not a field of a compute node");
  expect_error("s.dims=8x8", "--vary s.dims: 'dims' is not a field of a storage node");
  expect_error("d->p.bandwidth_bytes_per_cycle=8",
               "--vary d->p.bandwidth_bytes_per_cycle: the base ACG has no edge from 'd' to 'p'");
  expect_error("d->s.width=8", "'width' is not a field of an edge");
  expect_error("/storage/7/capacity=1KiB", "--vary /storage/7/capacity: JSON pointer");
  expect_error("p.dims=8x8,abc", "--vary p.dims: cannot parse value 'abc'");
  expect_error("s.capacity=32KB", "--vary s.capacity: cannot parse value '32KB'");
  expect_error("p.dims=8x8,8x8", "value '8x8' given twice");
  expect_error("p.dims=", "no values after '='");
  expect_error("pdims8x8", "expected PATH=V1,V2");
  expect_error("p=8", "expected <node>.<field>");
  expect_error("d.energy_pj_per_byte.both=1", "no field 'both'");
}

static void test_suite(void) {
  cov_arena *a = cov_arena_create();
  explore_layers ls = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s/bench/suite/layers.json", COV_TEST_SOURCE_DIR);
  cov_status st = explore_layers_add_suite(a, path, NULL, &ls);
  CHECK(st == NULL && ls.n == 14);
  for (int i = 0; i < ls.n; i++) {
    const explore_layer *l = &ls.items[i];
    /* Hand-computed: ResNet-50 conv1 is 64x112x112 outputs x 3x7x7. */
    if (strcmp(l->name, "resnet50_conv1") == 0) {
      CHECK(l->macs == 118013952.0);
      CHECK(l->in_elems == 3 * 224 * 224 && l->w_elems == 64 * 3 * 49 + 64);
      CHECK(l->out_elems == 64 * 112 * 112);
    }
    if (strcmp(l->name, "mobilenetv2_dw3x3") == 0) CHECK(l->macs == 144.0 * 56 * 56 * 9);
    if (strcmp(l->name, "bert_base_attn_qk") == 0) {
      CHECK(l->macs == 12.0 * 128 * 128 * 64 && l->w_elems == 0);
      CHECK(l->in_elems == 12.0 * (128 * 64 + 64 * 128));
    }
    if (strcmp(l->name, "convnet_layer1") == 0) CHECK(l->out_elems == 10 * 15 * 15);
    if (strcmp(l->name, "resnet50_stem_pool") == 0) CHECK(l->macs == 0 && l->out_elems == 64 * 56 * 56);
  }
  explore_layers two = {0};
  st = explore_layers_add_suite(a, path, "bert_base_qkv,dlrm_mlp_top", &two);
  CHECK(st == NULL && two.n == 2);
  explore_layers three = {0};
  st = explore_layers_add_suite(a, path, "bert_base_qkv,nosuch", &three);
  char buf[256] = "";
  cov_status_format(st, buf, sizeof buf);
  CHECK(strstr(buf, "no layer named 'nosuch'") != NULL);
  cov_status_free(st);
  cov_arena_destroy(a);
}

/* cov_model_group_get_info on the example ConvNet, against the counts of its
 * two layers worked by hand (conv 3->10 3x3 on 32x32 then 2x2 pool; conv
 * 10->10 5x5 on 15x15): intermediate values inside a group are not traffic. */
static void test_model(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/convnet.onnx", COV_TEST_SOURCE_DIR);
  cov_model *m = NULL;
  cov_status st = cov_model_load_file(path, NULL, &m);
  CHECK(st == NULL);
  if (st) {
    cov_status_free(st);
    return;
  }
  cov_model_group_info gi;
  CHECK(cov_model_num_groups(m) == 2);
  CHECK(cov_model_group_get_info(m, 0, &gi) == NULL);
  CHECK(gi.macs == 10 * 30 * 30 * 27 && gi.in_elems == 3 * 32 * 32);
  CHECK(gi.const_elems == 270 + 10 && gi.out_elems == 10 * 15 * 15 && !gi.layout);
  CHECK_STR(gi.kind, "conv+bias+relu+maxpool");
  CHECK(cov_model_group_get_info(m, 1, &gi) == NULL);
  CHECK(gi.macs == 10 * 11 * 11 * 250 && gi.in_elems == 10 * 15 * 15);
  CHECK(gi.const_elems == 2500 + 10 && gi.out_elems == 10 * 11 * 11);
  st = cov_model_group_get_info(m, 2, &gi);
  CHECK(st && cov_status_code(st) == COV_INVALID_ARGUMENT);
  cov_status_free(st);
  cov_model_free(m);

  cov_arena *a = cov_arena_create();
  explore_layers ls = {0};
  CHECK(explore_layers_add_model(a, path, &ls) == NULL && ls.n == 2);
  if (ls.n == 2) CHECK_STR(ls.items[1].name, "convnet#1");
  cov_arena_destroy(a);
}

static void test_roofline(void) {
  cov_acg *g = NULL;
  cov_status st = cov_acg_load_buffer(k_acg, strlen(k_acg), "t.json", &g);
  CHECK(st == NULL);
  if (st) {
    cov_status_free(st);
    return;
  }
  explore_eval_ctx ctx = {COV_F16, COV_F32};
  explore_result r;
  /* Compute-bound: 32 MACs/cycle peak; DRAM 32 B/cycle (interface cap). */
  explore_layer big = {.name = "big", .op = "gemm", .macs = 64.0 * 64 * 64,
                       .in_elems = 64 * 64, .w_elems = 64 * 64, .out_elems = 64 * 64};
  st = explore_roofline.eval(&explore_roofline, g, &big, &ctx, &r);
  CHECK(st == NULL);
  CHECK(r.cycles == 8192);                                /* 262144 / 32 */
  CHECK(fabs(r.utilisation - 1.0) < 1e-12);
  CHECK(r.bytes[0] == 3 * 4096 * 2 && isnan(r.bytes[1])); /* f16 elements */
  /* 8192 B read x 10 pJ + 8192 B written... reads are in+w, writes out */
  CHECK(fabs(r.energy_pj - (16384 * 10.0 + 8192 * 20.0 + 262144 * 0.5)) < 1e-6);
  /* Memory-bound: 1000 MACs, 6000 bytes -> 188 cycles (ceil 187.5). */
  explore_layer small = {.name = "small", .op = "gemm", .macs = 1000,
                         .in_elems = 1000, .w_elems = 1000, .out_elems = 1000};
  st = explore_roofline.eval(&explore_roofline, g, &small, &ctx, &r);
  CHECK(st == NULL && r.cycles == 188);
  CHECK(fabs(r.utilisation - 1000.0 / (188 * 32)) < 1e-12);
  /* No datapath for i8: a located error, not a number. */
  explore_eval_ctx i8 = {COV_I8, COV_I32};
  st = explore_roofline.eval(&explore_roofline, g, &big, &i8, &r);
  CHECK(st != NULL && cov_status_code(st) == COV_MAPPING_FAILED);
  cov_status_free(st);
  CHECK(fabs(explore_area_mm2(g) - 3.0) < 1e-12);
  cov_acg_free(g);

  explore_evaluator ev;
  /* the best available: a backend's simulator (reached through the
   * registry), unless ONNX layers need the roofline */
  CHECK(explore_evaluator_find(NULL, 0, &ev) == NULL && !strcmp(ev.name, "npusim") && ev.simulator);
  CHECK(explore_evaluator_find("mapper", 0, &ev) == NULL && ev.eval == explore_mapper.eval);
  CHECK(explore_evaluator_find(NULL, 1, &ev) == NULL && ev.eval == explore_roofline.eval);
  CHECK(explore_evaluator_find("roofline", 0, &ev) == NULL && ev.eval == explore_roofline.eval);
  st = explore_evaluator_find("mapper", 1, &ev);
  CHECK(st && cov_status_code(st) == COV_UNSUPPORTED);
  cov_status_free(st);
  st = explore_evaluator_find("npusim", 1, &ev);
  CHECK(st && cov_status_code(st) == COV_UNSUPPORTED);
  cov_status_free(st);
  st = explore_evaluator_find("magic", 0, &ev);
  CHECK(st && cov_status_code(st) == COV_INVALID_ARGUMENT);
  cov_status_free(st);
}

/* The npusim evaluator against the map -> compile -> simulate chain run by
 * hand on the simulator's API; a design of a backend it does not simulate
 * is refused, naming the design's backend. */
static void test_simulator(void) {
  char path[4096], suite[4096];
  snprintf(path, sizeof path, "%s/targets/npu-16x16.json", COV_TEST_SOURCE_DIR);
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", COV_TEST_SOURCE_DIR);
  explore_evaluator ev;
  cov_acg *g = NULL;
  cov_layer *layer = NULL;
  cov_schedule *s = NULL;
  cov_npu_program *prog = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  cov_status st = explore_evaluator_find("npusim", 0, &ev);
  if (!st) st = cov_acg_load_file(path, &g);
  if (!st) st = cov_layer_from_suite(suite, "convnet_layer2", 1, &layer);
  if (!st) st = cov_map(layer, g, NULL, &s);
  if (!st) st = cov_npu_select_by_simulation(s, g, COV_NPU_SELECT_MAX_OPS, NULL);
  if (!st) st = cov_npu_compile(s, &prog);
  if (!st) st = cov_npu_sim_create(g, &sim);
  if (!st) st = cov_npu_sim_load(sim, prog);
  if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
  CHECK(st == NULL);
  if (!st) {
    explore_eval_ctx ctx = {COV_F16, COV_F32};
    explore_layer l = {.name = "convnet_layer2", .op = "conv2d", .suite_file = suite, .suite_name = "convnet_layer2"};
    explore_result r;
    st = ev.eval(&ev, g, &l, &ctx, &r);
    CHECK(st == NULL);
    CHECK(r.cycles == (double)cov_npu_stats_cycles(stats) && r.cycles > 0);
    CHECK(r.utilisation == cov_npu_stats_array_utilization(stats));
    for (int i = 0; i < g->n_storage; i++)
      CHECK(r.bytes[i] == (double)cov_npu_stats_storage_bytes(stats, g->storage[i].name));
    cov_npu_energy en = cov_npu_stats_energy(stats);
    CHECK(en.known ? r.energy_pj == en.total_pj : isnan(r.energy_pj));
    /* a GPU design: refused at its backend.name, not half-simulated */
    cov_acg *gpu = NULL;
    snprintf(path, sizeof path, "%s/targets/nvptx-sm90.json", COV_TEST_SOURCE_DIR);
    CHECK(cov_acg_load_file(path, &gpu) == NULL);
    st = gpu ? ev.eval(&ev, gpu, &l, &ctx, &r) : NULL;
    CHECK(st && cov_status_code(st) == COV_UNSUPPORTED && strstr(cov_status_message(st), "backend 'nvptx'"));
    cov_acg_free(gpu);
  }
  cov_status_free(st);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(prog);
  cov_schedule_free(s);
  cov_layer_free(layer);
  cov_acg_free(g);
}

static void test_pareto(void) {
  /* (cycles, area): b dominates c; a and b trade off; d ties a; e has no area. */
  double x[] = {10, 20, 25, 10, 5, 40};
  double y[] = {5, 2, 3, 5, NAN, 1};
  int f[6];
  explore_pareto(x, y, 6, f);
  CHECK(f[0] == 1 && f[1] == 1 && f[2] == 0 && f[3] == 1 && f[4] == 0 && f[5] == 1);
  /* one point dominating all */
  double x2[] = {3, 1, 2}, y2[] = {3, 1, 2};
  int f2[3];
  explore_pareto(x2, y2, 3, f2);
  CHECK(f2[0] == 0 && f2[1] == 1 && f2[2] == 0);
  /* same x, different y: only the lower y */
  double x3[] = {1, 1}, y3[] = {2, 1};
  int f3[2];
  explore_pareto(x3, y3, 2, f3);
  CHECK(f3[0] == 0 && f3[1] == 1);
}

int main(void) {
  test_paths();
  test_errors();
  test_suite();
  test_model();
  test_roofline();
  test_simulator();
  test_pareto();
  return check_summary();
}

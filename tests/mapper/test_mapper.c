/* tests/mapper/test_mapper.c: the mapper against the reference interpreter.
 *
 * For every suite layer (reduced sizes) on every NPU target given on the
 * command line: map it, check every place against its storage capacity,
 * run the schedule through capacity-sized buffers and compare with
 * cov_codelet_run's chain. Then: a corrupted schedule must be caught (the
 * checks can fail), mapping is deterministic, the exhaustive search is never
 * beaten by the pruned one, and mapping errors are precise.
 *
 * Tolerance: inputs are random in [-1, 1), rounded to f16 when the schedule
 * multiplies in f16, so the reference sees the same values; the product of
 * two f16 values is exact in f32, and both sides accumulate in f32, only in a
 * different order. The difference is rounding of sums of at most a few
 * thousand terms, ~sqrt(K) * 2^-24 relative to the largest partial sums:
 * 1e-4 of max |ref| leaves a wide margin while any wrong tile, halo, offset
 * or missing term gives errors of order 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"
#include "tests/check.h"

static float rnd(uint64_t *st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return (float)((double)(*st >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

typedef struct inputs {
  int n;
  cov_tensor t[8];
} inputs;

static void make_inputs(const cov_layer *l, int f16, inputs *in) {
  memset(in, 0, sizeof *in);
  in->n = cov_layer_num_inputs(l);
  uint64_t seed = 12345;
  for (int i = 0; i < in->n; i++) {
    cov_tensor shp;
    cov_status st = cov_layer_input(l, i, &shp);
    if (!st) st = cov_tensor_alloc(&in->t[i], COV_F32, shp.rank, shp.shape);
    CHECK(st == NULL);
    cov_status_free(st);
    float *d = in->t[i].data;
    for (int64_t j = 0; j < cov_tensor_numel(&in->t[i]); j++) {
      float v = rnd(&seed);
      d[j] = f16 ? cov_f16_to_f32(cov_f32_to_f16(v)) : v;
    }
  }
}

static void free_inputs(inputs *in) {
  for (int i = 0; i < in->n; i++) cov_tensor_release(&in->t[i]);
}

/* max |a - b| / max |a|, or -1 when the element counts differ */
static double rel_err(const cov_tensor *ref, const cov_tensor *got) {
  int64_t n = cov_tensor_numel(ref);
  if (n != cov_tensor_numel(got)) return -1;
  double m = 0, r = 0;
  const float *a = ref->data, *b = got->data;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - (double)b[i]);
    if (!(e <= m)) m = e;
    if (fabs(a[i]) > r) r = fabs(a[i]);
  }
  return m / (r > 0 ? r : 1);
}

static int capacities_ok(const map_schedule *s) {
  for (int o = 0; o < s->prob.n_operands; o++)
    for (int lv = 1; lv < s->n_levels; lv++) {
      const map_place *p = &s->place[o][lv];
      if (!p->present) continue;
      if (p->addr + p->bytes * (p->double_buffered ? 2 : 1) > s->acg->storage[p->node].capacity_bytes)
        return 0;
    }
  return 1;
}

/* COV_TEST_SCALE multiplies the reduction (sanitizer builds set 2: the
 * interpreter runs ~10x slower there and CI has a time limit). */
static int scale_factor(void) {
  const char *e = getenv("COV_TEST_SCALE");
  int f = e ? atoi(e) : 1;
  return f >= 1 && f <= 64 ? f : 1;
}

static int scale_for(const char *name) {
  /* sizes the interpreter runs in well under a second each */
  if (strstr(name, "bert") || strstr(name, "dlrm")) return 8 * scale_factor();
  if (strstr(name, "convnet")) return 1;
  return 4 * scale_factor();
}

static void suite_layer(const char *suite, const char *name, const cov_acg *acg) {
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_status st = cov_layer_from_suite(suite, name, scale_for(name), &l);
  if (!st) st = cov_map(l, acg, &(cov_map_options){0}, &s);
  if (st) {
    fprintf(stderr, "%s on %s: ", name, cov_acg_name(acg));
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    CHECK(!"mapping failed");
    cov_layer_free(l);
    return;
  }
  CHECK(capacities_ok(&s->s));
  for (int i = 0; i < s->n_alts; i++) CHECK(capacities_ok(&s->alts[i]));
  inputs in;
  make_inputs(l, cov_schedule_narrowed(s), &in);
  cov_tensor ref = {0}, got = {0};
  st = cov_layer_reference(l, in.t, &ref);
  if (!st) st = cov_schedule_interpret(s, in.t, in.n, &got);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    CHECK(!"interpretation failed");
  } else {
    double e = rel_err(&ref, &got);
    printf("%-22s %-14s %12.0f cycles  max rel err %.2e\n", name, cov_acg_name(acg),
           cov_schedule_cycles(s), e);
    CHECK(e >= 0 && e <= 1e-4);
  }
  /* the alternatives are schedules too: the next best must also be right */
  if (s->n_alts > 0) {
    cov_tensor alt = {0};
    cov_status st2 = map_interp(&s->alts[0], in.t, in.n, &alt);
    CHECK(st2 == NULL);
    cov_status_free(st2);
    if (!st2) CHECK(rel_err(&ref, &alt) >= 0 && rel_err(&ref, &alt) <= 1e-4);
    cov_tensor_release(&alt);
  }
  cov_tensor_release(&ref);
  cov_tensor_release(&got);
  free_inputs(&in);
  cov_schedule_free(s);
  cov_layer_free(l);
}

/* A corrupted schedule must be caught by the verifier or the interpreter. */
static void corrupted(const char *suite, const cov_acg *acg) {
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_status st = cov_layer_from_suite(suite, "convnet_layer2", 1, &l);
  if (!st) st = cov_map(l, acg, &(cov_map_options){0}, &s);
  CHECK(st == NULL);
  if (st) {
    cov_status_free(st);
    cov_layer_free(l);
    return;
  }
  inputs in;
  make_inputs(l, cov_schedule_narrowed(s), &in);
  map_schedule bad;
  /* 1: an input tile one element short in its last dimension */
  bad = s->s;
  bad.place[0][1].shape[3] -= 1;
  cov_tensor out = {0};
  st = map_interp(&bad, in.t, in.n, &out);
  CHECK(st != NULL && strstr(cov_status_message(st), "outside its L1 tile"));
  cov_status_free(st);
  cov_tensor_release(&out);
  /* 2: a trip count that breaks divisor-based tiling (the innermost loop:
   * the outermost may iterate rectangles, map_rect.c) */
  bad = s->s;
  bad.sloops[bad.n_sloops - 1].trips += 1;
  st = map_verify(&bad);
  CHECK(st != NULL && strstr(cov_status_message(st), "divisor"));
  cov_status_free(st);
  /* 2b: rectangles that cover a pixel twice, or miss one */
  if (s->s.n_rects > 1) {
    bad = s->s;
    bad.rects[1].org[0] = bad.rects[0].org[0];
    bad.rects[1].org[1] = bad.rects[0].org[1];
    st = map_verify(&bad);
    CHECK(st != NULL && strstr(cov_status_message(st), "overlap"));
    cov_status_free(st);
    bad = s->s;
    bad.rects[0].ext[1] -= 1;
    st = map_verify(&bad);
    CHECK(st != NULL && strstr(cov_status_message(st), "do not cover"));
    cov_status_free(st);
  }
  /* 3: a tile placed past its storage's capacity */
  bad = s->s;
  bad.place[0][1].addr = acg->storage[bad.place[0][1].node].capacity_bytes - 2;
  st = map_verify(&bad);
  CHECK(st != NULL && strstr(cov_status_message(st), "capacity"));
  cov_status_free(st);
  /* 4: an input loaded once instead of per tile: wrong data, caught */
  bad = s->s;
  int moved = 0;
  for (int i = 0; i < bad.n_xfers; i++)
    if (bad.xfers[i].operand == 0 && bad.xfers[i].after >= 0) bad.xfers[i].after = -1, moved = 1;
  if (moved) {
    st = map_interp(&bad, in.t, in.n, &out);
    int caught = st != NULL;
    if (!st) {
      cov_tensor ref = {0};
      cov_status st2 = cov_layer_reference(l, in.t, &ref);
      caught = !st2 && rel_err(&ref, &out) > 1e-2;
      cov_status_free(st2);
      cov_tensor_release(&ref);
    }
    CHECK(caught);
    cov_status_free(st);
    cov_tensor_release(&out);
  }
  free_inputs(&in);
  cov_schedule_free(s);
  cov_layer_free(l);
}

static char *dump_str(const cov_schedule *s, int explain) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  cov_status st = explain ? cov_schedule_explain(s, f) : cov_schedule_dump(s, f);
  cov_status_free(st);
  fclose(f);
  return buf;
}

static void determinism_and_optimum(const char *suite, const cov_acg *acg) {
  const char *names[] = {"resnet50_res3_1x1", "bert_base_attn_qk", "mobilenetv2_dw3x3"};
  for (int i = 0; i < 3; i++) {
    cov_layer *l = NULL;
    cov_schedule *a = NULL, *b = NULL, *x = NULL;
    cov_status st = cov_layer_from_suite(suite, names[i], 8, &l);
    if (!st) st = cov_map(l, acg, &(cov_map_options){0}, &a);
    if (!st) st = cov_map(l, acg, &(cov_map_options){0}, &b);
    if (!st) st = cov_map(l, acg, &(cov_map_options){.exhaustive = 1}, &x);
    CHECK(st == NULL);
    cov_status_free(st);
    if (a && b && x) {
      char *da = dump_str(a, 1), *db = dump_str(b, 1);
      CHECK(da && db && strcmp(da, db) == 0);
      CHECK(da && strstr(da, "next best alternatives"));
      free(da);
      free(db);
      CHECK(cov_schedule_cycles(x) <= cov_schedule_cycles(a));
      /* a budget bounds the evaluations */
      cov_schedule *c = NULL;
      st = cov_map(l, acg, &(cov_map_options){.budget = 5}, &c);
      CHECK(st == NULL && c && cov_schedule_evaluations(c) <= 5);
      cov_status_free(st);
      cov_schedule_free(c);
    }
    cov_schedule_free(a);
    cov_schedule_free(b);
    cov_schedule_free(x);
    cov_layer_free(l);
  }
}

static const char k_int8_acg[] =
    "{\"acg_version\": 1, \"name\": \"npu-int8\", \"clock_mhz\": 1000,"
    " \"backend\": {\"name\": \"npu-sim\"},"
    " \"storage\": [{\"name\": \"dram\", \"kind\": \"dram\", \"capacity\": \"1GiB\"},"
    "  {\"name\": \"buf\", \"kind\": \"scratchpad\", \"capacity\": \"%s\"}],"
    " \"compute\": [{\"name\": \"pe\", \"kind\": \"systolic\", \"dims\": [8, 8],"
    "  \"capabilities\": [{\"op\": \"mac\", \"in\": [\"i8\", \"i8\"], \"out\": \"i32\","
    "   \"tile\": [8, 8, 1], \"throughput\": 64}]},"
    "  {\"name\": \"vec\", \"kind\": \"simd\", \"lanes\": 8,"
    "   \"capabilities\": [{\"op\": [\"add\", \"relu\", \"max\", \"copy\", \"mac\"], \"in\": \"f32\","
    "    \"out\": \"f32\", \"throughput\": 8}]}],"
    " \"edges\": [{\"from\": \"dram\", \"to\": \"buf\", \"bandwidth_bytes_per_cycle\": 16,"
    "   \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"pe\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"vec\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true}]}";

static void errors(const char *suite) {
  char text[4096];
  cov_acg *acg = NULL;
  snprintf(text, sizeof text, k_int8_acg, "64KiB");
  cov_status st = cov_acg_load_buffer(text, strlen(text), "npu-int8.json", &acg);
  CHECK(st == NULL);
  cov_status_free(st);
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  st = cov_layer_from_suite(suite, "convnet_layer1", 1, &l);
  CHECK(st == NULL);
  cov_status_free(st);
  if (acg && l) {
    /* capability mismatch: f32 conv on an int8 array (the SIMD f32 mac is
     * the fallback, so the message must name what the array offers when
     * no node fits; here the SIMD unit does fit) */
    st = cov_map(l, acg, &(cov_map_options){0}, &s);
    CHECK(st == NULL); /* falls back to the SIMD unit's f32 mac */
    if (s) CHECK(strcmp(acg_node_name(acg, s->s.node), "vec") == 0);
    cov_status_free(st);
    cov_schedule_free(s);
    s = NULL;
  }
  cov_acg_free(acg);
  acg = NULL;
  /* no f32/f16 mac anywhere */
  snprintf(text, sizeof text, k_int8_acg, "64KiB");
  char *p = strstr(text, "\"mac\"]");
  if (p) memcpy(p, "\"add\"]", 6);
  st = cov_acg_load_buffer(text, strlen(text), "npu-int8.json", &acg);
  CHECK(st == NULL);
  cov_status_free(st);
  if (acg && l) {
    st = cov_map(l, acg, &(cov_map_options){0}, &s);
    CHECK(st != NULL && cov_status_code(st) == COV_MAPPING_FAILED);
    const char *m = st ? cov_status_message(st) : "";
    printf("expected error: %s\n", m);
    CHECK(strstr(m, "conv2d needs mac(f32,f32->f32) or a narrower float; npu-int8 offers "
                    "mac(i8,i8->i32) on pe") != NULL);
    cov_status_free(st);
  }
  cov_acg_free(acg);
  acg = NULL;
  /* capacities too small for any tile */
  snprintf(text, sizeof text, k_int8_acg, "16B");
  st = cov_acg_load_buffer(text, strlen(text), "npu-tiny.json", &acg);
  CHECK(st == NULL);
  cov_status_free(st);
  if (acg && l) {
    st = cov_map(l, acg, &(cov_map_options){0}, &s);
    CHECK(st != NULL && cov_status_code(st) == COV_MAPPING_FAILED);
    const char *m = st ? cov_status_message(st) : "";
    printf("expected error: %s\n", m);
    CHECK(strstr(m, "no schedule fits the storage capacities") != NULL);
    cov_status_free(st);
  }
  cov_acg_free(acg);
  cov_layer_free(l);
  /* unknown layer */
  st = cov_layer_from_suite(suite, "resnet51_conv1", 1, &l);
  CHECK(st != NULL && cov_status_code(st) == COV_NOT_FOUND &&
        strstr(cov_status_message(st), "no layer named 'resnet51_conv1'"));
  cov_status_free(st);
  /* unknown codelet */
  int64_t shp[1][COV_MAX_RANK] = {{4}};
  int rk[1] = {1};
  st = cov_layer_from_codelet("nosuch", NULL, 0, (const int64_t(*)[COV_MAX_RANK])shp, rk, 1, &l);
  CHECK(st != NULL && strstr(cov_status_message(st), "no codelet named 'nosuch'"));
  cov_status_free(st);
}

/* The epilogue's temporaries are charged to the storage that holds them
 * (here vmem: the vector unit reads the output buffer but writes only
 * vmem): too small a vmem makes the mapping fail and says why; a small one
 * makes the search choose a smaller output tile, which still computes the
 * right result through the capacity-checked interpreter; a schedule that
 * reserves too little is caught by the verifier. */
static const char k_vmem_acg[] =
    "{\"acg_version\": 1, \"name\": \"npu-vmem\", \"clock_mhz\": 1000,"
    " \"backend\": {\"name\": \"npu-sim\"},"
    " \"storage\": [{\"name\": \"dram\", \"kind\": \"dram\", \"capacity\": \"1GiB\"},"
    "  {\"name\": \"buf\", \"kind\": \"scratchpad\", \"capacity\": \"64KiB\"},"
    "  {\"name\": \"vmem\", \"kind\": \"scratchpad\", \"capacity\": \"%s\"}],"
    " \"compute\": [{\"name\": \"pe\", \"kind\": \"systolic\", \"dims\": [8, 8],"
    "  \"capabilities\": [{\"op\": \"mac\", \"in\": [\"f32\", \"f32\"], \"out\": \"f32\","
    "   \"tile\": [8, 8, 1], \"throughput\": 64}]},"
    "  {\"name\": \"vec\", \"kind\": \"simd\", \"lanes\": 8,"
    "   \"capabilities\": [{\"op\": [\"add\", \"sub\", \"max\", \"min\", \"relu\", \"copy\", \"div\","
    "    \"exp\"], \"in\": \"f32\", \"out\": \"f32\", \"throughput\": 8}]}],"
    " \"edges\": [{\"from\": \"dram\", \"to\": \"buf\", \"bandwidth_bytes_per_cycle\": 16,"
    "   \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"pe\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true},"
    "  {\"from\": \"buf\", \"to\": \"vec\", \"bandwidth_bytes_per_cycle\": 16},"
    "  {\"from\": \"vec\", \"to\": \"vmem\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true},"
    "  {\"from\": \"vmem\", \"to\": \"dram\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true}]}";

static cov_acg *vmem_acg(const char *vmem) {
  char text[4096];
  snprintf(text, sizeof text, k_vmem_acg, vmem);
  cov_acg *acg = NULL;
  cov_status st = cov_acg_load_buffer(text, strlen(text), "npu-vmem.json", &acg);
  CHECK(st == NULL);
  cov_status_free(st);
  return acg;
}

/* Maps a suite layer on acg and checks its result through the interpreter.
 * The layer is returned too: the schedule names point into it. */
static cov_schedule *map_checked(const char *suite, const char *layer, int scale, const cov_acg *acg,
                                 cov_layer **l_out, cov_status *st_out) {
  cov_layer *l = NULL;
  cov_schedule *s = NULL;
  cov_status st = acg ? cov_layer_from_suite(suite, layer, scale, &l)
                      : cov_error(COV_INVALID_ARGUMENT, NULL, "no ACG");
  if (!st) st = cov_map(l, acg, &(cov_map_options){0}, &s);
  if (!st) {
    inputs in;
    make_inputs(l, cov_schedule_narrowed(s), &in);
    cov_tensor ref = {0}, got = {0};
    cov_status st2 = cov_layer_reference(l, in.t, &ref);
    if (!st2) st2 = cov_schedule_interpret(s, in.t, in.n, &got);
    CHECK(st2 == NULL);
    if (!st2) CHECK(rel_err(&ref, &got) >= 0 && rel_err(&ref, &got) <= 1e-4);
    cov_status_free(st2);
    cov_tensor_release(&ref);
    cov_tensor_release(&got);
    free_inputs(&in);
  }
  *l_out = l;
  *st_out = st;
  return s;
}

static void epilogue_capacity(const char *suite) {
  cov_status st;
  cov_acg *tiny = vmem_acg("64B"), *small_acg = vmem_acg("1KiB"), *big_acg = vmem_acg("64KiB");
  /* softmax rows of 16 need 16 values of register 0 plus a row register */
  cov_layer *l0 = NULL, *l1 = NULL, *l2 = NULL;
  cov_schedule *s = map_checked(suite, "bert_base_attn_qk", 8, tiny, &l0, &st);
  CHECK(s == NULL && st != NULL && cov_status_code(st) == COV_MAPPING_FAILED);
  const char *m = st ? cov_status_message(st) : "";
  printf("expected error: %s\n", m);
  CHECK(strstr(m, "the epilogue's temporaries need at least 68 bytes of vmem even for the "
                  "smallest output tile, and vmem holds 64") != NULL);
  cov_status_free(st);
  cov_schedule_free(s);
  /* bias + relu: a small vmem bounds the output tile */
  cov_schedule *big = map_checked(suite, "dlrm_mlp_top", 8, big_acg, &l1, &st);
  CHECK(big != NULL && st == NULL);
  cov_status_free(st);
  cov_schedule *small = map_checked(suite, "dlrm_mlp_top", 8, small_acg, &l2, &st);
  CHECK(small != NULL && st == NULL);
  cov_status_free(st);
  if (big && small) {
    const map_schedule *b = &big->s, *sm = &small->s;
    int o = sm->prob.output;
    printf("output tile with 64 KiB of vmem: %lld elements (%llu B of temporaries); with 1 KiB: "
           "%lld (%llu B)\n",
           (long long)b->place[o][1].elems, (unsigned long long)b->epi_bytes,
           (long long)sm->place[o][1].elems, (unsigned long long)sm->epi_bytes);
    CHECK(sm->place[o][1].elems < b->place[o][1].elems);
    CHECK(sm->epi_bytes > 0 && sm->epi_addr + sm->epi_bytes <= 1024);
    CHECK(strcmp(sm->acg->storage[sm->epi_node].name, "vmem") == 0 && !sm->epi_in_place);
    /* a schedule reserving too little, or past the capacity, is rejected */
    map_schedule bad = *sm;
    bad.epi_bytes -= 4;
    cov_status vs = map_verify(&bad);
    CHECK(vs != NULL && strstr(cov_status_message(vs), "the epilogue's temporaries need"));
    cov_status_free(vs);
    bad = *sm;
    bad.epi_addr = 1024 - bad.epi_bytes / 2;
    vs = map_verify(&bad);
    CHECK(vs != NULL && strstr(cov_status_message(vs), "capacity"));
    cov_status_free(vs);
  }
  cov_schedule_free(big);
  cov_schedule_free(small);
  cov_layer_free(l0);
  cov_layer_free(l1);
  cov_layer_free(l2);
  cov_acg_free(tiny);
  cov_acg_free(small_acg);
  cov_acg_free(big_acg);
}

/* A codelet given by name and shapes: matmul and a standalone softmax. */
static void from_codelet(const cov_acg *acg) {
  int64_t shapes[2][COV_MAX_RANK] = {{24, 40}, {40, 20}};
  int ranks[2] = {2, 2};
  const char *names[2] = {"matmul", "softmax"};
  for (int k = 0; k < 2; k++) {
    cov_layer *l = NULL;
    cov_schedule *s = NULL;
    cov_status st = cov_layer_from_codelet(names[k], NULL, 0, (const int64_t(*)[COV_MAX_RANK])shapes,
                                           ranks, k == 0 ? 2 : 1, &l);
    if (!st) st = cov_map(l, acg, &(cov_map_options){0}, &s);
    CHECK(st == NULL);
    if (st) cov_status_print(stderr, st, 0);
    cov_status_free(st);
    if (s) {
      inputs in;
      make_inputs(l, cov_schedule_narrowed(s), &in);
      cov_tensor ref = {0}, got = {0};
      st = cov_layer_reference(l, in.t, &ref);
      if (!st) st = cov_schedule_interpret(s, in.t, in.n, &got);
      CHECK(st == NULL);
      cov_status_free(st);
      double e = rel_err(&ref, &got);
      printf("codelet %-8s %-14s max rel err %.2e\n", names[k], cov_acg_name(acg), e);
      CHECK(e >= 0 && e <= 1e-4);
      cov_tensor_release(&ref);
      cov_tensor_release(&got);
      free_inputs(&in);
    }
    cov_schedule_free(s);
    cov_layer_free(l);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_mapper SUITE TARGET...\n");
    return 2;
  }
  const char *suite = argv[1];
  char **names;
  int n;
  cov_status st = cov_suite_layer_names(suite, &names, &n);
  if (st) {
    cov_status_print(stderr, st, 0);
    return 1;
  }
  for (int t = 2; t < argc; t++) {
    cov_acg *acg = NULL;
    st = cov_acg_load_target(argv[t], &acg);
    CHECK(st == NULL);
    if (st) {
      cov_status_print(stderr, st, 0);
      cov_status_free(st);
      continue;
    }
    for (int i = 0; i < n; i++) suite_layer(suite, names[i], acg);
    corrupted(suite, acg);
    determinism_and_optimum(suite, acg);
    from_codelet(acg);
    cov_acg_free(acg);
  }
  errors(suite);
  epilogue_capacity(suite);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  return check_summary();
}

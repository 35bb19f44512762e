/* fuzz/explore_fuzz.c: a --vary spec (the input, up to the first newline)
 * must be refused with a message or give designs that the ACG loader accepts
 * or rejects, without crashing, leaking or tripping a sanitizer; the
 * roofline evaluator must then run on every design that loads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "explore/explore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *k_base =
    "{\"acg_version\": 1, \"name\": \"f\", \"clock_mhz\": 500, \"backend\": {\"name\": \"npu-sim\"},"
    " \"storage\": [{\"name\": \"d\", \"kind\": \"dram\", \"capacity\": \"1GiB\", \"bandwidth_bytes_per_cycle\": 32,"
    "   \"energy_pj_per_byte\": {\"read\": 10, \"write\": 20}},"
    "  {\"name\": \"s\", \"kind\": \"scratchpad\", \"capacity\": \"64KiB\", \"area_mm2\": 1.0}],"
    " \"compute\": [{\"name\": \"p\", \"kind\": \"systolic\", \"dims\": [8, 4], \"area_mm2\": 2.0,"
    "   \"capabilities\": [{\"op\": \"mac\", \"in\": [\"f16\", \"f16\"], \"out\": \"f32\", \"tile\": [8, 4, 1]}]},"
    "  {\"name\": \"v\", \"kind\": \"simd\", \"lanes\": 8, \"capabilities\": [{\"op\": \"add\", \"in\": \"f32\"}]}],"
    " \"edges\": [{\"from\": \"d\", \"to\": \"s\", \"bandwidth_bytes_per_cycle\": 64},"
    "  {\"from\": \"s\", \"to\": \"p\", \"bandwidth_bytes_per_cycle\": 8, \"bidirectional\": true},"
    "  {\"from\": \"s\", \"to\": \"v\", \"bandwidth_bytes_per_cycle\": 8, \"bidirectional\": true},"
    "  {\"from\": \"s\", \"to\": \"d\", \"bandwidth_bytes_per_cycle\": 8}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *spec = malloc(size + 1);
  if (!spec) return 0;
  memcpy(spec, data, size);
  spec[size] = 0;
  char *nl = strchr(spec, '\n');
  if (nl) *nl = 0;
  json_t *base = json_loads(k_base, 0, NULL);
  cov_arena *a = cov_arena_create();
  explore_vary v = {0};
  cov_status st = base && a ? explore_vary_parse(a, spec, base, &v) : NULL;
  if (!st && base && a) {
    for (int i = 0; i < v.n_values; i++) {
      json_t *doc = json_deep_copy(base);
      char note[512];
      cov_status as = explore_vary_apply(&v, i, doc, note, sizeof note);
      char *text = as ? NULL : json_dumps(doc, 0);
      cov_acg *g = NULL;
      cov_status ls = text ? cov_acg_load_buffer(text, strlen(text), "design.json", &g) : NULL;
      if (ls) {
        char buf[256];
        cov_status_format(ls, buf, sizeof buf); /* the located message must format */
        cov_status_free(ls);
      } else if (g) {
        explore_layer l = {.name = "l", .op = "gemm", .macs = 1e6, .in_elems = 1e3,
                           .w_elems = 1e3, .out_elems = 1e3};
        explore_eval_ctx ctx = {COV_F16, COV_F32};
        explore_result r;
        cov_status_free(explore_roofline.eval(&explore_roofline, g, &l, &ctx, &r));
        cov_acg_free(g);
      }
      free(text);
      cov_status_free(as);
      json_decref(doc);
    }
  }
  cov_status_free(st);
  explore_vary_release(&v);
  cov_arena_destroy(a);
  json_decref(base);
  free(spec);
  return 0;
}

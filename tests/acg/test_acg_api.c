/* tests/acg/test_acg_api.c: the ACG C API: loading from memory and by name,
 * sizes, derived figures, error chains. */
#include <stdlib.h>

#include "acg/acg_ir.h"
#include "tests/check.h"

static const char *k_tiny =
    "{\"acg_version\": 1, \"name\": \"t\", \"clock_mhz\": 500,\n"
    " \"backend\": {\"name\": \"npu-sim\"},\n"
    " \"storage\": [{\"name\": \"d\", \"kind\": \"dram\", \"capacity\": \"1GiB\",\n"
    "               \"bandwidth_bytes_per_cycle\": 24},\n"
    "             {\"name\": \"s\", \"kind\": \"scratchpad\", \"capacity\": 4096, \"instances\": 2}],\n"
    " \"compute\": [{\"name\": \"p\", \"kind\": \"systolic\", \"dims\": [8, 4], \"instances\": 2,\n"
    "   \"capabilities\": [{\"op\": \"mac\", \"in\": [\"i8\", \"i8\"], \"out\": \"i32\"}]},\n"
    "   {\"name\": \"v\", \"kind\": \"simd\", \"lanes\": 8,\n"
    "   \"capabilities\": [{\"op\": [\"add\", \"exp\"], \"in\": \"f32\"}]}],\n"
    " \"edges\": [{\"from\": \"d\", \"to\": \"s\", \"bandwidth_bytes_per_cycle\": 16},\n"
    "           {\"from\": \"d\", \"to\": \"v\", \"bandwidth_bytes_per_cycle\": 16, \"bidirectional\": true},\n"
    "           {\"from\": \"s\", \"to\": \"p\", \"bandwidth_bytes_per_cycle\": 8, \"bidirectional\": true},\n"
    "           {\"from\": \"s\", \"to\": \"d\", \"bandwidth_bytes_per_cycle\": 8}]}\n";

static void test_sizes(void) {
  uint64_t v = 0;
  CHECK(acg_parse_size("64KiB", &v) == 0 && v == 65536);
  CHECK(acg_parse_size("512B", &v) == 0 && v == 512);
  CHECK(acg_parse_size("1024", &v) == 0 && v == 1024);
  CHECK(acg_parse_size("16777215TiB", &v) == 0 && v == (uint64_t)16777215 << 40);
  CHECK(acg_parse_size("16777216TiB", &v) == -2);
  CHECK(acg_parse_size("99999999999999999999", &v) == -2);
  CHECK(acg_parse_size("64KB", &v) == -1);
  CHECK(acg_parse_size("KiB", &v) == -1);
  CHECK(acg_parse_size("", &v) == -1);
  char buf[32];
  acg_format_size(65536, buf, sizeof buf);
  CHECK_STR(buf, "64KiB");
  acg_format_size(1536, buf, sizeof buf);
  CHECK_STR(buf, "1536B");
  acg_format_size((uint64_t)3 << 30, buf, sizeof buf);
  CHECK_STR(buf, "3GiB");
}

static void test_load(void) {
  cov_acg *g = NULL;
  cov_status st = cov_acg_load_buffer(k_tiny, strlen(k_tiny), "tiny.json", &g);
  CHECK(st == NULL);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    return;
  }
  CHECK_STR(cov_acg_name(g), "t");
  CHECK(g->n_storage == 2 && g->n_compute == 2 && g->n_edges == 4);
  CHECK(g->storage[1].capacity_bytes == 4096 && g->storage[1].instances == 2);
  /* defaults */
  CHECK(g->storage[1].banks == 1 && g->storage[1].width_bits == 64 && !g->storage[1].double_buffer);
  CHECK(g->compute[0].caps[0].throughput == 32);                    /* 8x4 PEs */
  /* a systolic mac's tile: the whole array, one reduction step per issue */
  CHECK(g->compute[0].caps[0].tile_rank == 3 && g->compute[0].caps[0].tile[0] == 8 &&
        g->compute[0].caps[0].tile[1] == 4 && g->compute[0].caps[0].tile[2] == 1);
  CHECK(g->compute[1].n_caps == 2 && g->compute[1].caps[1].op == COV_OP_EXP);
  CHECK(g->compute[1].caps[1].out == COV_F32 && g->compute[1].caps[1].throughput == 8);
  /* 32 B/cycle of paths out of d, capped by its 24 B/cycle interface */
  CHECK(acg_dram_bandwidth(g) == 24);
  int level[8];
  acg_levels_from_dram(g, level);
  CHECK(level[0] == 0 && level[1] == 1 && level[2] == 2 && level[3] == 1);
  CHECK(acg_find_node(g, "v") == 3 && acg_find_node(g, "nope") == -1);
  cov_acg_free(g);
}

static void test_errors(void) {
  cov_acg *g = (cov_acg *)1;
  const char *bad = "{\"acg_version\": 1, \"name\": \"x\", \"clock_mhz\": 0, \"colour\": 1}";
  cov_status st = cov_acg_load_buffer(bad, strlen(bad), "bad.json", &g);
  CHECK(g == NULL);
  CHECK(cov_status_code(st) == COV_INVALID_INPUT);
  /* unknown field, zero clock, and four missing members: all reported */
  CHECK(cov_status_count(st) == 6);
  int saw_clock = 0;
  for (cov_status s = st; s; s = cov_status_next(s))
    if (cov_status_loc(s).path && strcmp(cov_status_loc(s).path, "$.clock_mhz") == 0)
      saw_clock = cov_status_loc(s).line == 1 && cov_status_loc(s).col == 46;
  CHECK(saw_clock);
  cov_status_free(st);

  st = cov_acg_load_buffer("{", 1, "trunc.json", &g);
  CHECK(cov_status_code(st) == COV_PARSE_ERROR);
  CHECK(cov_status_loc(st).line == 1);
  cov_status_free(st);

  st = cov_acg_load_target("no-such-target", &g);
  CHECK(cov_status_code(st) == COV_NOT_FOUND);
  cov_status_free(st);
  st = cov_acg_load_target("../etc/passwd", &g); /* a path: looked up as given */
  CHECK(cov_status_code(st) == COV_NOT_FOUND);
  cov_status_free(st);
  st = cov_acg_load_target("bad name!", &g);
  CHECK(cov_status_code(st) == COV_INVALID_ARGUMENT);
  cov_status_free(st);
}

static void test_shipped(const char *src) {
  (void)src;
  cov_acg *g = NULL;
  cov_status st = cov_acg_load_target("npu-16x16", &g);
  CHECK(st == NULL);
  cov_status_free(st);
  if (!g) return;
  CHECK(g->clock_mhz == 1000 && strcmp(g->backend.name, "npu-sim") == 0);
  int pe = acg_find_node(g, "pe_array");
  CHECK(pe >= g->n_storage);
  if (pe >= g->n_storage) {
    const acg_compute *c = &g->compute[pe - g->n_storage];
    CHECK(c->dims[0] == 16 && c->dims[1] == 16);
    CHECK(c->caps[0].op == COV_OP_MAC && c->caps[0].in[0] == COV_F16 && c->caps[0].out == COV_F32);
  }
  cov_acg_free(g);
}

int main(int argc, char **argv) {
  test_sizes();
  test_load();
  test_errors();
  test_shipped(argc > 1 ? argv[1] : ".");
  return check_summary();
}

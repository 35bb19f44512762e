/* tests/mapper/test_steps.c: the mapper's steps one at a time, each
 * printed as IR (mapper/map_dump.c) and compared with the text checked in
 * under tests/mapper/steps/<target>.<layer>.txt:
 *   extract   map_extract: the main loop nest, its operands and accesses
 *   epilogue  map_lower_epilogue: the post ops as vector ops
 *   bind      map_bind_target, map_bind_epilogue(_storage): the compute
 *             node and capability, each operand's storage per level, the
 *             epilogue's units and storage
 *   build     map_build of one fixed choice (every loop's trips inside one
 *             tile of the level above the array's, the array's rows and
 *             columns over the first reduction and the innermost output
 *             loop as far as they divide, single buffers): places,
 *             transfers, the nest and its cost
 *   verify    map_verify of that schedule, and of a copy with its last
 *             on-chip place moved past its storage's capacity (refused)
 *   search    map_search: the best schedule and its cost
 * on small layers (a GEMM with bias and GELU, a convolution with bias,
 * ReLU and max pooling, a batched matmul with softmax) on a built-in
 * three-level ACG and the shipped npu-16x16. A change to any step's result
 * shows as a difference in that step's lines.
 *
 * usage: test_steps EXPECTED_DIR [--update]  (--update rewrites the files
 * from this build's output; review the diff before committing it) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mapper/map_internal.h"
#include "tests/check.h"
#include "tests/mapper/tiny_acg3.h"

static const char k_suite[] =
    "{\"layers\": ["
    " {\"name\": \"gemm_tiny\", \"op\": \"gemm\", \"M\": 8, \"N\": 4, \"K\": 6, \"post\": [\"bias\", \"gelu\"]},"
    " {\"name\": \"conv_pool_tiny\", \"op\": \"conv2d\", \"N\": 1, \"C\": 3, \"H\": 6, \"W\": 6, \"K\": 4,"
    "  \"R\": 3, \"S\": 3, \"stride\": 1, \"pad\": 1, \"post\": [\"bias\", \"relu\", \"maxpool2x2\"]},"
    " {\"name\": \"attn_tiny\", \"op\": \"batch_matmul\", \"B\": 2, \"M\": 4, \"N\": 8, \"K\": 4,"
    "  \"post\": [\"softmax\"]}"
    "]}";


static void print_status(FILE *out, const char *step, cov_status st) {
  fprintf(out, "%s: ", step);
  cov_status_print(out, st, 0);
  cov_status_free(st);
}

static void print_target(FILE *out, const map_target *t, const map_problem *p) {
  const cov_acg *g = t->acg;
  fprintf(out, "  target %s cap %d mul %s acc %s levels %d dims %llux%llu%s\n", acg_node_name(g, t->node),
          t->cap, cov_dtype_name(t->mul_dtype), cov_dtype_name(t->acc_dtype), t->n_levels,
          (unsigned long long)t->dims[0], (unsigned long long)t->dims[1], t->tiles ? " tiles" : "");
  for (int o = 0; o < p->n_operands; o++) {
    fprintf(out, "  path %s:", p->operands[o].name);
    for (int lv = 0; lv < t->n_levels; lv++)
      fprintf(out, " %s", t->path[o][lv] >= 0 ? g->storage[t->path[o][lv]].name : "-");
    fputc('\n', out);
  }
  fprintf(out, "  epilogue storage %s%s\n", t->epi_node >= 0 ? g->storage[t->epi_node].name : "-",
          t->epi_in_place ? " (register 0 in place)" : "");
}

/* Every loop's trips at level L - 2 (one tile of the level above the
 * array's), the array's rows over the first reduction loop and its columns
 * over the innermost output loop, as far as they divide. */
static void fixed_choice(const map_target *t, const map_problem *p, map_choice *ch) {
  memset(ch, 0, sizeof *ch);
  int rows = -1, cols = -1;
  for (int l = 0; l < p->n_loops; l++) {
    if (p->reduction[l] && rows < 0) rows = l;
    else if (!p->reduction[l]) cols = l; /* the innermost output loop */
  }
  for (int l = 0; l < p->n_loops; l++) {
    int64_t sp = 1;
    map_axis ax = MAP_AX_NONE;
    uint64_t lim = l == rows ? t->dims[0] : l == cols ? t->dims[1] : 1;
    for (int64_t d = (int64_t)lim; d > 1 && sp == 1; d--)
      if (p->extent[l] % d == 0) sp = d;
    if (sp > 1) ax = l == rows ? MAP_AX_ROWS : MAP_AX_COLS;
    ch->sp[l] = sp;
    ch->sp_axis[l] = ax;
    for (int lv = 0; lv < MAP_MAX_LEVELS; lv++) ch->fac[lv][l] = 1;
    ch->fac[t->n_levels >= 2 ? t->n_levels - 2 : 0][l] = p->extent[l] / sp;
    ch->wg[l] = ch->wave[l] = 1;
  }
  for (int lv = 0; lv < MAP_MAX_LEVELS; lv++)
    for (int l = 0; l < p->n_loops; l++) ch->order[lv][l] = l;
  ch->dbuf = false;
}

/* build and verify of the fixed choice */
static void build_verify(FILE *out, const map_target *t, const map_schedule *proto) {
  map_choice ch;
  fixed_choice(t, &proto->prob, &ch);
  map_schedule *s = calloc(2, sizeof *s);
  if (!s) {
    CHECK(!"out of memory");
    return;
  }
  const char *why = NULL;
  fputs("== build\n", out);
  if (map_build(t, proto, &ch, &s[0], &why) != 0) {
    fprintf(out, "build: refused: %s\n", why ? why : "?");
    free(s);
    return;
  }
  map_dump(&s[0], out);
  map_dump_cost(&s[0], out);
  fputs("== verify\n", out);
  cov_status st = map_verify(&s[0]);
  if (st) print_status(out, "verify", st);
  else fputs("verify: ok\n", out);
  /* the last on-chip place moved past its storage's end: refused */
  s[1] = s[0];
  map_place *last = NULL;
  for (int o = 0; o < s[1].prob.n_operands; o++)
    for (int lv = 1; lv < s[1].n_levels; lv++)
      if (s[1].place[o][lv].present) last = &s[1].place[o][lv];
  if (last) {
    last->addr = t->acg->storage[last->node].capacity_bytes - last->bytes / 2;
    st = map_verify(&s[1]);
    CHECK(st != NULL);
    if (st) print_status(out, "verify (place past capacity)", st);
    else fputs("verify (place past capacity): ok\n", out);
  }
  free(s);
}

static void steps(FILE *out, const cov_acg *acg, const char *suite_path, const char *name) {
  cov_layer *l = NULL;
  cov_status st = cov_layer_from_suite(suite_path, name, 1, &l);
  map_schedule *proto = calloc(1, sizeof *proto);
  map_target *t = calloc(1, sizeof *t);
  cov_arena *arena = cov_arena_create();
  int first = 1;
  fprintf(out, "layer %s on %s\n== extract\n", name, cov_acg_name(acg));
  if (!st && (!proto || !t || !arena)) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = map_extract(l, proto, &first, arena);
  if (st) {
    print_status(out, "extract", st);
    goto done;
  }
  map_dump_problem(&proto->prob, out);
  fprintf(out, "  epilogue from call %d\n", first);
  fputs("== epilogue\n", out);
  if ((st = map_lower_epilogue(l, first, proto, arena))) {
    print_status(out, "epilogue", st);
    goto done;
  }
  map_dump_epilogue(proto, out);
  fputs("== bind\n", out);
  st = map_bind_target(&proto->prob, acg, t);
  if (!st) {
    proto->acg = acg;
    proto->acc_dtype = t->acc_dtype;
    st = map_bind_epilogue(acg, proto);
  }
  if (!st) st = map_bind_epilogue_storage(proto, t);
  if (st) {
    print_status(out, "bind", st);
    goto done;
  }
  print_target(out, t, &proto->prob);
  map_dump_epilogue(proto, out);
  build_verify(out, t, proto);
  fputs("== search\n", out);
  cov_schedule *cs = calloc(1, sizeof *cs);
  if (cs && (cs->arena = cov_arena_create())) {
    st = map_search(t, proto, &(cov_map_options){0}, cs);
    if (st) {
      print_status(out, "search", st);
    } else {
      map_dump(&cs->s, out);
      map_dump_cost(&cs->s, out);
    }
    cov_arena_destroy(cs->arena);
  }
  free(cs);
done:
  cov_arena_destroy(arena);
  free(proto);
  free(t);
  cov_layer_free(l);
}

static char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0;
  *n = 0;
  for (;;) {
    if (*n + 4096 > cap) {
      char *nb = realloc(buf, cap = cap * 2 + 4096);
      if (!nb) break;
      buf = nb;
    }
    size_t k = fread(buf + *n, 1, cap - *n, f);
    *n += k;
    if (k == 0) break;
  }
  fclose(f);
  return buf;
}

/* The case's text against DIR/<target>.<layer>.txt (or written there). */
static void compare(const char *dir, bool update, const cov_acg *acg, const char *suite, const char *layer) {
  char *text = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&text, &n);
  if (!m) {
    CHECK(!"open_memstream");
    return;
  }
  steps(m, acg, suite, layer);
  fclose(m);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s.txt", dir, cov_acg_name(acg), layer);
  if (update) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(text, 1, n, f) == n);
    if (f) fclose(f);
  } else {
    size_t en = 0;
    char *want = read_all(path, &en);
    size_t i = 0, line = 1;
    while (want && i < n && i < en && text[i] == want[i]) line += text[i++] == '\n';
    if (!want || i != n || i != en) {
      size_t ls = i; /* the start of the line that differs */
      while (ls > 0 && text[ls - 1] != '\n') ls--;
      fprintf(stderr, "%s: %s at line %zu:\n  expected: %.*s\n  got:      %.*s\n", path,
              want ? "differs from this build's output" : "cannot be read", line,
              want && ls < en ? (int)strcspn(want + ls, "\n") : 0, want && ls < en ? want + ls : "",
              ls < n ? (int)strcspn(text + ls, "\n") : 0, ls < n ? text + ls : "");
      CHECK(!"output differs (tests/mapper/test_steps.c: --update rewrites it)");
    }
    free(want);
  }
  free(text);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_steps EXPECTED_DIR [--update]\n");
    return 2;
  }
  bool update = argc > 2 && strcmp(argv[2], "--update") == 0;
  char suite[] = "/tmp/cov_test_steps_XXXXXX";
  int fd = mkstemp(suite);
  FILE *sf = fd >= 0 ? fdopen(fd, "w") : NULL;
  CHECK(sf && fputs(k_suite, sf) >= 0);
  if (sf) fclose(sf);
  const char *layers[] = {"gemm_tiny", "conv_pool_tiny", "attn_tiny"};
  for (int i = 0; i < 2; i++) {
    cov_acg *acg = NULL;
    cov_status st = i == 0 ? cov_acg_load_buffer(k_acg3, strlen(k_acg3), "npu-tiny3.json", &acg)
                           : cov_acg_load_target("npu-16x16", &acg);
    CHECK(st == NULL);
    if (st) {
      cov_status_print(stderr, st, 0);
      cov_status_free(st);
      continue;
    }
    for (int k = 0; k < 3; k++) compare(argv[1], update, acg, suite, layers[k]);
    cov_acg_free(acg);
  }
  remove(suite);
  return check_summary();
}

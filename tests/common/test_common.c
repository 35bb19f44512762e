/* tests/common/test_common.c: status chains, arenas, JSON positions. */
#include <stdint.h>
#include <stdlib.h>

#include "common/json_pos.h"
#include "common/op_table.h"
#include "covenant/arena.h"
#include "covenant/status.h"
#include "covenant/types.h"
#include "tests/check.h"

static void test_status(void) {
  CHECK(cov_status_code(NULL) == COV_OK);
  cov_loc loc = {.file = "a.json", .line = 3, .col = 7, .path = "$.x"};
  cov_status a = cov_error(COV_INVALID_INPUT, &loc, "bad %s", "thing");
  char buf[256];
  cov_status_format(a, buf, sizeof buf);
  CHECK_STR(buf, "a.json:3:7: error: $.x: bad thing");
  cov_loc floc = {.file = "b.json"};
  cov_status b = cov_error(COV_IO_ERROR, &floc, "gone");
  cov_status_format(b, buf, sizeof buf);
  CHECK_STR(buf, "b.json: error: gone");
  cov_status chain = cov_status_join(a, b);
  CHECK(cov_status_count(chain) == 2);
  CHECK(cov_status_code(chain) == COV_INVALID_INPUT);
  CHECK(cov_status_code(cov_status_next(chain)) == COV_IO_ERROR);
  chain = cov_status_annotate(chain, "while loading: ");
  CHECK(cov_status_count(chain) == 2);
  CHECK_STR(cov_status_message(chain), "while loading: bad thing");
  CHECK(cov_status_loc(chain).line == 3);
  /* messages longer than the fast path's buffer survive whole */
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  cov_status c = cov_error(COV_INTERNAL, NULL, "%s", big);
  CHECK(strlen(cov_status_message(c)) == sizeof big - 1);
  cov_status_free(c);
  cov_status_free(chain);
  /* COV_OK is never a failure status */
  cov_status d = cov_error(COV_OK, NULL, "odd");
  CHECK(cov_status_code(d) == COV_INTERNAL);
  cov_status_free(d);
}

static void test_arena(void) {
  cov_arena *a = cov_arena_create();
  CHECK(a != NULL);
  char *s = cov_arena_strdup(a, "hello");
  CHECK_STR(s, "hello");
  CHECK(((uintptr_t)cov_arena_alloc(a, 3) & 15) == 0);
  CHECK(!cov_arena_failed(a));
  CHECK(cov_arena_array(a, SIZE_MAX / 2, 4) == NULL); /* overflow refused */
  CHECK(cov_arena_failed(a)); /* and remembered: what was built may be incomplete */
  CHECK(cov_arena_failed(NULL));
  int *big = cov_arena_array(a, 100000, sizeof(int)); /* larger than a block */
  CHECK(big != NULL && big[99999] == 0);
  int *arr = cov_arena_array(a, 4, sizeof(int));
  for (int i = 0; i < 4; i++) arr[i] = i + 1;
  int *grown = cov_arena_grow(a, arr, 4, 8, sizeof(int));
  CHECK(grown[3] == 4 && grown[7] == 0);
  CHECK_STR(cov_arena_printf(a, "%d-%s", 42, "x"), "42-x");
  CHECK(cov_arena_used(a) >= 400000);
  cov_arena_destroy(a);
}

static void test_json_pos(void) {
  cov_arena *a = cov_arena_create();
  const char *text = "{\n  \"a\": [1, {\"b c\": true}],\n  \"\\u00e9t\\u00e9\": \"x\",\n  \"q\\\"\": 2\n}";
  cov_jpos idx;
  common_jpos_build(&idx, text, strlen(text), a);
  const cov_jpos_entry *e = common_jpos_find(&idx, "$.a[1][\"b c\"]");
  CHECK(e && e->line == 2 && e->col == 20 && e->key_line == 2 && e->key_col == 13);
  e = common_jpos_find(&idx, "$.a[1]");
  CHECK(e && e->line == 2 && e->col == 12 && e->key_line == 0);
  e = common_jpos_find(&idx, "$.a[0]");
  CHECK(e && e->line == 2 && e->col == 9);
  e = common_jpos_find(&idx, "$[\"\xc3\xa9t\xc3\xa9\"]");
  CHECK(e && e->line == 3 && e->col == 20 && e->key_col == 3);
  e = common_jpos_find(&idx, "$[\"q\\\"\"]");
  CHECK(e && e->line == 4 && e->col == 10);
  CHECK(common_jpos_find(&idx, "$.missing") == NULL);
  /* malformed text: keeps what it saw, never crashes */
  cov_jpos bad;
  common_jpos_build(&bad, "{\"a\": [1, 2", 11, a);
  CHECK(common_jpos_find(&bad, "$.a[1]") != NULL);
  common_jpos_build(&bad, "", 0, a);
  CHECK(bad.count == 0);
  cov_arena_destroy(a);
}

static void test_tables(void) {
  CHECK(cov_dtype_from_name("bf16") == COV_BF16);
  CHECK(cov_dtype_from_name("fp16") == COV_DTYPE_INVALID);
  CHECK(cov_dtype_size(COV_F16) == 2);
  CHECK(common_op_from_name("mac") == COV_OP_MAC);
  CHECK(common_op_arity(COV_OP_SELECT) == 3);
  CHECK(common_op_from_name("nope") == COV_OP_INVALID);
  /* every op in the table is listed in the names used by error messages */
  for (int i = 1; i < COV_OP_COUNT; i++) CHECK(strstr(common_op_names(), common_op_name((cov_op)i)));
}

int main(void) {
  test_status();
  test_arena();
  test_json_pos();
  test_tables();
  return check_summary();
}

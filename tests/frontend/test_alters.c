/* tests/frontend/test_alters.c MODEL: which layout groups of
 * make_int_moves.py's model alter values (cov_model_group_info.alters):
 * the Cast of run-time floats to i64 and the Gather at run-time indices
 * do; the Flatten of run-time i8 data only moves it. */
#include <stdio.h>
#include <string.h>

#include "covenant/model.h"
#include "tests/check.h"

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]), 2;
  cov_model *m = NULL;
  cov_status st = cov_model_load_file(argv[1], NULL, &m);
  CHECK(!st && m);
  if (st) cov_status_print(stderr, st, 0), cov_status_free(st);
  int seen = 0;
  for (size_t i = 0; m && i < cov_model_num_groups(m); i++) {
    cov_model_group_info info;
    CHECK(!cov_model_group_get_info(m, i, &info));
    if (!info.layout) continue;
    printf("%s: %s\n", info.node, info.alters ? info.alters : "moves elements");
    const char *a = info.alters;
    if (!strcmp(info.node, "to_int")) {
      seen++;
      CHECK(a && strstr(a, "another element type"));
    } else if (!strcmp(info.node, "lookup")) {
      seen++;
      CHECK(a && strstr(a, "run-time integers"));
    } else if (!strcmp(info.node, "flat")) {
      seen++;
      CHECK(a == NULL);
    }
  }
  CHECK(seen == 3);
  cov_model_free(m);
  return check_summary();
}

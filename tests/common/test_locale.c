/* tests/common/test_locale.c: a program that sets a decimal-comma
 * LC_NUMERIC (de_DE.UTF-8) gets the same bytes from the library as in the
 * "C" locale: a study's fractional --vary values parse, its rows are written
 * with '.', the study reads them back and merge accepts them; codelet float
 * literals read and print the same; and the caller's locale is as it set it
 * afterwards. The reference is the same work done in the "C" locale. Skips
 * (77) where de_DE.UTF-8 is not installed (scripts/setup.sh generates it). */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/c_locale.h"
#include "common/fileio.h"
#include "covenant/codelet.h"
#include "covenant/explore.h"
#include "tests/check.h"

static char *slurp(const char *dir, const char *name) {
  char path[4200], *data = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  cov_status st = common_read_file(path, 1u << 24, &data, &n);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
  }
  return data;
}

static int run_study(const char *out_dir) {
  static const char *vary[] = {"dram.bandwidth_bytes_per_cycle=12.5,64",
                               "/storage/0/energy_pj_per_byte/read=0.75,160"};
  char base[4096], suite[4096];
  snprintf(base, sizeof base, "%s/targets/npu-16x16.json", COV_TEST_SOURCE_DIR);
  snprintf(suite, sizeof suite, "%s/bench/suite/layers.json", COV_TEST_SOURCE_DIR);
  cov_explore_options o = {.base = base, .vary = vary, .n_vary = 2, .suite = suite,
                           .suite_names = "bert_base_qkv,mobilenetv2_dw3x3", .use_suite = 1,
                           .evaluator = "roofline", .out_dir = out_dir, .jobs = 2};
  cov_status st = cov_explore_run(&o);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  return 0;
}

/* Every codelet of a file, loaded and printed (float literals round-trip). */
static char *codelets_printed(const char *file) {
  char path[4096], *text = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/codelets/%s", COV_TEST_SOURCE_DIR, file);
  cov_codelet_lib *lib = NULL;
  cov_status st = cov_codelet_lib_load_file(path, &lib);
  FILE *f = st ? NULL : open_memstream(&text, &n);
  for (size_t i = 0; f && i < cov_codelet_lib_count(lib); i++)
    if (!st) st = cov_codelet_print(cov_codelet_lib_at(lib, i), f);
  if (f) fclose(f);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    free(text);
    text = NULL;
  }
  cov_codelet_lib_free(lib);
  return text;
}

static void same_file(const char *a, const char *b, const char *name) {
  char *x = slurp(a, name), *y = slurp(b, name);
  CHECK(x && y);
  if (x && y) CHECK_STR(y, x);
  free(x), free(y);
}

int main(void) {
  char tmpl[] = "/tmp/cov_locale_XXXXXX";
  const char *root = mkdtemp(tmpl);
  CHECK(root != NULL);
  if (!root) return check_summary();
  char c_dir[256], de_dir[256], merged[256], buf[64];
  snprintf(c_dir, sizeof c_dir, "%s/c", root);
  snprintf(de_dir, sizeof de_dir, "%s/de", root);
  snprintf(merged, sizeof merged, "%s/merged", root);
  CHECK(run_study(c_dir) == 0); /* the references, in the "C" locale */
  char *act_c = codelets_printed("activation.cdl"), *math_c = codelets_printed("math.cdl");
  CHECK(act_c && strstr(act_c, "."));

  if (!setlocale(LC_NUMERIC, "de_DE.UTF-8") && !setlocale(LC_NUMERIC, "de_DE.utf8")) {
    printf("skip: the de_DE.UTF-8 locale is not installed\n");
    return 77;
  }
  snprintf(buf, sizeof buf, "%g", 0.5);
  CHECK_STR(buf, "0,5"); /* the locale does write a decimal comma */

  /* the helpers */
  char *end = NULL;
  CHECK(common_strtod("12.5x", &end) == 12.5 && *end == 'x');
  common_snprintf(buf, sizeof buf, "%.3f|%g", 1.25, 1e-3);
  CHECK_STR(buf, "1.250|0.001");

  /* a study, and a merge of it, in the decimal-comma locale */
  CHECK(run_study(de_dir) == 0);
  same_file(c_dir, de_dir, "results.csv");
  same_file(c_dir, de_dir, "summary.csv");
  same_file(c_dir, de_dir, "rows/d000.txt");
  const char *dirs[] = {de_dir};
  cov_status st = cov_explore_merge(dirs, 1, merged, NULL, NULL);
  if (st) cov_status_print(stderr, st, 0), cov_status_free(st);
  CHECK(st == NULL);
  same_file(c_dir, merged, "summary.csv");
  char *res = slurp(de_dir, "results.csv");
  CHECK(res && strstr(res, ",12.5,0.75,"));
  free(res);

  /* codelets: float literals ("0.5") read and print the same */
  char *act = codelets_printed("activation.cdl"), *mth = codelets_printed("math.cdl");
  CHECK(act && act_c && strcmp(act, act_c) == 0);
  CHECK(mth && math_c && strcmp(mth, math_c) == 0);
  free(act), free(mth), free(act_c), free(math_c);

  /* the caller's locale is untouched */
  snprintf(buf, sizeof buf, "%g", 0.5);
  CHECK_STR(buf, "0,5");

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
  return check_summary();
}

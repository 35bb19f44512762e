/* examples/acg_summary.c: the smallest program using libcovenant's public
 * API: load an accelerator description and print its summary.
 * Built against the shared library (which the program then finds where it
 * is installed) or the static one:
 *   cc acg_summary.c $(pkg-config --cflags --libs covenant) -o acg_summary
 *   cc acg_summary.c $(pkg-config --cflags --libs --static covenant-static) -o acg_summary
 * with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for a prefix pkg-config does
 * not search (README.md, "Installing"). */
#include <covenant/acg.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s TARGET.json\n", argv[0]);
    return 2;
  }
  cov_acg *acg = NULL;
  cov_status st = cov_acg_load_target(argv[1], &acg);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  st = cov_acg_print_summary(acg, stdout);
  cov_acg_free(acg);
  if (st) {
    cov_status_print(stderr, st, 0);
    cov_status_free(st);
    return 1;
  }
  return 0;
}

/* fuzz/acg_fuzz.c: the ACG loader must reject or accept any byte string
 * without crashing, leaking or tripping a sanitizer; an accepted ACG must
 * also survive every printer. */
#include <stdint.h>
#include <stdio.h>

#include "covenant/acg.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cov_acg *g = NULL;
  cov_status st = cov_acg_load_buffer((const char *)data, size, "fuzz.json", &g);
  if (fuzz_rejected(st)) return 0;
  FILE *sink = fopen("/dev/null", "w");
  if (sink) {
    cov_status_free(cov_acg_print_summary(g, sink));
    cov_status_free(cov_acg_print_dot(g, sink));
    cov_status_free(cov_acg_write_json(g, sink));
    fclose(sink);
  }
  cov_acg_free(g);
  return 0;
}

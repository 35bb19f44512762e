/* planted: what check_locations.py must report and what it must not */
#include "covenant/status.h"
#define NOLOC NULL
cov_status f(const char *file, int x) {
  cov_loc at = {file, 0, 0, "$.x"};
  if (x == 1) return cov_error(COV_INVALID_INPUT, NULL, "reported");
  if (x == 2)
    return cov_error(COV_UNSUPPORTED,
                     NULL, "reported: the location on the next line");
  if (x == 3) return cov_error(COV_OUT_OF_MEMORY, NULL, "passes: no input to point at");
  if (x == 4) return cov_error(COV_DEVICE_ERROR, NULL, "passes: allow-listed");
  if (x == 5) return cov_error(COV_INVALID_INPUT, &at, "passes: located (a, b)");
  /* cov_error(COV_INVALID_INPUT, NULL, "passes: a comment") */
  return cov_error(COV_INTERNAL, 0, "reported: %s", "0 is NULL too");
}

/* planted: the CLI may report without a location (it is not library code) */
#include "covenant/status.h"
cov_status g(void) { return cov_error(COV_INVALID_ARGUMENT, NULL, "passes: cli/"); }

/* common/loc.h: where a diagnostic points (cov_error's `where`).
 *
 * Every error names the place in the input it is about: a file (model,
 * suite, ACG, codelet), a line:col, a JSON path or a graph node / layer.
 * Errors whose input is not a file name what it is instead: the API entry
 * point that was given an argument it does not accept, the command-line
 * option or the environment variable. The check tests/arch/check_locations.py
 * (ctest arch_locations) fails on a library cov_error with a NULL location.
 * The compound literal lives until the end of the enclosing block, which
 * covers the cov_error call (the status copies the strings). */
#ifndef COV_COMMON_LOC_H
#define COV_COMMON_LOC_H

#include <stdio.h>

#include "covenant/status.h"

/* a file and a JSON path or node name; either may be NULL */
#define COV_AT(file_, path_) (&(cov_loc){.file = (file_), .path = (path_)})
#define COV_AT_FILE(file_) COV_AT((file_), NULL)
/* the caller of API function `fn` passed an argument it does not accept
 * (a NULL pointer, an index past the end): the call is the location */
#define COV_AT_CALL(fn) COV_AT(NULL, (fn))

/* a command-line option and its value ("--vary pe_array.dims"), formatted
 * into buf (the statement's compound literal in COV_AT_OPTION) */
static inline const cov_loc *common_at_option_(cov_loc *l, char *buf, size_t size, const char *opt,
                                            const char *value) {
  snprintf(buf, size, "%s %s", opt, value);
  l->path = buf;
  return l;
}
#define COV_AT_OPTION(opt, value) common_at_option_(&(cov_loc){0}, (char[512]){0}, 512, (opt), (value))

#endif

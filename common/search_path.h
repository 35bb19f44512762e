/* common/search_path.h: finding shipped data (targets, codelets) by name. */
#ifndef COV_SEARCH_PATH_H
#define COV_SEARCH_PATH_H

#include <stddef.h>

#include "covenant/status.h"

/* Resolves `name_or_path` to a readable file. A value with a '/' or ending in
 * `ext` is a path; anything else is a name looked up as <dir>/<name><ext> in,
 * in order: each entry of the environment variable `env_var` (':'-separated),
 * ../share/covenant/<subdir> beside the running program, the configured
 * install data dir (<prefix>/share/covenant/<subdir>), and the source tree's
 * <subdir> (so an uninstalled build finds its own files).
 * Writes the path into out (size bytes). */
cov_status cov_resolve_data_file(const char *name_or_path, const char *subdir, const char *ext,
                                 const char *env_var, char *out, size_t size);

#endif

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
cov_status common_resolve_data_file(const char *name_or_path, const char *subdir, const char *ext,
                                 const char *env_var, char *out, size_t size);

/* The lookup of common_resolve_data_file for a name only: a value that is not a
 * plain name (letters, digits, '-', '_', '.', not first; 64 at most) is
 * refused, never opened as a path. For names read from files (the ACG an
 * NPU program names), which must not make covenant open arbitrary files. */
cov_status common_resolve_data_name(const char *name, const char *subdir, const char *ext,
                                 const char *env_var, char *out, size_t size);

/* The shipped data folders for `subdir`, in lookup order:
 * share/covenant/<subdir> relative to the file holding this code (found with
 * dladdr: libcovenant.so in <prefix>/<libdir>, or the statically linked
 * program in <prefix>/bin), then relative to the running program, so an
 * installed tree works wherever it was copied to and whoever links it; the
 * configured install data dir; and the source tree (its <subdir>, the suite
 * under bench/suite; so an uninstalled build finds its own files). Writes
 * the `index`-th candidate (0..COV_SHIPPED_DIRS-1) into out; returns 0 when
 * it does not fit or a path is unknown. Whether the folder exists is the
 * caller's question. */
#define COV_SHIPPED_DIRS 4
int common_shipped_dir(int index, const char *subdir, char *out, size_t size);

/* The names (file names without `ext`) found where common_resolve_data_file
 * looks, each once, sorted; at most COMMON_MAX_DATA_NAMES. For listings
 * (`covenant targets`) and "did you mean" hints. */
#define COMMON_MAX_DATA_NAMES 128
typedef struct common_data_names {
  int n;
  char name[COMMON_MAX_DATA_NAMES][64];
} common_data_names;
void common_list_data_names(const char *subdir, const char *ext, const char *env_var,
                            common_data_names *out);

#endif

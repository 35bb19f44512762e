/* acg/acg_target.c: ACG files by path and targets by name.
 *
 * A target is found by its file's name (targets/<name>.json, the names
 * `covenant targets` lists) and known by the "name" it declares (what `run`
 * prints, what a compiled program records and `sim` looks up again). The two
 * must agree, or a target would be listed under one name, run under
 * another, and not be found under the second: a file found by name that
 * declares another is refused, located at its "name". A file given by path
 * may carry any name. */
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/fileio.h"
#include "common/json_pos.h"
#include "common/search_path.h"

static cov_status name_mismatch(const char *data, size_t size, const char *path, const char *wanted,
                                const char *declared) {
  cov_arena *a = cov_arena_create();
  cov_jpos pos = {0};
  if (a) common_jpos_build(&pos, data, size, a);
  const cov_jpos_entry *e = a ? common_jpos_find(&pos, "$.name") : NULL;
  cov_loc loc = {.file = path, .line = e ? e->line : 0, .col = e ? e->col : 0, .path = "$.name"};
  cov_status st = cov_error(COV_INVALID_INPUT, &loc,
                            "found as target '%s' but declares the name '%s': a target is found by its "
                            "file's name and known by its \"name\", so the two must agree (rename the file "
                            "to %s.json or set \"name\" to \"%s\")",
                            wanted, declared, declared, wanted);
  cov_arena_destroy(a);
  return st;
}

/* Loads `path`; with `wanted` (the name it was found by), refuses a file
 * declaring another name. */
static cov_status load_as(const char *path, const char *wanted, cov_acg **out) {
  *out = NULL;
  char *data;
  size_t size;
  COV_RETURN_IF_ERROR(common_read_file(path, COV_ACG_MAX_FILE_BYTES, &data, &size));
  cov_status st = cov_acg_load_buffer(data, size, path, out);
  if (!st && wanted && strcmp((*out)->name, wanted) != 0) {
    st = name_mismatch(data, size, path, wanted, (*out)->name);
    cov_acg_free(*out);
    *out = NULL;
  }
  free(data);
  return st;
}

cov_status cov_acg_load_file(const char *path, cov_acg **out) { return load_as(path, NULL, out); }

/* common_resolve_data_file's test: a '/' or the extension makes a path. */
static int is_path(const char *s) {
  size_t n = strlen(s);
  return strchr(s, '/') || (n >= 5 && strcmp(s + n - 5, ".json") == 0);
}

cov_status cov_acg_load_target(const char *name_or_path, cov_acg **out) {
  *out = NULL;
  char path[4096];
  COV_RETURN_IF_ERROR(common_resolve_data_file(name_or_path, "targets", ".json", "COVENANT_TARGET_PATH", path,
                                               sizeof path));
  return load_as(path, is_path(name_or_path) ? NULL : name_or_path, out);
}

cov_status cov_acg_load_named(const char *name, cov_acg **out) {
  *out = NULL;
  char path[4096];
  COV_RETURN_IF_ERROR(common_resolve_data_name(name, "targets", ".json", "COVENANT_TARGET_PATH", path,
                                               sizeof path));
  return load_as(path, name, out);
}

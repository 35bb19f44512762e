/* codelets/cdl_lib.c: codelet libraries (the public cov_codelet_lib_* API).
 *
 * A library owns one arena holding the IR of every codelet it loaded, and
 * the file names diagnostics point to. Loading collects the errors of every
 * file before failing, so `covenant codelet check DIR` shows them all.
 * Files of a directory are read in sorted order, so the codelet order and
 * the diagnostics are the same on every machine. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codelets/cdl_bind.h"
#include "common/loc.h"
#include "codelets/cdl_ir.h"
#include "codelets/cdl_parse.h"
#include "codelets/cdl_verify.h"
#include "common/fileio.h"
#include "common/search_path.h"

#define CDL_MAX_DIR_FILES 4096

struct cov_codelet_lib {
  cov_arena *arena;
  cdl_codelet **items;
  size_t count, cap;
};

static cov_status lib_new(cov_codelet_lib **out) {
  *out = NULL;
  cov_codelet_lib *lib = calloc(1, sizeof *lib);
  if (lib) lib->arena = cov_arena_create();
  if (!lib || !lib->arena) {
    free(lib);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  *out = lib;
  return NULL;
}

void cov_codelet_lib_free(cov_codelet_lib *lib) {
  if (!lib) return;
  cov_arena_destroy(lib->arena);
  free(lib);
}

static const cdl_codelet *find(const cov_codelet_lib *lib, const char *name) {
  for (size_t i = 0; i < lib->count; i++)
    if (strcmp(lib->items[i]->name, name) == 0) return lib->items[i];
  return NULL;
}

/* Adds a verified codelet. `hide` (a later directory of the search path)
 * lets an earlier definition win silently; otherwise a name defined twice
 * is an error. */
static cov_status add(cov_codelet_lib *lib, cdl_codelet *c, int hide) {
  const cdl_codelet *old = find(lib, c->name);
  if (old) {
    if (hide) return NULL;
    cov_loc loc = c->loc;
    loc.path = c->name;
    return cov_error(COV_INVALID_INPUT, &loc, "codelet '%s' is already defined at %s:%u:%u",
                     c->name, old->file, old->loc.line, old->loc.col);
  }
  if (lib->count == lib->cap) {
    size_t ncap = lib->cap ? lib->cap * 2 : 32;
    cdl_codelet **ni = cov_arena_grow(lib->arena, lib->items, lib->count, ncap, sizeof *ni);
    if (!ni) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    lib->items = ni;
    lib->cap = ncap;
  }
  lib->items[lib->count++] = c;
  return NULL;
}

/* Parses and verifies one text into lib; returns every error found. */
static cov_status load_text(cov_codelet_lib *lib, const char *data, size_t size,
                            const char *name, int hide) {
  const char *file = cov_arena_strdup(lib->arena, name ? name : "<buffer>");
  if (!file) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cdl_codelet **list;
  size_t n;
  cov_status errs = cdl_parse(lib->arena, data, size, file, &list, &n);
  for (size_t i = 0; i < n; i++) {
    cov_status st = cdl_verify(lib->arena, list[i]);
    if (!st) st = add(lib, list[i], hide);
    errs = cov_status_join(errs, st);
  }
  /* the parser and verifier stop quietly at a failed arena allocation;
   * their errors are then about a text they did not see whole */
  if (cov_arena_failed(lib->arena)) {
    cov_status_free(errs);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory loading codelets from %s", file);
  }
  return errs;
}

static cov_status load_file(cov_codelet_lib *lib, const char *path, int hide) {
  char *data;
  size_t size;
  cov_status st = common_read_file(path, CDL_MAX_FILE_BYTES, &data, &size);
  if (st) return st;
  st = load_text(lib, data, size, path, hide);
  free(data);
  return st;
}

static int ends_with_cdl(const char *s) {
  size_t n = strlen(s);
  return n > 4 && strcmp(s + n - 4, ".cdl") == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static cov_status load_dir(cov_codelet_lib *lib, const char *dir, int hide) {
  cov_loc loc = {.file = dir};
  DIR *d = opendir(dir);
  if (!d) return cov_error(COV_NOT_FOUND, &loc, "cannot open directory");
  char **names = NULL;
  size_t n = 0, cap = 0;
  cov_status errs = NULL;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || !ends_with_cdl(e->d_name)) continue;
    if (n == CDL_MAX_DIR_FILES) {
      errs = cov_error(COV_OUT_OF_RANGE, &loc, "more than %d .cdl files", CDL_MAX_DIR_FILES);
      break;
    }
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      char **nn = cov_arena_grow(lib->arena, names, n, ncap, sizeof *nn);
      if (!nn) {
        errs = cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
        break;
      }
      names = nn;
      cap = ncap;
    }
    names[n] = cov_arena_printf(lib->arena, "%s/%s", dir, e->d_name);
    if (!names[n]) {
      errs = cov_error(COV_OUT_OF_MEMORY, &loc, "out of memory");
      break;
    }
    n++;
  }
  closedir(d);
  if (errs) return errs;
  if (n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) errs = cov_status_join(errs, load_file(lib, names[i], hide));
  return errs;
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The shipped library: the first shipped data folder that exists, in the
 * order targets are looked up (common/search_path.h). */
static int shipped_dir(char *out, size_t size) {
  for (int i = 0; i < COV_SHIPPED_DIRS; i++)
    if (common_shipped_dir(i, "codelets", out, size) && is_dir(out)) return 1;
  return 0;
}

cov_status cov_codelet_lib_load(const char *dir, cov_codelet_lib **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_codelet_lib_load"), "NULL out");
  *out = NULL;
  cov_codelet_lib *lib;
  COV_RETURN_IF_ERROR(lib_new(&lib));
  cov_status errs = NULL;
  if (dir) {
    errs = load_dir(lib, dir, 0);
  } else {
    /* $COVENANT_CODELET_PATH first: a codelet there hides a shipped one of
     * the same name, so a user can override without editing the install. */
    const char *env = getenv("COVENANT_CODELET_PATH");
    int hide = 0;
    for (const char *p = env; p && *p;) {
      const char *colon = strchr(p, ':');
      size_t len = colon ? (size_t)(colon - p) : strlen(p);
      char *d = cov_arena_strndup(lib->arena, p, len);
      if (d && len && is_dir(d)) {
        errs = cov_status_join(errs, load_dir(lib, d, hide));
        hide = 1;
      }
      p += len + (colon ? 1 : 0);
    }
    char shipped[8192];
    if (shipped_dir(shipped, sizeof shipped))
      errs = cov_status_join(errs, load_dir(lib, shipped, hide));
    else
      errs = cov_status_join(
          errs, cov_error(COV_NOT_FOUND, COV_AT(NULL, "$COVENANT_CODELET_PATH"),
                          "no shipped codelets found (looked beside the program, in %s/codelets "
                          "and %s/codelets); set COVENANT_CODELET_PATH",
                          COV_DATADIR, COV_SOURCEDIR));
  }
  if (errs) {
    cov_codelet_lib_free(lib);
    return errs;
  }
  *out = lib;
  return NULL;
}

cov_status cov_codelet_lib_load_file(const char *path, cov_codelet_lib **out) {
  if (!out || !path)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_codelet_lib_load_file"), "NULL argument");
  *out = NULL;
  cov_codelet_lib *lib;
  COV_RETURN_IF_ERROR(lib_new(&lib));
  cov_status errs = load_file(lib, path, 0);
  if (errs) {
    cov_codelet_lib_free(lib);
    return errs;
  }
  *out = lib;
  return NULL;
}

cov_status cov_codelet_lib_load_buffer(const char *data, size_t size, const char *name,
                                       cov_codelet_lib **out) {
  if (!out || (!data && size))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_codelet_lib_load_buffer"), "NULL argument");
  *out = NULL;
  cov_loc loc = {.file = name};
  if (size > CDL_MAX_FILE_BYTES)
    return cov_error(COV_OUT_OF_RANGE, &loc, "codelet text is larger than the limit of %u bytes",
                     CDL_MAX_FILE_BYTES);
  cov_codelet_lib *lib;
  COV_RETURN_IF_ERROR(lib_new(&lib));
  cov_status errs = load_text(lib, data ? data : "", size, name, 0);
  if (errs) {
    cov_codelet_lib_free(lib);
    return errs;
  }
  *out = lib;
  return NULL;
}

size_t cov_codelet_lib_count(const cov_codelet_lib *lib) { return lib ? lib->count : 0; }

const cov_codelet *cov_codelet_lib_at(const cov_codelet_lib *lib, size_t i) {
  return lib && i < lib->count ? lib->items[i] : NULL;
}

const cov_codelet *cov_codelet_lib_find(const cov_codelet_lib *lib, const char *name) {
  return lib && name ? find(lib, name) : NULL;
}

const char *cov_codelet_name(const cov_codelet *c) { return c ? c->name : NULL; }
size_t cov_codelet_num_inputs(const cov_codelet *c) { return c ? (size_t)c->n_inputs : 0; }
size_t cov_codelet_num_outputs(const cov_codelet *c) { return c ? (size_t)c->n_outputs : 0; }

const char *cov_codelet_input_name(const cov_codelet *c, size_t i) {
  return c && i < (size_t)c->n_inputs ? c->operands[i].name : NULL;
}

const char *cov_codelet_output_name(const cov_codelet *c, size_t i) {
  return c && i < (size_t)c->n_outputs ? c->operands[(size_t)c->n_inputs + i].name : NULL;
}

cov_status cov_codelet_output_shapes(const cov_codelet *c, const cov_attr *attrs, size_t n_attrs,
                                     const cov_tensor *inputs, size_t n_inputs,
                                     cov_tensor *outputs, size_t n_outputs) {
  if (!c || (n_inputs && !inputs) || (n_outputs && !outputs))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_codelet_output_shapes"), "NULL argument");
  if (n_outputs != (size_t)c->n_outputs) {
    cov_loc loc = c->loc;
    loc.path = c->name;
    return cov_error(COV_INVALID_ARGUMENT, &loc, "'%s' has %d output%s, got room for %zu", c->name,
                     c->n_outputs, c->n_outputs == 1 ? "" : "s", n_outputs);
  }
  cov_arena *a = cov_arena_create();
  if (!a) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cdl_binding b;
  cov_status st = cdl_bind(c, attrs, n_attrs, inputs, n_inputs, a, &b);
  for (size_t i = 0; !st && i < n_outputs; i++) {
    int o = c->n_inputs + (int)i;
    memset(&outputs[i], 0, sizeof outputs[i]);
    outputs[i].dtype = b.dtype[o];
    outputs[i].rank = c->operands[o].rank;
    for (int d = 0; d < outputs[i].rank; d++) outputs[i].shape[d] = b.shape[o][d];
  }
  cov_arena_destroy(a);
  return st;
}

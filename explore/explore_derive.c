/* explore/explore_derive.c: one design derived from an ACG document
 * (cov_explore_derive): the assignments of a study's --vary, one value
 * each, applied with the same derived-parameter rules (explore_vary.c),
 * then validated and written canonically. For callers that build designs
 * one at a time (the Python package's covenant.derive). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "explore/explore.h"

static cov_status apply_all(cov_arena *a, const json_t *base, const char *const *assign, int n, json_t *doc,
                            char *notes, size_t notes_size) {
  cov_status st = NULL;
  for (int i = 0; i < n && !st; i++) {
    explore_vary v;
    char note[1024];
    st = explore_vary_parse(a, assign[i], base, &v);
    if (!st && v.n_values != 1)
      st = cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v.param),
                     "one value per assignment (got %d); a study sweeps several", v.n_values);
    if (!st) st = explore_vary_apply(&v, 0, doc, note, sizeof note);
    if (!st && note[0]) {
      size_t u = strlen(notes);
      snprintf(notes + u, notes_size - u, "%s%s", u ? "; " : "", note);
    }
    explore_vary_release(&v);
  }
  return st;
}

static cov_status derive(cov_arena *a, const char *base_text, size_t base_size, const char *name,
                         const char *const *assign, int n, char **out, char *notes, size_t notes_size) {
  cov_acg *g = NULL;
  cov_status st = cov_acg_load_buffer(base_text, base_size, name, &g);
  if (!st) st = backend_check_acg(g);
  cov_acg_free(g);
  COV_RETURN_IF_ERROR(cov_status_annotate(st, "base ACG: "));
  g = NULL;
  json_error_t jerr;
  json_t *base = json_loadb(base_text, base_size, JSON_REJECT_DUPLICATES, &jerr);
  if (!base) return cov_error(COV_PARSE_ERROR, EXPLORE_AT(.file = name), "%s", jerr.text);
  json_t *doc = json_deep_copy(base);
  st = doc ? apply_all(a, base, assign, n, doc, notes, notes_size)
           : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  char *text = st ? NULL : json_dumps(doc, JSON_INDENT(2));
  json_decref(doc);
  json_decref(base);
  if (!st && !text) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = cov_acg_load_buffer(text, strlen(text), name, &g);
  if (!st) st = backend_check_acg(g);
  free(text);
  if (!st) st = cov_acg_to_json(g, out, NULL);
  cov_acg_free(g);
  return st;
}

cov_status cov_explore_derive(const char *base_json, size_t size, const char *name, const char *const *assign,
                              int n_assign, char **out, char **notes) {
  if (out) *out = NULL;
  if (notes) *notes = NULL;
  if (!base_json || !out || n_assign < 0 || (n_assign && !assign) || n_assign > EXPLORE_MAX_VARY)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_explore_derive"),
                     "NULL base or out, or not 0 to %d assignments", EXPLORE_MAX_VARY);
  cov_arena *a = cov_arena_create();
  if (!a) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  char buf[4096] = "";
  cov_status st = derive(a, base_json, size, name ? name : "<acg>", assign, n_assign, out, buf, sizeof buf);
  cov_arena_destroy(a);
  if (!st && notes && !(*notes = strdup(buf))) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (st) {
    free(*out);
    *out = NULL;
  }
  return st;
}

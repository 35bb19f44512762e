/* backends/registry/backend_acg.c: an ACG's backend section against the
 * backends (backend_check_acg, backend_registry.h). The ACG loader checks
 * the section's types and ranges and names no backend; which backends
 * exist and which fields each takes is known here, for every backend of
 * covenant whether this build has it or not (a GPU target checks in a
 * build without LLVM), each error at the field's line:col. */
#include "backends/registry/backend_registry.h"
#include "acg/acg_ir.h"
#include "common/edit_distance.h"
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What an ACG of each backend holds beyond what every one does. */
static const struct {
  const char *name;
  int gpu;         /* code objects for a processor: needs mcpu and the GPU cost model's calibration */
  int code_object; /* takes code_object_version (the code-object format's version) */
} k_schemas[] = {
    {"npu-sim", 0, 0},
    {"amdgpu", 1, 1},
    {"nvptx", 1, 0},
};
enum { N_SCHEMAS = (int)(sizeof k_schemas / sizeof k_schemas[0]) };

static cov_status at(const cov_acg *g, acg_src s, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static cov_status at(const cov_acg *g, acg_src s, const char *path, const char *fmt, ...) {
  cov_loc loc = {cov_acg_file(g), s.line, s.col, path};
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(COV_INVALID_INPUT, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return st;
}

static cov_status unknown(const cov_acg *g) {
  const acg_backend *be = &g->backend;
  char esc[96], names[128] = "";
  const char *near = NULL;
  size_t best = 3; /* near misses only, as the loader's other names */
  for (int i = 0; i < N_SCHEMAS; i++) {
    size_t d = common_edit_distance(be->name, k_schemas[i].name);
    if (d < best) best = d, near = k_schemas[i].name;
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", k_schemas[i].name);
  }
  common_escape(be->name, esc, sizeof esc);
  if (near) return at(g, be->name_src, "$.backend.name", "unknown backend '%s' (did you mean '%s'?)", esc, near);
  return at(g, be->name_src, "$.backend.name", "unknown backend '%s' (expected one of: %s)", esc, names);
}

cov_status backend_check_acg(const cov_acg *g) {
  const acg_backend *be = &g->backend;
  if (!be->name) return NULL; /* the loader refused the ACG already */
  int i = 0;
  while (i < N_SCHEMAS && strcmp(k_schemas[i].name, be->name)) i++;
  if (i == N_SCHEMAS) return unknown(g);
  if (k_schemas[i].gpu && !be->mcpu)
    return at(g, be->src, "$.backend.mcpu", "missing required field (expected a string)");
  if (!k_schemas[i].gpu && be->mcpu)
    return at(g, be->mcpu_src, "$.backend.mcpu", "'mcpu' applies to GPU backends only");
  if (!k_schemas[i].code_object && be->code_object_version) {
    int j = 0;
    while (j < N_SCHEMAS - 1 && !k_schemas[j].code_object) j++;
    return at(g, be->code_object_src, "$.backend.code_object_version",
              "'code_object_version' applies to the %s backend only", k_schemas[j].name);
  }
  if (k_schemas[i].gpu && !g->calibration.given)
    return at(g, be->doc_src, "$.calibration", "missing required field (expected the GPU cost model's fitted constants)");
  if (!k_schemas[i].gpu && g->calibration.given)
    return at(g, g->calibration.src, "$.calibration", "'calibration' applies to GPU backends only");
  return NULL;
}

cov_status backend_acg_load(const char *name, cov_acg **out) {
  COV_RETURN_IF_ERROR(cov_acg_load_target(name, out));
  cov_status st = backend_check_acg(*out);
  if (st) {
    cov_acg_free(*out);
    *out = NULL;
  }
  return st;
}

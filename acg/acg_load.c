/* acg/acg_load.c: JSON text -> cov_acg, with every schema error located.
 *
 * Jansson parses the text (and reports syntax errors with line:col); a second
 * scan (common/json_pos.c) supplies the positions of values. The loader
 * collects errors instead of stopping at the first, so `covenant acg check`
 * shows everything wrong with a file in one run. Graph-level rules (dangling
 * edges, reachability) live in acg_validate.c.
 *
 * size: one reader per section of the schema (backend, calibration, storage, compute, edges), all through this file's typed getters, which keep every error located; a section elsewhere would need them exported
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/loc.h"
#include "common/edit_distance.h"
#include "common/fileio.h"
#include "common/json_pos.h"
#include "common/search_path.h"

typedef struct loader {
  cov_acg *g;
  cov_arena *arena;
  const char *file;
  cov_jpos pos;
  cov_status errors;
} loader;

/* ---- diagnostics ------------------------------------------------------ */

static void report(loader *L, const char *path, int at_key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report(loader *L, const char *path, int at_key, const char *fmt, ...) {
  cov_loc loc = {.file = L->file, .path = path};
  const cov_jpos_entry *e = common_jpos_find(&L->pos, path);
  if (e) {
    loc.line = at_key && e->key_line ? e->key_line : e->line;
    loc.col = at_key && e->key_line ? e->key_col : e->col;
  }
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(COV_INVALID_INPUT, &loc, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  L->errors = cov_status_join(L->errors, st);
}

/* Missing members are reported at their object, under the member's path. */
static void report_missing(loader *L, const char *obj_path, const char *key,
                           const char *expected) {
  char *path = common_jpath_key(L->arena, obj_path, key);
  cov_loc loc = {.file = L->file, .path = path ? path : obj_path};
  const cov_jpos_entry *e = common_jpos_find(&L->pos, obj_path);
  if (e) {
    loc.line = e->line;
    loc.col = e->col;
  }
  L->errors = cov_status_join(
      L->errors, cov_error(COV_INVALID_INPUT, &loc, "missing required field (expected %s)",
                           expected));
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
  }
  return "?";
}

/* The field or name a typo meant (edit distance under 3), or NULL. */
static const char *closest(const char *word, const char *const *names) {
  const char *best = NULL;
  size_t best_d = 3; /* suggest only near misses */
  for (; *names; names++) {
    size_t d = common_edit_distance(word, *names);
    if (d < best_d) {
      best_d = d;
      best = *names;
    }
  }
  return best;
}

static char *join_names(loader *L, const char *const *names) {
  size_t n = 0;
  for (const char *const *p = names; *p; p++) n += strlen(*p) + 2;
  char *s = cov_arena_alloc(L->arena, n + 1);
  if (!s) return (char *)"";
  for (const char *const *p = names; *p; p++) {
    if (p != names) strcat(s, ", ");
    strcat(s, *p);
  }
  return s;
}

/* ---- typed field access ----------------------------------------------- */

static int check_object(loader *L, const json_t *v, const char *path, const char *what) {
  if (json_is_object(v)) return 1;
  report(L, path, 0, "expected %s (an object), got %s", what, type_name(v));
  return 0;
}

static void check_fields(loader *L, const json_t *obj, const char *path,
                         const char *const *allowed) {
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)obj, key, val) {
    int ok = 0;
    for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, key) == 0;
    if (ok) continue;
    char *kpath = common_jpath_key(L->arena, path, key);
    const char *hint = closest(key, allowed);
    if (hint)
      report(L, kpath ? kpath : path, 1, "unknown field '%s' (did you mean '%s'?)", key, hint);
    else
      report(L, kpath ? kpath : path, 1, "unknown field '%s' (expected one of: %s)", key,
             join_names(L, allowed));
  }
}

/* Returns the member or NULL; reports it missing when required. */
static json_t *member(loader *L, const json_t *obj, const char *path, const char *key,
                      int required, const char *expected, char **out_path) {
  json_t *v = json_object_get(obj, key);
  *out_path = common_jpath_key(L->arena, path, key);
  if (!*out_path) *out_path = (char *)path;
  if (!v && required) report_missing(L, path, key, expected);
  return v;
}

static int get_string(loader *L, const json_t *obj, const char *path, const char *key,
                      int required, const char **out) {
  char *p;
  json_t *v = member(L, obj, path, key, required, "a string", &p);
  if (!v) return 0;
  if (!json_is_string(v)) {
    report(L, p, 0, "expected a string, got %s", type_name(v));
    return 0;
  }
  *out = cov_arena_strdup(L->arena, json_string_value(v));
  return *out != NULL;
}

static int get_uint(loader *L, const json_t *obj, const char *path, const char *key,
                    int required, uint64_t lo, uint64_t hi, uint32_t *out) {
  char *p;
  char expected[96];
  snprintf(expected, sizeof expected, "an integer from %llu to %llu", (unsigned long long)lo,
           (unsigned long long)hi);
  json_t *v = member(L, obj, path, key, required, expected, &p);
  if (!v) return 0;
  if (!json_is_integer(v)) {
    report(L, p, 0, "expected %s, got %s", expected, type_name(v));
    return 0;
  }
  json_int_t x = json_integer_value(v);
  if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi) {
    report(L, p, 0, "%lld is out of range (expected %s)", (long long)x, expected);
    return 0;
  }
  *out = (uint32_t)x;
  return 1;
}

/* A finite number from lo to hi, or 0 with allow_zero (where 0 means "not
 * given"). lo keeps absurd values out: a bandwidth of 1e-16 bytes/cycle is
 * a typo, not a design, and its cycle counts would overflow every integer
 * the simulator and the explorer use. */
static int get_number_in(loader *L, const json_t *obj, const char *path, const char *key,
                         int required, int allow_zero, double lo, double hi, double *out) {
  char *p;
  char expected[128];
  if (lo > 0)
    snprintf(expected, sizeof expected, "%sa number from %g to %g", allow_zero ? "0 or " : "", lo,
             hi);
  else
    snprintf(expected, sizeof expected, "a %s number no larger than %g",
             allow_zero ? "non-negative" : "positive", hi);
  json_t *v = member(L, obj, path, key, required, expected, &p);
  if (!v) return 0;
  if (!json_is_number(v)) {
    report(L, p, 0, "expected %s, got %s", expected, type_name(v));
    return 0;
  }
  double x = json_number_value(v);
  if (!isfinite(x) || x < 0 || (x == 0 && !allow_zero) || (x != 0 && x < lo) || x > hi) {
    report(L, p, 0, "%g is out of range (expected %s)", x, expected);
    return 0;
  }
  *out = x;
  return 1;
}

/* A finite number > 0 (or >= 0 with allow_zero) and <= hi. */
static int get_number(loader *L, const json_t *obj, const char *path, const char *key,
                      int required, int allow_zero, double hi, double *out) {
  return get_number_in(L, obj, path, key, required, allow_zero, 0, hi, out);
}

static int get_bool(loader *L, const json_t *obj, const char *path, const char *key, bool *out) {
  char *p;
  json_t *v = member(L, obj, path, key, 0, "true or false", &p);
  if (!v) return 0;
  if (!json_is_boolean(v)) {
    report(L, p, 0, "expected true or false, got %s", type_name(v));
    return 0;
  }
  *out = json_is_true(v);
  return 1;
}

static int get_enum(loader *L, const json_t *obj, const char *path, const char *key,
                    const char *noun, const char *const *names, int *out) {
  const char *s = NULL;
  if (!get_string(L, obj, path, key, 1, &s)) return 0;
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], s) == 0) {
      *out = i;
      return 1;
    }
  char *p = common_jpath_key(L->arena, path, key);
  const char *hint = closest(s, names);
  if (hint)
    report(L, p, 0, "unknown %s '%s' (did you mean '%s'?)", noun, s, hint);
  else
    report(L, p, 0, "unknown %s '%s' (expected one of: %s)", noun, s, join_names(L, names));
  return 0;
}

#define SIZE_EXPECTED "a size such as 65536, \"512B\", \"64KiB\", \"4GiB\""

static int get_size(loader *L, const json_t *obj, const char *path, const char *key,
                    uint64_t *out) {
  char *p;
  json_t *v = member(L, obj, path, key, 1, SIZE_EXPECTED, &p);
  if (!v) return 0;
  uint64_t bytes = 0;
  if (json_is_integer(v)) {
    if (json_integer_value(v) <= 0) {
      report(L, p, 0, "capacity must be positive, got %lld", (long long)json_integer_value(v));
      return 0;
    }
    bytes = (uint64_t)json_integer_value(v);
  } else if (json_is_string(v)) {
    int rc = acg_parse_size(json_string_value(v), &bytes);
    if (rc == -2) {
      report(L, p, 0, "size \"%s\" overflows 64 bits", json_string_value(v));
      return 0;
    }
    if (rc != 0) {
      report(L, p, 0, "expected " SIZE_EXPECTED ", got \"%s\"", json_string_value(v));
      return 0;
    }
    if (bytes == 0) {
      report(L, p, 0, "capacity must be positive, got \"%s\"", json_string_value(v));
      return 0;
    }
  } else {
    report(L, p, 0, "expected " SIZE_EXPECTED ", got %s", type_name(v));
    return 0;
  }
  if (bytes > ACG_MAX_CAPACITY) {
    report(L, p, 0, "capacity of %llu bytes is larger than the limit of %llu (1 PiB)",
           (unsigned long long)bytes, (unsigned long long)ACG_MAX_CAPACITY);
    return 0;
  }
  *out = bytes;
  return 1;
}

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64) return 0;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '-'))
      return 0;
  return 1;
}

static int get_name(loader *L, const json_t *obj, const char *path, const char **out) {
  if (!get_string(L, obj, path, "name", 1, out)) return 0;
  if (!valid_name(*out)) {
    report(L, common_jpath_key(L->arena, path, "name"), 0,
           "invalid name '%s' (expected a letter or '_' then letters, digits, '_' or '-', at "
           "most 64 characters)",
           *out);
    return 0;
  }
  return 1;
}

static json_t *get_array(loader *L, const json_t *obj, const char *path, const char *key,
                         int required, size_t max, char **out_path) {
  json_t *v = member(L, obj, path, key, required, "an array", out_path);
  if (!v) return NULL;
  if (!json_is_array(v)) {
    report(L, *out_path, 0, "expected an array, got %s", type_name(v));
    return NULL;
  }
  if (json_array_size(v) > max) {
    report(L, *out_path, 0, "too many entries (%zu; the limit is %zu)", json_array_size(v), max);
    return NULL;
  }
  return v;
}

/* ---- storage ---------------------------------------------------------- */

static const char *const k_storage_fields[] = {
    "name",          "kind",          "capacity",          "instances",
    "banks",         "width_bits",    "ports",             "double_buffer",
    "bandwidth_bytes_per_cycle",      "energy_pj_per_byte", "area_mm2", "about", NULL};
static const char *const k_storage_kinds[] = {"dram", "cache", "scratchpad", "regfile", NULL};

static void load_energy_rw(loader *L, const json_t *obj, const char *path, acg_storage *s) {
  char *p;
  json_t *e = member(L, obj, path, "energy_pj_per_byte", 0, "", &p);
  if (!e || !check_object(L, e, p, "read/write energy")) return;
  static const char *const fields[] = {"read", "write", NULL};
  check_fields(L, e, p, fields);
  int ok = get_number(L, e, p, "read", 1, 1, 1e6, &s->read_pj_per_byte);
  ok &= get_number(L, e, p, "write", 1, 1, 1e6, &s->write_pj_per_byte);
  s->has_energy = ok;
}

static void load_storage(loader *L, const json_t *v, const char *path, acg_storage *s) {
  s->instances = s->banks = s->ports = 1;
  s->width_bits = 64;
  if (!check_object(L, v, path, "a storage node")) return;
  const cov_jpos_entry *e = common_jpos_find(&L->pos, path);
  s->src = (acg_src){e ? e->line : 0, e ? e->col : 0, path};
  check_fields(L, v, path, k_storage_fields);
  get_name(L, v, path, &s->name);
  int kind = 0;
  if (get_enum(L, v, path, "kind", "storage kind", k_storage_kinds, &kind)) s->kind = (acg_storage_kind)kind;
  get_size(L, v, path, "capacity", &s->capacity_bytes);
  get_uint(L, v, path, "instances", 0, 1, 1u << 20, &s->instances);
  get_uint(L, v, path, "banks", 0, 1, 4096, &s->banks);
  if (get_uint(L, v, path, "width_bits", 0, 8, 65536, &s->width_bits) && s->width_bits % 8)
    report(L, common_jpath_key(L->arena, path, "width_bits"), 0,
           "width_bits must be a multiple of 8, got %u", s->width_bits);
  get_uint(L, v, path, "ports", 0, 1, 64, &s->ports);
  get_bool(L, v, path, "double_buffer", &s->double_buffer);
  get_number_in(L, v, path, "bandwidth_bytes_per_cycle", 0, 0, ACG_MIN_BANDWIDTH, 1e9,
                &s->bandwidth_bytes_per_cycle);
  load_energy_rw(L, v, path, s);
  get_number(L, v, path, "area_mm2", 0, 1, 1e6, &s->area_mm2);
  get_string(L, v, path, "about", 0, &s->about);
}

/* ---- compute ---------------------------------------------------------- */

static const char *const k_compute_fields[] = {"name",         "kind",           "dims",
                                               "lanes",        "instances",      "weight_buffers",
                                               "capabilities", "area_mm2",       "about",
                                               NULL};
static const char *const k_compute_kinds[] = {"systolic", "matrix", "simd", "scalar", NULL};
static const char *const k_cap_fields[] = {"op",         "in",      "out",
                                           "tile",       "throughput", "latency",
                                           "energy_pj_per_op", "waves", "operands", "fused", NULL};
static const char *const k_operand_sources[] = {"registers", "scratchpad", NULL};
static const char *const k_fused_forms[] = {"bias", "row_sum", "row_max", NULL}; /* ACG_FUSE_* bit order */

/* "fused": the fused forms a SIMD unit offers for the capability's unary
 * ops, an array of "bias" and "row_sum" (acg_capability.fused). */
static uint32_t parse_fused(loader *L, const json_t *v, const char *path, const acg_compute *c) {
  char *p;
  json_t *f = get_array(L, v, path, "fused", 0, 3, &p);
  if (!f) return 0;
  if (c->kind != ACG_SIMD) {
    report(L, p, 0, "fused forms are for a SIMD unit's unary ops, but '%s' is not of kind simd",
           c->name ? c->name : "?");
    return 0;
  }
  uint32_t mask = 0;
  for (size_t i = 0; i < json_array_size(f); i++) {
    json_t *x = json_array_get(f, i);
    char *xp = common_jpath_index(L->arena, p, i);
    int k = -1;
    for (int j = 0; json_is_string(x) && k_fused_forms[j]; j++)
      if (!strcmp(json_string_value(x), k_fused_forms[j])) k = j;
    if (k < 0) {
      report(L, xp, 0, "expected a fused form, \"bias\" (op(x + b)), \"row_sum\" or \"row_max\" "
             "(also the sum or the max of each row's results), got %s%s%s", json_is_string(x) ? "'" : "",
             json_is_string(x) ? json_string_value(x) : type_name(x), json_is_string(x) ? "'" : "");
      continue;
    }
    if (mask & (1u << k)) report(L, xp, 0, "fused form '%s' listed twice", k_fused_forms[k]);
    mask |= 1u << k;
  }
  if (json_array_size(f) == 0) report(L, p, 0, "expected \"bias\", \"row_sum\" or \"row_max\", got none");
  return mask;
}

/* Capabilities take these; i64 and bool are index/mask types, not datapaths. */
#define ACG_CAP_DTYPES "f32, f16, bf16, e4m3, e5m2, i8, u8, i32"
static int cap_dtype_ok(cov_dtype t) {
  return t == COV_F32 || t == COV_F16 || t == COV_BF16 || t == COV_E4M3 || t == COV_E5M2 ||
         t == COV_I8 || t == COV_U8 || t == COV_I32;
}

static int parse_cap_dtype(loader *L, const json_t *v, const char *path, cov_dtype *out) {
  if (!json_is_string(v)) {
    report(L, path, 0, "expected a dtype name (" ACG_CAP_DTYPES "), got %s",
           type_name(v));
    return 0;
  }
  const char *s = json_string_value(v);
  cov_dtype t = cov_dtype_from_name(s);
  if (t == COV_DTYPE_INVALID) {
    report(L, path, 0, "unknown dtype '%s' (expected one of: " ACG_CAP_DTYPES ")", s);
    return 0;
  }
  if (!cap_dtype_ok(t)) {
    report(L, path, 0,
           "unsupported dtype '%s' for a capability (expected one of: " ACG_CAP_DTYPES ")",
           s);
    return 0;
  }
  *out = t;
  return 1;
}

/* "op" may be one name or an array of names sharing the other fields; returns
 * how many ops were written to ops (at most max). */
static int parse_ops(loader *L, const json_t *cap, const char *path, cov_op *ops, int max) {
  char *p;
  json_t *v = member(L, cap, path, "op", 1, "an operation name or an array of them", &p);
  if (!v) return 0;
  size_t n = json_is_array(v) ? json_array_size(v) : 1;
  if (!json_is_array(v) && !json_is_string(v)) {
    report(L, p, 0, "expected an operation name or an array of them, got %s", type_name(v));
    return 0;
  }
  if (n == 0 || n > (size_t)max) {
    report(L, p, 0, "expected 1 to %d operation names, got %zu", max, n);
    return 0;
  }
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_is_array(v) ? json_array_get(v, i) : v;
    char *op_path = json_is_array(v) ? common_jpath_index(L->arena, p, i) : p;
    if (!json_is_string(o)) {
      report(L, op_path, 0, "expected an operation name, got %s", type_name(o));
      continue;
    }
    cov_op op = common_op_from_name(json_string_value(o));
    if (op == COV_OP_INVALID) {
      report(L, op_path, 0, "unknown operation '%s' (expected one of: %s)",
             json_string_value(o), common_op_names());
      continue;
    }
    ops[count++] = op;
  }
  return count;
}

/* A systolic array's mac capability follows the array: without "tile" it
 * covers the whole array, [rows, columns, 1] (one reduction step per
 * issue), and without "throughput" it does one MAC per PE of its tile
 * (acg_validate refuses a tile or throughput the array cannot have). */
static void systolic_mac_defaults(const json_t *v, const acg_compute *c, acg_capability *cap) {
  if (c->kind != ACG_SYSTOLIC) return;
  if (!json_object_get(v, "tile") && cap->tile_rank == 2) cap->tile[cap->tile_rank++] = 1;
  if (!json_object_get(v, "throughput"))
    cap->throughput = (double)cap->tile[0] * (cap->tile_rank > 1 ? cap->tile[1] : 1);
}

/* A capability's tile shape: "tile", else the unit's own shape, else 1. */
static void load_cap_tile(loader *L, const json_t *v, const char *path, const acg_compute *c,
                          acg_capability *cap) {
  char *p;
  json_t *tile = get_array(L, v, path, "tile", 0, ACG_MAX_TILE_RANK, &p);
  if (tile) {
    if (json_array_size(tile) == 0) report(L, p, 0, "expected 1 to 3 extents, got none");
    for (size_t i = 0; i < json_array_size(tile); i++) {
      json_t *x = json_array_get(tile, i);
      if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 65536) {
        if (json_is_integer(x))
          report(L, common_jpath_index(L->arena, p, i), 0,
                 "tile extent %lld is out of range (expected 1 to 65536)",
                 (long long)json_integer_value(x));
        else
          report(L, common_jpath_index(L->arena, p, i), 0,
                 "expected a tile extent from 1 to 65536, got %s", type_name(x));
        continue;
      }
      cap->tile[cap->tile_rank++] = (uint32_t)json_integer_value(x);
    }
  } else if (c->n_dims) { /* defaults: the unit's own shape */
    for (int i = 0; i < c->n_dims; i++) cap->tile[cap->tile_rank++] = c->dims[i];
  }
  if (cap->tile_rank == 0) cap->tile[cap->tile_rank++] = 1;
}

/* Whether capability cap's dtypes suit its op (cap->op): fused forms on
 * unary float ops of one dtype, one dtype per operand, a mac's two
 * multiplicands and an accumulator that holds their products; else
 * reported. in_ok, out_ok: the dtypes parsed; has_out: "out" given. */
static bool cap_op_ok(loader *L, const char *path, const acg_capability *cap, int in_ok, int out_ok,
                      bool has_out) {
  cov_op op = cap->op;
  int arity = common_op_arity(op);
  if (cap->fused && (arity != 1 || op == COV_OP_CAST || !in_ok || !out_ok ||
                    !cov_dtype_is_float(cap->in[0]) || cap->in[0] != cap->out)) {
    report(L, common_jpath_key(L->arena, path, "fused"), 0,
           "fused forms need unary float ops of one dtype (in == out), but '%s' is %s%s -> %s "
           "(list it in a capability without \"fused\")",
           common_op_name(op), arity != 1 ? "binary, " : "",
           in_ok ? cov_dtype_name(cap->in[0]) : "?", out_ok ? cov_dtype_name(cap->out) : "?");
    return false;
  }
  if (in_ok && cap->n_in > 1 && op != COV_OP_MAC && cap->n_in != arity) {
    report(L, common_jpath_key(L->arena, path, "in"), 0,
           "'%s' takes %d operand(s) but %d dtypes are given", common_op_name(op), arity,
           cap->n_in);
    return false;
  }
  if (op == COV_OP_MAC && in_ok && out_ok) {
    if (cap->n_in > 2) {
      report(L, common_jpath_key(L->arena, path, "in"), 0,
             "'mac' takes the dtypes of its two multiplicands, got %d", cap->n_in);
      return false;
    }
    if (!has_out) {
      report_missing(L, path, "out", "the accumulator dtype of 'mac'");
      return false;
    }
    int narrow = 0;
    for (int k = 0; k < cap->n_in; k++)
      narrow |= cov_dtype_precision_bits(cap->out) < cov_dtype_precision_bits(cap->in[k]) ||
                cov_dtype_is_float(cap->out) != cov_dtype_is_float(cap->in[k]);
    if (narrow) {
      report(L, common_jpath_key(L->arena, path, "out"), 0,
             "accumulator dtype '%s' cannot hold products of '%s' (expected %s type at "
             "least as precise)",
             cov_dtype_name(cap->out), cov_dtype_name(cap->in[0]),
             cov_dtype_is_float(cap->in[0]) ? "a float" : "an integer");
      return false;
    }
  }
  return true;
}

static void load_capability(loader *L, const json_t *v, const char *path, const acg_compute *c,
                            acg_capability *out_caps, int *n_caps) {
  if (!check_object(L, v, path, "a capability")) return;
  check_fields(L, v, path, k_cap_fields);
  cov_op ops[COV_OP_COUNT];
  int n_ops = parse_ops(L, v, path, ops, COV_OP_COUNT - 1);
  const cov_jpos_entry *e = common_jpos_find(&L->pos, path);
  acg_capability cap = {.latency = 1, .waves = 1, .src = {e ? e->line : 0, e ? e->col : 0, path}};

  /* operand dtypes: one name (shared by every operand) or one per operand */
  char *p;
  json_t *in = member(L, v, path, "in", 1, "a dtype or an array of dtypes", &p);
  int in_ok = 0;
  if (in && json_is_array(in)) {
    size_t n = json_array_size(in);
    if (n < 1 || n > 3) {
      report(L, p, 0, "expected 1 to 3 operand dtypes, got %zu", n);
    } else {
      in_ok = 1;
      for (size_t i = 0; i < n; i++)
        in_ok &= parse_cap_dtype(L, json_array_get(in, i), common_jpath_index(L->arena, p, i),
                                 &cap.in[i]);
      cap.n_in = (int)n;
    }
  } else if (in) {
    in_ok = parse_cap_dtype(L, in, p, &cap.in[0]);
    cap.n_in = 1;
  }
  json_t *outv = member(L, v, path, "out", 0, "", &p);
  int out_ok = 0;
  if (outv) out_ok = parse_cap_dtype(L, outv, p, &cap.out);
  else if (in_ok) cap.out = cap.in[0], out_ok = 1;

  load_cap_tile(L, v, path, c, &cap);

  /* throughput defaults to one op per PE (systolic), per lane (simd), or 1 */
  if (!get_number_in(L, v, path, "throughput", c->kind == ACG_MATRIX, 0, ACG_MIN_THROUGHPUT, 1e9,
                     &cap.throughput)) {
    double t = 1;
    for (int i = 0; i < c->n_dims; i++) t *= c->dims[i];
    cap.throughput = t;
  }
  for (int i = 0; i < n_ops; i++)
    if (ops[i] == COV_OP_MAC) {
      systolic_mac_defaults(v, c, &cap);
      break;
    }
  get_uint(L, v, path, "latency", 0, 0, 1u << 20, &cap.latency);
  get_number(L, v, path, "energy_pj_per_op", 0, 1, 1e6, &cap.energy_pj_per_op);
  get_uint(L, v, path, "waves", 0, 1, 64, &cap.waves);
  int src = 0;
  if (json_object_get(v, "operands") && get_enum(L, v, path, "operands", "operand source", k_operand_sources, &src))
    cap.operands_in_scratchpad = src == 1;
  cap.fused = parse_fused(L, v, path, c);

  for (int i = 0; i < n_ops; i++) {
    cap.op = ops[i];
    if (!cap_op_ok(L, path, &cap, in_ok, out_ok, outv != NULL)) continue;
    if (*n_caps >= ACG_MAX_CAPS) {
      report(L, path, 0, "too many capabilities on one unit (the limit is %d)", ACG_MAX_CAPS);
      return;
    }
    out_caps[(*n_caps)++] = cap;
  }
}

static int get_dims(loader *L, const json_t *v, const char *path, acg_compute *c) {
  char *p;
  json_t *dims = get_array(L, v, path, "dims", 0, 2, &p);
  if (!dims) return 0;
  if (json_array_size(dims) == 0) {
    report(L, p, 0, "expected 1 or 2 extents, got none");
    return 0;
  }
  for (size_t i = 0; i < json_array_size(dims); i++) {
    json_t *x = json_array_get(dims, i);
    if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 4096) {
      if (json_is_integer(x))
        report(L, common_jpath_index(L->arena, p, i), 0, "extent %lld is out of range (expected 1 to 4096)",
               (long long)json_integer_value(x));
      else
        report(L, common_jpath_index(L->arena, p, i), 0, "expected an extent from 1 to 4096, got %s",
               type_name(x));
      return 0;
    }
    c->dims[c->n_dims++] = (uint32_t)json_integer_value(x);
  }
  return 1;
}

static void load_compute(loader *L, const json_t *v, const char *path, acg_compute *c) {
  c->instances = 1;
  c->weight_buffers = 1;
  if (!check_object(L, v, path, "a compute node")) return;
  const cov_jpos_entry *e = common_jpos_find(&L->pos, path);
  c->src = (acg_src){e ? e->line : 0, e ? e->col : 0, path};
  check_fields(L, v, path, k_compute_fields);
  get_name(L, v, path, &c->name);
  int kind = 0;
  int kind_ok = get_enum(L, v, path, "kind", "compute kind", k_compute_kinds, &kind);
  c->kind = (acg_compute_kind)kind;
  int has_dims = get_dims(L, v, path, c);
  uint32_t lanes = 0;
  int has_lanes = get_uint(L, v, path, "lanes", 0, 1, 65536, &lanes);
  if (kind_ok) {
    if (c->kind == ACG_SIMD) {
      if (!has_lanes && !json_object_get(v, "lanes"))
        report_missing(L, path, "lanes", "the number of SIMD lanes");
      if (json_object_get(v, "dims"))
        report(L, common_jpath_key(L->arena, path, "dims"), 1,
               "a simd unit has 'lanes', not 'dims'");
      c->dims[0] = lanes ? lanes : 1;
      c->n_dims = 1;
    } else {
      if (json_object_get(v, "lanes"))
        report(L, common_jpath_key(L->arena, path, "lanes"), 1,
               "only a simd unit has 'lanes' (this one is '%s')", k_compute_kinds[c->kind]);
      if (c->kind == ACG_SYSTOLIC && !has_dims && !json_object_get(v, "dims"))
        report_missing(L, path, "dims", "the array shape, e.g. [16, 16]");
    }
  }
  get_uint(L, v, path, "instances", 0, 1, 1u << 20, &c->instances);
  if (get_uint(L, v, path, "weight_buffers", 0, 1, 2, &c->weight_buffers) && kind_ok &&
      c->kind != ACG_SYSTOLIC)
    report(L, common_jpath_key(L->arena, path, "weight_buffers"), 1,
           "only a systolic array has 'weight_buffers' (this one is '%s')", k_compute_kinds[c->kind]);
  get_number(L, v, path, "area_mm2", 0, 1, 1e6, &c->area_mm2);
  get_string(L, v, path, "about", 0, &c->about);

  char *p;
  json_t *caps = get_array(L, v, path, "capabilities", 1, ACG_MAX_CAPS, &p);
  if (!caps) return;
  if (json_array_size(caps) == 0) {
    report(L, p, 0, "a compute node needs at least one capability");
    return;
  }
  c->caps = cov_arena_array(L->arena, ACG_MAX_CAPS, sizeof *c->caps);
  if (!c->caps) return;
  for (size_t i = 0; i < json_array_size(caps); i++)
    load_capability(L, json_array_get(caps, i), common_jpath_index(L->arena, p, i), c, c->caps,
                    &c->n_caps);
}

/* ---- edges ------------------------------------------------------------ */

static const char *const k_edge_fields[] = {"from",          "to",           "bandwidth_bytes_per_cycle",
                                            "latency_cycles", "bidirectional", "energy_pj_per_byte",
                                            "about",          "async",        NULL};

static int resolve_node(loader *L, const json_t *v, const char *path, const char *key) {
  const char *name = NULL;
  if (!get_string(L, v, path, key, 1, &name)) return -1;
  int id = acg_find_node(L->g, name);
  if (id >= 0) return id;
  const char *names[ACG_MAX_NODES + 1];
  int n = acg_n_nodes(L->g);
  for (int i = 0; i < n; i++) names[i] = acg_node_name(L->g, i);
  names[n] = NULL;
  const char *hint = closest(name, names);
  char *p = common_jpath_key(L->arena, path, key);
  if (hint)
    report(L, p, 0, "edge %s unknown node '%s' (did you mean '%s'?)",
           strcmp(key, "from") == 0 ? "from" : "to", name, hint);
  else
    report(L, p, 0, "edge %s unknown node '%s' (no storage or compute node has that name)",
           strcmp(key, "from") == 0 ? "from" : "to", name);
  return -1;
}

static int load_edge(loader *L, const json_t *v, const char *path, acg_edge *ed) {
  if (!check_object(L, v, path, "an edge")) return 0;
  const cov_jpos_entry *e = common_jpos_find(&L->pos, path);
  ed->src = (acg_src){e ? e->line : 0, e ? e->col : 0, path};
  check_fields(L, v, path, k_edge_fields);
  ed->from = resolve_node(L, v, path, "from");
  ed->to = resolve_node(L, v, path, "to");
  get_number_in(L, v, path, "bandwidth_bytes_per_cycle", 1, 0, ACG_MIN_BANDWIDTH, 1e9,
                &ed->bandwidth_bytes_per_cycle);
  get_uint(L, v, path, "latency_cycles", 0, 0, 1u << 24, &ed->latency_cycles);
  get_bool(L, v, path, "bidirectional", &ed->bidirectional);
  get_bool(L, v, path, "async", &ed->async);
  get_number(L, v, path, "energy_pj_per_byte", 0, 1, 1e6, &ed->pj_per_byte);
  get_string(L, v, path, "about", 0, &ed->about);
  return ed->from >= 0 && ed->to >= 0;
}

/* ---- backend and top level ---------------------------------------------- */

static const char *const k_backend_fields[] = {"name", "mcpu", "wave_size", "max_workgroup_threads",
                                               "code_object_version", "max_thread_registers", NULL};

/* The position of path's value (its key's with at_key), for checks made
 * after loading (acg_backend). */
static acg_src src_at(loader *L, const char *path, int at_key) {
  const cov_jpos_entry *e = common_jpos_find(&L->pos, path);
  acg_src s = {0, 0, path};
  if (e) {
    s.line = at_key && e->key_line ? e->key_line : e->line;
    s.col = at_key && e->key_line ? e->key_col : e->col;
  }
  return s;
}

/* The fields every backend section may hold, typed and in range. Which
 * backend the name is and which fields it takes is the registry's
 * question (acg_backend). */
static void load_backend(loader *L, const json_t *top) {
  char *p;
  acg_backend *be = &L->g->backend;
  be->doc_src = src_at(L, "$", 0);
  json_t *b = member(L, top, "$", "backend", 1, "an object naming the backend", &p);
  if (!b || !check_object(L, b, p, "the backend")) return;
  be->src = src_at(L, p, 0);
  check_fields(L, b, p, k_backend_fields);
  if (get_name(L, b, p, &be->name))
    be->name_src = src_at(L, common_jpath_key(L->arena, p, "name"), 0);
  if (get_string(L, b, p, "mcpu", 0, &be->mcpu))
    be->mcpu_src = src_at(L, common_jpath_key(L->arena, p, "mcpu"), 1);
  get_uint(L, b, p, "wave_size", 0, 1, 1024, &be->wave_size);
  get_uint(L, b, p, "max_workgroup_threads", 0, 1, 65536, &be->max_workgroup_threads);
  get_uint(L, b, p, "max_thread_registers", 0, 1, 65536, &be->max_thread_registers);
  if (get_uint(L, b, p, "code_object_version", 0, 4, 5, &be->code_object_version))
    be->code_object_src = src_at(L, common_jpath_key(L->arena, p, "code_object_version"), 1);
}

/* The GPU cost model's constants: every one given, fitted together. */
static const char *const k_calibration_fields[] = {
    "about",         "overlap",           "reg_eff",        "lat_mul",  "waves_per_unit", "copy_ops_gather",
    "copy_ops_elem", "copy_ops_nhwc_row", "ws_step_cycles", "ws_scale", "wg_step_cycles", NULL};

static void load_calibration(loader *L, const json_t *top) {
  acg_calibration *c = &L->g->calibration;
  char *p;
  json_t *v = member(L, top, "$", "calibration", 0, "the GPU cost model's fitted constants", &p);
  if (!v || !check_object(L, v, p, "the calibration")) return;
  check_fields(L, v, p, k_calibration_fields);
  c->given = true;
  c->src = src_at(L, p, 1);
  get_string(L, v, p, "about", 0, &c->about);
  get_number(L, v, p, "overlap", 1, 1, 1, &c->overlap);
  get_number(L, v, p, "reg_eff", 1, 0, 1, &c->reg_eff);
  get_number(L, v, p, "lat_mul", 1, 1, 16, &c->lat_mul);
  get_number_in(L, v, p, "waves_per_unit", 1, 0, 1, 64, &c->waves_per_unit);
  get_number(L, v, p, "copy_ops_gather", 1, 1, 1e4, &c->copy_ops_gather);
  get_number(L, v, p, "copy_ops_elem", 1, 1, 1e4, &c->copy_ops_elem);
  get_number(L, v, p, "copy_ops_nhwc_row", 1, 1, 1e4, &c->copy_ops_nhwc_row);
  get_number(L, v, p, "ws_step_cycles", 1, 1, 1e6, &c->ws_step_cycles);
  get_number(L, v, p, "ws_scale", 1, 0, 100, &c->ws_scale);
  get_number(L, v, p, "wg_step_cycles", 1, 1, 1e6, &c->wg_step_cycles);
}

static void check_unique_names(loader *L) {
  const cov_acg *g = L->g;
  for (int i = 0; i < acg_n_nodes(g); i++)
    for (int j = 0; j < i; j++)
      if (strcmp(acg_node_name(g, i), acg_node_name(g, j)) == 0) {
        const acg_src *first = acg_node_src(g, j);
        char *p = common_jpath_key(L->arena, acg_node_src(g, i)->path, "name");
        report(L, p ? p : acg_node_src(g, i)->path, 0,
               "duplicate node name '%s' (first defined at %u:%u, %s)", acg_node_name(g, i),
               first->line, first->col, first->path ? first->path : "?");
        break;
      }
}

static const char *const k_top_fields[] = {"acg_version", "name",    "about", "clock_mhz", "backend",
                                           "calibration", "storage", "compute", "edges", NULL};

static void load_document(loader *L, const json_t *top) {
  cov_acg *g = L->g;
  if (!check_object(L, top, "$", "an ACG")) return;
  check_fields(L, top, "$", k_top_fields);
  char *p;
  json_t *vv = member(L, top, "$", "acg_version", 1, "the schema version 1", &p);
  if (vv && (!json_is_integer(vv) || json_integer_value(vv) != ACG_VERSION))
    report(L, p, 0, "unsupported acg_version (this covenant reads version %d)", ACG_VERSION);
  if (get_name(L, top, "$", &g->name) == 0 && !g->name) g->name = "<unnamed>";
  get_string(L, top, "$", "about", 0, &g->about);
  get_number_in(L, top, "$", "clock_mhz", 1, 0, ACG_MIN_CLOCK_MHZ, 1e6, &g->clock_mhz);
  load_backend(L, top);
  load_calibration(L, top);

  json_t *st = get_array(L, top, "$", "storage", 1, ACG_MAX_NODES / 2, &p);
  if (st) {
    if (json_array_size(st) == 0) report(L, p, 0, "expected at least one storage node");
    g->n_storage = (int)json_array_size(st);
    g->storage = cov_arena_array(L->arena, json_array_size(st) + 1, sizeof *g->storage);
    for (int i = 0; g->storage && i < g->n_storage; i++)
      load_storage(L, json_array_get(st, (size_t)i), common_jpath_index(L->arena, p, (size_t)i),
                   &g->storage[i]);
  }
  json_t *cp = get_array(L, top, "$", "compute", 1, ACG_MAX_NODES / 2, &p);
  if (cp) {
    if (json_array_size(cp) == 0) report(L, p, 0, "expected at least one compute node");
    g->n_compute = (int)json_array_size(cp);
    g->compute = cov_arena_array(L->arena, json_array_size(cp) + 1, sizeof *g->compute);
    for (int i = 0; g->compute && i < g->n_compute; i++)
      load_compute(L, json_array_get(cp, (size_t)i), common_jpath_index(L->arena, p, (size_t)i),
                   &g->compute[i]);
  }
  /* Unnamed nodes (already reported) get placeholders so later passes can
   * still refer to them. */
  for (int i = 0; i < acg_n_nodes(g); i++) {
    const char **nm = i < g->n_storage ? &g->storage[i].name : &g->compute[i - g->n_storage].name;
    if (!*nm) *nm = cov_arena_printf(L->arena, "<node %d>", i);
  }
  check_unique_names(L);
  json_t *ed = get_array(L, top, "$", "edges", 1, ACG_MAX_EDGES, &p);
  /* Without the node lists every edge would dangle; one error says enough. */
  if (ed && st && cp) {
    g->edges = cov_arena_array(L->arena, json_array_size(ed) + 1, sizeof *g->edges);
    for (size_t i = 0; g->edges && i < json_array_size(ed); i++) {
      acg_edge edge = {0};
      if (load_edge(L, json_array_get(ed, i), common_jpath_index(L->arena, p, i), &edge))
        g->edges[g->n_edges++] = edge;
    }
  }
}

cov_status cov_acg_load_buffer(const char *data, size_t size, const char *name, cov_acg **out) {
  *out = NULL;
  if (!data) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_acg_load_buffer"), "no data");
  cov_loc floc = {.file = name};
  if (size > COV_ACG_MAX_FILE_BYTES)
    return cov_error(COV_OUT_OF_RANGE, &floc, "ACG is larger than the limit of %u bytes",
                     COV_ACG_MAX_FILE_BYTES);
  json_error_t jerr;
  json_t *root = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    /* Name the innermost value around the error, so even a syntax error
     * says where in the document it is. */
    cov_arena *scratch = cov_arena_create();
    cov_jpos pos = {0};
    if (scratch) common_jpos_build(&pos, data, size, scratch);
    cov_loc loc = {.file = name, .line = jerr.line > 0 ? (unsigned)jerr.line : 1,
                   .col = jerr.column > 0 ? (unsigned)jerr.column : 1};
    loc.path = common_jpos_path_at(&pos, loc.line, loc.col);
    cov_status st = cov_error(COV_PARSE_ERROR, &loc, "invalid JSON: %s%s", jerr.text,
                              strstr(jerr.text, "maximum parsing depth")
                                  ? " (arrays and objects nest at most 2048 deep)"
                                  : "");
    cov_arena_destroy(scratch);
    return st;
  }
  cov_arena *arena = cov_arena_create();
  cov_acg *g = arena ? cov_arena_alloc(arena, sizeof *g) : NULL;
  if (!g) {
    json_decref(root);
    cov_arena_destroy(arena);
    return cov_error(COV_OUT_OF_MEMORY, &floc, "out of memory loading ACG");
  }
  g->arena = arena;
  g->file = cov_arena_strdup(arena, name ? name : "<memory>");
  loader L = {.g = g, .arena = arena, .file = g->file};
  common_jpos_build(&L.pos, data, size, arena);
  load_document(&L, root);
  json_decref(root);
  if (!L.errors && cov_arena_failed(arena))
    L.errors = cov_error(COV_OUT_OF_MEMORY, &floc, "out of memory loading ACG");
  if (!L.errors) L.errors = acg_validate(g);
  if (L.errors) {
    cov_acg_free(g);
    return L.errors;
  }
  *out = g;
  return NULL;
}

void cov_acg_free(cov_acg *g) {
  if (g) cov_arena_destroy(g->arena);
}

const char *cov_acg_name(const cov_acg *g) { return g ? g->name : NULL; }
const char *cov_acg_backend(const cov_acg *g) { return g ? g->backend.name : NULL; }
const char *cov_acg_file(const cov_acg *g) { return g ? g->file : NULL; }

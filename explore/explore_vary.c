/* explore/explore_vary.c: sweep parameters, "PATH=V1,V2,...".
 *
 * PATH names a place in the base ACG's JSON document in one of three ways:
 * "<node>.<field>" (a storage or compute node by name; the field may go on
 * into nested objects, "dram.energy_pj_per_byte.read"), "<from>-><to>.<field>"
 * (an edge), or an RFC 6901 pointer "/storage/1/capacity". Everything that can
 * be checked without building a design is checked here, so a typo stops the
 * study before any work: the node, edge and field must exist (or be a field
 * the schema allows for that kind of object) and every value must parse. A
 * value that parses but makes an invalid ACG is the loader's to judge, per
 * design (explore_study.c). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "common/c_locale.h"
#include "common/edit_distance.h"
#include "explore/explore.h"

/* Fields the ACG schema (acg/README.md) allows, so a field that the base
 * leaves at its default can still be swept. `name` is left out on purpose:
 * renaming a node would orphan its edges. */
static const char *const k_storage_fields[] = {
    "kind", "capacity", "instances", "banks", "width_bits", "ports", "double_buffer",
    "bandwidth_bytes_per_cycle", "energy_pj_per_byte", "area_mm2", "about", NULL};
static const char *const k_compute_fields[] = {"kind", "dims", "lanes", "instances",
                                               "capabilities", "area_mm2", "about", NULL};
static const char *const k_edge_fields[] = {"bandwidth_bytes_per_cycle", "latency_cycles",
                                            "bidirectional", "energy_pj_per_byte", "about", NULL};
static const char *const k_top_fields[] = {"clock_mhz", "about", NULL};

static int in_list(const char *const *list, const char *s, size_t n) {
  for (int i = 0; list[i]; i++)
    if (strlen(list[i]) == n && strncmp(list[i], s, n) == 0) return 1;
  return 0;
}

json_t *explore_json_pointer(json_t *doc, const char *pointer) {
  if (!pointer || pointer[0] != '/') return NULL;
  json_t *cur = doc;
  const char *p = pointer + 1;
  char tok[256];
  for (;;) {
    size_t n = 0;
    while (*p && *p != '/') {
      char c = *p++;
      if (c == '~') { /* ~0 is '~', ~1 is '/' */
        if (*p == '0') c = '~';
        else if (*p == '1') c = '/';
        else return NULL;
        p++;
      }
      if (n + 1 >= sizeof tok) return NULL;
      tok[n++] = c;
    }
    tok[n] = 0;
    if (json_is_object(cur)) {
      cur = json_object_get(cur, tok);
    } else if (json_is_array(cur)) {
      char *end;
      errno = 0;
      unsigned long i = strtoul(tok, &end, 10);
      if (!n || *end || errno || (n > 1 && tok[0] == '0')) return NULL;
      cur = json_array_get(cur, i);
    } else {
      return NULL;
    }
    if (!cur) return NULL;
    if (!*p) return cur;
    p++;
  }
}

/* The storage or compute node object called `name`, and which array;
 * where there is none and `near` is given, the node name closest to it
 * when that looks like a typo of it (else NULL). */
static json_t *find_node(const json_t *doc, const char *name, const char **section, const char **near) {
  static const char *const k_sections[] = {"storage", "compute"};
  size_t bd = COV_EDIT_FAR;
  if (near) *near = NULL;
  for (int s = 0; s < 2; s++) {
    json_t *arr = json_object_get(doc, k_sections[s]);
    size_t i;
    json_t *n;
    json_array_foreach(arr, i, n) {
      const char *nm = json_string_value(json_object_get(n, "name"));
      if (nm && strcmp(nm, name) == 0) {
        if (section) *section = k_sections[s];
        if (near) *near = NULL;
        return n;
      }
      size_t d = nm && near ? common_edit_distance(name, nm) : COV_EDIT_FAR;
      if (d < bd) bd = d, *near = nm;
    }
  }
  if (near && *near && !common_is_near_miss(strlen(name), bd)) *near = NULL;
  return NULL;
}

static json_t *find_edge(const json_t *doc, const char *from, const char *to) {
  json_t *arr = json_object_get(doc, "edges");
  size_t i;
  json_t *e;
  json_array_foreach(arr, i, e) {
    const char *f = json_string_value(json_object_get(e, "from"));
    const char *t = json_string_value(json_object_get(e, "to"));
    if (f && t && strcmp(f, from) == 0 && strcmp(t, to) == 0) return e;
  }
  return NULL;
}

/* Where a vary writes: the object holding the field, and the field's name
 * (the last component of a dotted field). Intermediate objects must exist;
 * the last component must exist or be a schema field of the node. */
typedef struct vary_target {
  json_t *obj;         /* holds the field */
  const char *key;     /* field name in obj; NULL for an array element */
  size_t index;        /* array element index when key is NULL */
  json_t *node;        /* the storage/compute node, NULL for edges/others */
  const char *section; /* "storage", "compute" or NULL */
  const char *field;   /* top-level field within the node (rules key on it) */
} vary_target;

static cov_status resolve(const explore_vary *v, json_t *doc, vary_target *t, cov_arena *a) {
  memset(t, 0, sizeof *t);
  if (v->kind == EXPLORE_PATH_POINTER) {
    const char *last = strrchr(v->pointer, '/');
    char *parent_ptr = cov_arena_strndup(a, v->pointer, (size_t)(last - v->pointer));
    json_t *parent = parent_ptr[0] ? explore_json_pointer(doc, parent_ptr) : doc;
    json_t *leaf = explore_json_pointer(doc, v->pointer);
    if (!parent || !leaf)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v->param),
                       "JSON pointer %s names nothing in the base ACG",
                       v->pointer);
    t->obj = parent;
    if (json_is_array(parent)) t->index = strtoul(last + 1, NULL, 10);
    else {
      void *it = json_object_iter_at(parent, last + 1);
      if (!it) /* a key spelled with ~0/~1 escapes */
        return cov_error(COV_UNSUPPORTED, COV_AT_OPTION("--vary", v->param),
                         "escaped keys (~0, ~1) are not supported");
      t->key = cov_arena_strdup(a, json_object_iter_key(it));
    }
    /* /storage/N/field and /compute/N/field get the same derived rules as
     * node.field paths. */
    unsigned idx;
    char sec[16], fld[64];
    int used = 0;
    if (sscanf(v->pointer, "/%15[a-z]/%u/%63[a-z_0-9]%n", sec, &idx, fld, &used) == 3 &&
        (size_t)used == strlen(v->pointer) &&
        (strcmp(sec, "storage") == 0 || strcmp(sec, "compute") == 0)) {
      t->node = json_array_get(json_object_get(doc, sec), idx);
      t->section = strcmp(sec, "storage") == 0 ? "storage" : "compute";
      t->field = t->key;
    }
    return NULL;
  }
  json_t *obj;
  const char *const *allowed;
  if (v->kind == EXPLORE_PATH_EDGE) {
    obj = find_edge(doc, v->node, v->node2);
    if (!obj)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v->param),
                       "the base ACG has no edge from '%s' to '%s'", v->node,
                       v->node2);
    allowed = k_edge_fields;
  } else if (strcmp(v->node, "acg") == 0 && !find_node(doc, "acg", NULL, NULL)) {
    obj = doc; /* "acg.clock_mhz": the top level */
    allowed = k_top_fields;
  } else {
    const char *near;
    obj = find_node(doc, v->node, &t->section, &near);
    if (!obj && near)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v->param),
                       "the base ACG has no storage or compute node '%s' (did you mean '%s'?)", v->node, near);
    if (!obj)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v->param),
                       "the base ACG has no storage or compute node '%s'",
                       v->node);
    t->node = obj;
    allowed = strcmp(t->section, "storage") == 0 ? k_storage_fields : k_compute_fields;
  }
  /* Walk the dotted field. */
  const char *f = v->field;
  const char *dot = strchr(f, '.');
  size_t n0 = dot ? (size_t)(dot - f) : strlen(f);
  if (!json_object_getn(obj, f, n0) && !in_list(allowed, f, n0)) {
    char fname[COV_EDIT_MAX_NAME + 1];
    snprintf(fname, sizeof fname, "%.*s", (int)(n0 < COV_EDIT_MAX_NAME ? n0 : COV_EDIT_MAX_NAME), f);
    size_t n_allowed = 0;
    while (allowed[n_allowed]) n_allowed++;
    const char *near = n0 <= COV_EDIT_MAX_NAME ? common_nearest(fname, allowed, n_allowed) : NULL;
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v->param),
                     "'%.*s' is not a field of %s%s%s%s (see acg/README.md)",
                     (int)n0, f,
                     v->kind == EXPLORE_PATH_EDGE ? "an edge"
                     : t->node ? (strcmp(t->section, "storage") == 0 ? "a storage node"
                                                                     : "a compute node")
                               : "the ACG top level",
                     near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
  }
  t->field = cov_arena_strndup(a, f, n0);
  while (dot) {
    json_t *next = json_object_getn(obj, f, n0);
    if (!json_is_object(next))
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v->param),
                       "'%.*s' is not an object in the base ACG, so it has no '%s'", (int)n0, f, dot + 1);
    obj = next;
    f = dot + 1;
    dot = strchr(f, '.');
    n0 = dot ? (size_t)(dot - f) : strlen(f);
    if (!json_object_getn(obj, f, n0))
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", v->param), "the base ACG has no field '%.*s' there", (int)n0, f);
  }
  t->obj = obj;
  t->key = cov_arena_strndup(a, f, n0);
  return NULL;
}

/* "8x8" -> [8, 8]; integers, reals, true/false; sizes with a binary unit and
 * words stay strings (the loader checks sizes, kinds and names). */
static json_t *parse_value(const char *s, const char *leaf) {
  if (!*s) return NULL;
  if (strcmp(s, "true") == 0) return json_true();
  if (strcmp(s, "false") == 0) return json_false();
  if (isdigit((unsigned char)s[0]) && strchr(s, 'x')) {
    json_t *arr = json_array();
    const char *p = s;
    for (;;) {
      char *end;
      errno = 0;
      long long d = strtoll(p, &end, 10);
      if (end == p || errno || d < 0 || (*end && *end != 'x')) {
        json_decref(arr);
        return NULL;
      }
      json_array_append_new(arr, json_integer(d));
      if (!*end) return arr;
      p = end + 1;
    }
  }
  char *end;
  errno = 0;
  long long i = strtoll(s, &end, 10);
  if (!*end && !errno) return json_integer(i);
  errno = 0;
  double d = common_strtod(s, &end); /* '.' whatever the caller's locale */
  if (!*end && !errno && end != s) return json_real(d);
  uint64_t bytes;
  if (acg_parse_size(s, &bytes) == 0) return json_string(s);
  /* Free text only where the schema has words. */
  if (leaf && (strcmp(leaf, "kind") == 0 || strcmp(leaf, "about") == 0 ||
               strcmp(leaf, "name") == 0 || strcmp(leaf, "op") == 0 || strcmp(leaf, "in") == 0 ||
               strcmp(leaf, "out") == 0 || strcmp(leaf, "mcpu") == 0))
    return json_string(s);
  return NULL;
}

cov_status explore_vary_parse(cov_arena *a, const char *spec, const json_t *base,
                              explore_vary *out) {
  memset(out, 0, sizeof *out);
  out->spec = cov_arena_strdup(a, spec);
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", spec),
                     "expected PATH=V1,V2,... (e.g. pe_array.dims=8x8,16x16)");
  char *param = cov_arena_strndup(a, spec, (size_t)(eq - spec));
  out->param = param;
  if (param[0] == '/') {
    out->kind = EXPLORE_PATH_POINTER;
    out->pointer = param;
  } else {
    const char *arrow = strstr(param, "->");
    const char *dot = strchr(arrow ? arrow + 2 : param, '.');
    if (!dot || dot[1] == 0 || dot == param || (arrow && (arrow == param || dot == arrow + 2)))
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", param),
                       "expected <node>.<field>, <from>-><to>.<field> or a JSON "
                       "pointer /storage/N/<field>");
    if (arrow) {
      out->kind = EXPLORE_PATH_EDGE;
      out->node = cov_arena_strndup(a, param, (size_t)(arrow - param));
      out->node2 = cov_arena_strndup(a, arrow + 2, (size_t)(dot - arrow - 2));
    } else {
      out->kind = EXPLORE_PATH_NODE;
      out->node = cov_arena_strndup(a, param, (size_t)(dot - param));
    }
    out->field = cov_arena_strdup(a, dot + 1);
  }
  /* The path must resolve in the base document. */
  json_t *copy = json_deep_copy(base);
  vary_target t;
  cov_status st = resolve(out, copy, &t, a);
  json_decref(copy);
  if (st) return st;

  const char *vals = eq + 1;
  if (!*vals) return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", param), "no values after '='");
  out->text = cov_arena_array(a, EXPLORE_MAX_VALUES, sizeof *out->text);
  out->value = calloc(EXPLORE_MAX_VALUES, sizeof *out->value);
  if (!out->value) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  const char *p = vals;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (out->n_values == EXPLORE_MAX_VALUES)
      return cov_error(COV_OUT_OF_RANGE, COV_AT_OPTION("--vary", param), "more than %d values",
                       EXPLORE_MAX_VALUES);
    char *txt = cov_arena_strndup(a, p, n);
    json_t *jv = parse_value(txt, t.key);
    if (!jv)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", param),
                       "cannot parse value '%s' (expected a number, NxM dims, a size "
                       "such as 64KiB, or true/false)", txt);
    for (int k = 0; k < out->n_values; k++)
      if (strcmp(out->text[k], txt) == 0) {
        json_decref(jv);
        return cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", param), "value '%s' given twice",
                         txt);
      }
    out->text[out->n_values] = txt;
    out->value[out->n_values++] = jv;
    if (!comma) break;
    p = comma + 1;
  }
  return NULL;
}

void explore_vary_release(explore_vary *v) {
  if (!v->value) return;
  for (int i = 0; i < v->n_values; i++) json_decref(v->value[i]);
  free(v->value);
  v->value = NULL;
}

/* ---- derived-parameter rules ---- */

static double num(const json_t *j) { return json_is_number(j) ? json_number_value(j) : 0; }

static void notef(char *note, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void notef(char *note, size_t size, const char *fmt, ...) {
  size_t used = strlen(note);
  if (used + 1 >= size) return;
  if (used) {
    snprintf(note + used, size - used, "; ");
    used = strlen(note);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(note + used, size - used, fmt, ap);
  va_end(ap);
}

static void scale_area(json_t *node, double ratio, const char *name, char *note, size_t size) {
  json_t *ar = json_object_get(node, "area_mm2");
  if (!json_is_number(ar) || ratio == 1) return;
  double old = json_number_value(ar);
  json_object_set_new(node, "area_mm2", json_real(old * ratio));
  notef(note, size, "%s.area_mm2 %g->%g", name, old, old * ratio);
}

static int cap_has_mac(const json_t *cap) {
  const json_t *op = json_object_get(cap, "op");
  if (json_is_string(op)) return strcmp(json_string_value(op), "mac") == 0;
  size_t i;
  json_t *o;
  json_array_foreach(op, i, o) if (json_is_string(o) && strcmp(json_string_value(o), "mac") == 0) return 1;
  return 0;
}

/* dims of a systolic/matrix unit: mac capabilities whose tile matched the
 * old dims take the new ones, throughputs equal to the old PE count take the
 * new PE count, and area scales with the PE count. */
static void rule_dims(json_t *node, const json_t *old, const json_t *new_, char *note, size_t size) {
  const char *name = json_string_value(json_object_get(node, "name"));
  double o0 = num(json_array_get(old, 0)), o1 = json_array_size(old) > 1 ? num(json_array_get(old, 1)) : 1;
  double n0 = num(json_array_get(new_, 0)), n1 = json_array_size(new_) > 1 ? num(json_array_get(new_, 1)) : 1;
  if (!json_is_array(old) || !json_is_array(new_) || o0 <= 0 || o1 <= 0 || n0 <= 0 || n1 <= 0 ||
      (o0 == n0 && o1 == n1))
    return;
  size_t i;
  json_t *cap;
  json_array_foreach(json_object_get(node, "capabilities"), i, cap) {
    if (!cap_has_mac(cap)) continue;
    json_t *tile = json_object_get(cap, "tile");
    if (json_is_array(tile) && json_array_size(tile) >= 2 && num(json_array_get(tile, 0)) == o0 &&
        num(json_array_get(tile, 1)) == o1) {
      json_array_set_new(tile, 0, json_integer((json_int_t)n0));
      json_array_set_new(tile, 1, json_integer((json_int_t)n1));
      notef(note, size, "%s mac tile %gx%g->%gx%g", name, o0, o1, n0, n1);
    }
    json_t *tp = json_object_get(cap, "throughput");
    if (json_is_number(tp) && json_number_value(tp) == o0 * o1) {
      json_object_set_new(cap, "throughput", json_real(n0 * n1));
      notef(note, size, "%s mac throughput %g->%g", name, o0 * o1, n0 * n1);
    }
  }
  scale_area(node, (n0 * n1) / (o0 * o1), name, note, size);
}

/* lanes of a SIMD unit: every capability's throughput and 1-D tile scale by
 * new/old lanes (they are per-lane rates), and so does area. */
static void rule_lanes(json_t *node, double o, double n, char *note, size_t size) {
  const char *name = json_string_value(json_object_get(node, "name"));
  if (o <= 0 || n <= 0) return;
  size_t i;
  json_t *cap;
  json_array_foreach(json_object_get(node, "capabilities"), i, cap) {
    json_t *tp = json_object_get(cap, "throughput");
    if (json_is_number(tp)) json_object_set_new(cap, "throughput", json_real(json_number_value(tp) * n / o));
    json_t *tile = json_object_get(cap, "tile");
    if (json_is_array(tile) && json_array_size(tile) == 1 && num(json_array_get(tile, 0)) == o)
      json_array_set_new(tile, 0, json_integer((json_int_t)n));
  }
  notef(note, size, "%s throughputs x%g", name, n / o);
  scale_area(node, n / o, name, note, size);
}

/* Whether the instances o of a compute node of `kind` are an NPU's cores,
 * as the mapper (map_cores) and npu-sim take them: a systolic array's; a
 * matrix unit's where every on-chip storage node is one per unit or one
 * shared (a GPU's matrix units are several per CU: not cores). */
static bool cores_unit(const json_t *doc, const char *kind, double o) {
  if (strcmp(kind, "systolic") == 0) return true;
  if (strcmp(kind, "matrix") != 0) return false;
  size_t i;
  json_t *node;
  json_array_foreach(json_object_get(doc, "storage"), i, node) {
    const char *k = json_string_value(json_object_get(node, "kind"));
    const json_t *in = json_object_get(node, "instances");
    double c = in ? num(in) : 1;
    if ((!k || strcmp(k, "dram") != 0) && c != 1 && c != o) return false;
  }
  return true;
}

/* instances of a systolic array or matrix unit that are cores
 * (cores_unit, backends/npu-sim ISA.md "Cores"): every other compute node
 * and every on-chip scratchpad or register file that had the unit's
 * instances keeps one per core, with area scaled by new/old; nodes of
 * other counts (DRAM, a shared buffer) stay. */
static void rule_cores(json_t *doc, const json_t *array, double o, double n, char *note, size_t size) {
  static const char *const sections[] = {"compute", "storage"};
  for (int k = 0; k < 2; k++) {
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(doc, sections[k]), i, node) {
      if (node == array) continue;
      const char *kind = json_string_value(json_object_get(node, "kind"));
      if (k == 1 && (!kind || (strcmp(kind, "scratchpad") != 0 && strcmp(kind, "regfile") != 0))) continue;
      const json_t *in = json_object_get(node, "instances");
      if ((in ? num(in) : 1) != o) continue;
      const char *name = json_string_value(json_object_get(node, "name"));
      json_object_set_new(node, "instances", json_integer((json_int_t)n));
      notef(note, size, "%s.instances %g->%g", name ? name : "?", o, n);
      scale_area(node, n / o, name, note, size);
    }
  }
}

static double size_of(const json_t *j) {
  if (json_is_number(j)) return json_number_value(j);
  uint64_t b;
  if (json_is_string(j) && acg_parse_size(json_string_value(j), &b) == 0) return (double)b;
  return 0;
}

cov_status explore_vary_apply(const explore_vary *v, int which, json_t *doc, char *note,
                              size_t note_size) {
  cov_arena *a = cov_arena_create();
  if (!a) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  note[0] = 0;
  vary_target t;
  cov_status st = resolve(v, doc, &t, a);
  if (st) {
    cov_arena_destroy(a);
    return st;
  }
  json_t *old = t.key ? json_object_get(t.obj, t.key) : json_array_get(t.obj, t.index);
  if (old) json_incref(old);
  json_t *val = json_deep_copy(v->value[which]);
  if (t.key) json_object_set_new(t.obj, t.key, val);
  else json_array_set_new(t.obj, t.index, val);
  /* Rules key on a node's own top-level field being replaced as a whole. */
  if (t.node && t.obj == t.node && t.field && strcmp(t.key, t.field) == 0) {
    const char *name = json_string_value(json_object_get(t.node, "name"));
    const char *kind = json_string_value(json_object_get(t.node, "kind"));
    if (strcmp(t.section, "compute") == 0 && strcmp(t.key, "dims") == 0 && kind &&
        (strcmp(kind, "systolic") == 0 || strcmp(kind, "matrix") == 0)) {
      rule_dims(t.node, old, val, note, note_size);
    } else if (strcmp(t.section, "compute") == 0 && strcmp(t.key, "lanes") == 0 && old) {
      rule_lanes(t.node, num(old), num(val), note, note_size);
    } else if (strcmp(t.section, "storage") == 0 && strcmp(t.key, "capacity") == 0) {
      double o = size_of(old), n = size_of(val);
      if (o > 0 && n > 0) scale_area(t.node, n / o, name, note, note_size);
    } else if (strcmp(t.key, "instances") == 0) {
      double o = old ? num(old) : 1, n = num(val);
      if (o > 0 && n > 0) scale_area(t.node, n / o, name, note, note_size);
      if (o > 0 && n > 0 && o != n && strcmp(t.section, "compute") == 0 && kind && cores_unit(doc, kind, o))
        rule_cores(doc, t.node, o, n, note, note_size);
    }
  }
  json_decref(old);
  cov_arena_destroy(a);
  return NULL;
}

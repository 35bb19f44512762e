/* runtime/crt_json.h: the artifact manifest's JSON reader.
 *
 * A small, bounded reader of RFC 8259 JSON into a tree of nodes that keep
 * their line and column, so every manifest error points at its place. The
 * runtime has its own instead of Jansson because it must build on a bare
 * GPU machine (a C compiler, CMake and the driver; no package registry),
 * and because Jansson keeps no source positions. Limits: nesting depth 64,
 * 1,000,000 nodes, the text itself (the caller bounds it). Numbers keep
 * their double value and, when they are integers that fit, an exact int64. */
#ifndef CRT_JSON_H
#define CRT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "covenant/status.h"

typedef enum crt_json_kind {
  CRT_JSON_NULL,
  CRT_JSON_BOOL,
  CRT_JSON_NUMBER,
  CRT_JSON_STRING,
  CRT_JSON_ARRAY,
  CRT_JSON_OBJECT,
} crt_json_kind;

typedef struct crt_json crt_json;
struct crt_json {
  crt_json_kind kind;
  int line, col;
  int boolean;
  int is_int;      /* a number written without fraction or exponent, in int64 range */
  int64_t i;
  double d;
  char *str;       /* strings: NUL-terminated (embedded NULs refused) */
  size_t len;
  /* arrays and objects: n children; objects also their keys */
  size_t n;
  crt_json **items;
  char **keys;
};

typedef struct crt_json_doc crt_json_doc;

/* Parses text[0..size). `file` names the text in errors (line:col). */
cov_status crt_json_parse(const char *text, size_t size, const char *file, crt_json_doc **out);
const crt_json *crt_json_root(const crt_json_doc *doc);
void crt_json_free(crt_json_doc *doc);

/* Object member by key, NULL when absent. */
const crt_json *crt_json_get(const crt_json *obj, const char *key);
const char *crt_json_kind_name(crt_json_kind k);

#endif

/* runtime/crt_json.c: a bounded JSON reader with source positions (see
 * crt_json.h). Recursive descent; every allocation comes from one chunked
 * arena that crt_json_free releases at once. */
#include "runtime/crt_json.h"
#include "common/c_locale.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 64, MAX_NODES = 1000000, CHUNK = 64 * 1024 };

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char mem[];
} chunk;

struct crt_json_doc {
  chunk *chunks;
  crt_json *root;
};

typedef struct parser {
  const char *s, *end, *file;
  int line;
  const char *line_start;
  size_t nodes;
  crt_json_doc *doc;
  cov_status err;
} parser;

static void *doc_alloc(crt_json_doc *d, size_t n) {
  n = (n + 15) & ~(size_t)15;
  chunk *c = d->chunks;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > CHUNK ? n : CHUNK;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = d->chunks, c->used = 0, c->cap = cap;
    d->chunks = c;
  }
  void *p = c->mem + c->used;
  c->used += n;
  return p;
}

static int col_of(const parser *p) { return (int)(p->s - p->line_start) + 1; }

static void fail(parser *p, const char *msg) {
  if (p->err) return;
  cov_loc loc = {p->file, p->line, col_of(p), NULL};
  p->err = cov_error(COV_PARSE_ERROR, &loc, "%s", msg);
}

static void skip_ws(parser *p) {
  while (p->s < p->end) {
    char c = *p->s;
    if (c == '\n') {
      p->line++;
      p->s++;
      p->line_start = p->s;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      p->s++;
    } else {
      break;
    }
  }
}

static crt_json *new_node(parser *p, crt_json_kind k) {
  if (++p->nodes > MAX_NODES) {
    fail(p, "too many JSON values (limit 1000000)");
    return NULL;
  }
  crt_json *n = doc_alloc(p->doc, sizeof *n);
  if (!n) {
    fail(p, "out of memory");
    return NULL;
  }
  memset(n, 0, sizeof *n);
  n->kind = k, n->line = p->line, n->col = col_of(p);
  return n;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  *out = v;
  return 1;
}

/* A string at p->s (the opening quote); returns its bytes in the arena. */
static char *parse_string(parser *p, size_t *len_out) {
  const char *q = p->s + 1;
  size_t cap = 0;
  /* first pass: the end and an upper bound of the decoded size */
  while (q < p->end && *q != '"') {
    if ((unsigned char)*q < 0x20) {
      p->s = q;
      fail(p, "control character in a string (escape it)");
      return NULL;
    }
    if (*q == '\\') q++;
    q++, cap++;
  }
  if (q >= p->end) {
    fail(p, "unterminated string");
    return NULL;
  }
  char *out = doc_alloc(p->doc, cap * 3 + 1);
  if (!out) {
    fail(p, "out of memory");
    return NULL;
  }
  size_t n = 0;
  const char *s = p->s + 1;
  while (s < q) {
    char c = *s++;
    if (c != '\\') {
      out[n++] = c;
      continue;
    }
    char e = *s++;
    switch (e) {
      case '"': out[n++] = '"'; break;
      case '\\': out[n++] = '\\'; break;
      case '/': out[n++] = '/'; break;
      case 'b': out[n++] = '\b'; break;
      case 'f': out[n++] = '\f'; break;
      case 'n': out[n++] = '\n'; break;
      case 'r': out[n++] = '\r'; break;
      case 't': out[n++] = '\t'; break;
      case 'u': {
        unsigned u;
        if (q - s < 4 || !hex4(s, &u)) {
          p->s = s - 2;
          fail(p, "bad \\u escape");
          return NULL;
        }
        s += 4;
        if (u >= 0xD800 && u <= 0xDBFF) { /* a surrogate pair */
          unsigned lo;
          if (q - s < 6 || s[0] != '\\' || s[1] != 'u' || !hex4(s + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
            p->s = s - 6;
            fail(p, "unpaired surrogate in a \\u escape");
            return NULL;
          }
          s += 6;
          u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        } else if (u >= 0xDC00 && u <= 0xDFFF) {
          p->s = s - 6;
          fail(p, "unpaired surrogate in a \\u escape");
          return NULL;
        }
        if (u == 0) {
          p->s = s - 6;
          fail(p, "\\u0000 is not allowed in manifest strings");
          return NULL;
        }
        if (u < 0x80) {
          out[n++] = (char)u;
        } else if (u < 0x800) {
          out[n++] = (char)(0xC0 | (u >> 6)), out[n++] = (char)(0x80 | (u & 0x3F));
        } else if (u < 0x10000) {
          out[n++] = (char)(0xE0 | (u >> 12)), out[n++] = (char)(0x80 | ((u >> 6) & 0x3F));
          out[n++] = (char)(0x80 | (u & 0x3F));
        } else {
          out[n++] = (char)(0xF0 | (u >> 18)), out[n++] = (char)(0x80 | ((u >> 12) & 0x3F));
          out[n++] = (char)(0x80 | ((u >> 6) & 0x3F)), out[n++] = (char)(0x80 | (u & 0x3F));
        }
        break;
      }
      default:
        p->s = s - 2;
        fail(p, "bad escape in a string");
        return NULL;
    }
  }
  out[n] = '\0';
  *len_out = n;
  p->s = q + 1;
  return out;
}

static crt_json *parse_value(parser *p, int depth);

static crt_json *parse_number(parser *p) {
  crt_json *n = new_node(p, CRT_JSON_NUMBER);
  if (!n) return NULL;
  const char *s = p->s, *start = s;
  int is_int = 1;
  if (s < p->end && *s == '-') s++;
  if (s >= p->end || *s < '0' || *s > '9') {
    fail(p, "bad number");
    return NULL;
  }
  if (*s == '0') s++;
  else
    while (s < p->end && *s >= '0' && *s <= '9') s++;
  if (s < p->end && *s == '.') {
    is_int = 0, s++;
    if (s >= p->end || *s < '0' || *s > '9') {
      p->s = s;
      fail(p, "bad number: digits expected after '.'");
      return NULL;
    }
    while (s < p->end && *s >= '0' && *s <= '9') s++;
  }
  if (s < p->end && (*s == 'e' || *s == 'E')) {
    is_int = 0, s++;
    if (s < p->end && (*s == '+' || *s == '-')) s++;
    if (s >= p->end || *s < '0' || *s > '9') {
      p->s = s;
      fail(p, "bad number: digits expected in the exponent");
      return NULL;
    }
    while (s < p->end && *s >= '0' && *s <= '9') s++;
  }
  size_t len = (size_t)(s - start);
  char buf[64];
  if (len >= sizeof buf) {
    fail(p, "number too long (63 characters at most)");
    return NULL;
  }
  memcpy(buf, start, len);
  buf[len] = '\0';
  n->d = common_strtod(buf, NULL); /* '.' whatever the caller's locale */
  if (is_int) {
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == 0) n->is_int = 1, n->i = v;
  }
  if (!isfinite(n->d)) {
    fail(p, "number out of range");
    return NULL;
  }
  p->s = s;
  return n;
}

static int starts(parser *p, const char *w) {
  size_t n = strlen(w);
  return (size_t)(p->end - p->s) >= n && !memcmp(p->s, w, n);
}

/* Grows a temporary list (malloc'ed; moved into the arena when done). */
typedef struct tmp_list {
  crt_json **items;
  char **keys;
  size_t n, cap;
} tmp_list;

static int tmp_push(tmp_list *t, char *key, crt_json *v) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 8;
    crt_json **ni = realloc(t->items, cap * sizeof *ni);
    if (!ni) return 0;
    t->items = ni;
    char **nk = realloc(t->keys, cap * sizeof *nk);
    if (!nk) return 0;
    t->keys = nk;
    t->cap = cap;
  }
  t->items[t->n] = v, t->keys[t->n] = key, t->n++;
  return 1;
}

static crt_json *finish_list(parser *p, crt_json *node, tmp_list *t, int with_keys) {
  node->n = t->n;
  if (t->n) {
    node->items = doc_alloc(p->doc, t->n * sizeof *node->items);
    if (node->items) memcpy(node->items, t->items, t->n * sizeof *node->items);
    if (with_keys) {
      node->keys = doc_alloc(p->doc, t->n * sizeof *node->keys);
      if (node->keys) memcpy(node->keys, t->keys, t->n * sizeof *node->keys);
    }
    if (!node->items || (with_keys && !node->keys)) fail(p, "out of memory");
  }
  free(t->items), free(t->keys);
  return p->err ? NULL : node;
}

static crt_json *parse_container(parser *p, int depth, int object) {
  crt_json *node = new_node(p, object ? CRT_JSON_OBJECT : CRT_JSON_ARRAY);
  if (!node) return NULL;
  if (depth >= MAX_DEPTH) {
    fail(p, "JSON nested too deeply (limit 64)");
    return NULL;
  }
  p->s++;
  tmp_list t = {0};
  skip_ws(p);
  if (p->s < p->end && *p->s == (object ? '}' : ']')) {
    p->s++;
    return finish_list(p, node, &t, object);
  }
  for (;;) {
    skip_ws(p);
    char *key = NULL;
    if (object) {
      if (t.n >= 1024) { /* keeps the duplicate check's quadratic cost bounded */
        fail(p, "too many members in one object (limit 1024)");
        break;
      }
      if (p->s >= p->end || *p->s != '"') {
        fail(p, "expected a member name (a string)");
        break;
      }
      size_t kl;
      const char *at = p->s;
      int line = p->line;
      const char *ls = p->line_start;
      if (!(key = parse_string(p, &kl))) break;
      for (size_t k = 0; k < t.n; k++)
        if (!strcmp(t.keys[k], key)) {
          p->s = at, p->line = line, p->line_start = ls;
          fail(p, "duplicate member name");
          break;
        }
      if (p->err) break;
      skip_ws(p);
      if (p->s >= p->end || *p->s != ':') {
        fail(p, "expected ':' after a member name");
        break;
      }
      p->s++;
    }
    crt_json *v = parse_value(p, depth + 1);
    if (!v) break;
    if (!tmp_push(&t, key, v)) {
      fail(p, "out of memory");
      break;
    }
    skip_ws(p);
    if (p->s < p->end && *p->s == ',') {
      p->s++;
      continue;
    }
    if (p->s < p->end && *p->s == (object ? '}' : ']')) {
      p->s++;
      return finish_list(p, node, &t, object);
    }
    fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    break;
  }
  free(t.items), free(t.keys);
  return NULL;
}

static crt_json *parse_value(parser *p, int depth) {
  skip_ws(p);
  if (p->s >= p->end) {
    fail(p, "unexpected end of the text");
    return NULL;
  }
  char c = *p->s;
  if (c == '{' || c == '[') return parse_container(p, depth, c == '{');
  if (c == '"') {
    crt_json *n = new_node(p, CRT_JSON_STRING);
    if (n && !(n->str = parse_string(p, &n->len))) return NULL;
    return n;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p);
  static const struct {
    const char *w;
    crt_json_kind k;
    int b;
  } words[] = {{"true", CRT_JSON_BOOL, 1}, {"false", CRT_JSON_BOOL, 0}, {"null", CRT_JSON_NULL, 0}};
  for (size_t i = 0; i < 3; i++)
    if (starts(p, words[i].w)) {
      crt_json *n = new_node(p, words[i].k);
      if (!n) return NULL;
      n->boolean = words[i].b;
      p->s += strlen(words[i].w);
      return n;
    }
  fail(p, "expected a JSON value");
  return NULL;
}

cov_status crt_json_parse(const char *text, size_t size, const char *file, crt_json_doc **out) {
  *out = NULL;
  crt_json_doc *doc = calloc(1, sizeof *doc);
  if (!doc) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  parser p = {text, text + size, file, 1, text, 0, doc, NULL};
  if (memchr(text, '\0', size)) {
    p.s = memchr(text, '\0', size);
    for (const char *q = text; q < p.s; q++)
      if (*q == '\n') p.line++, p.line_start = q + 1;
    fail(&p, "NUL byte in the JSON text");
  }
  crt_json *root = p.err ? NULL : parse_value(&p, 0);
  if (root) {
    skip_ws(&p);
    if (p.s != p.end) fail(&p, "trailing characters after the JSON value");
  }
  if (p.err) {
    crt_json_free(doc);
    return p.err;
  }
  doc->root = root;
  *out = doc;
  return NULL;
}

const crt_json *crt_json_root(const crt_json_doc *doc) { return doc->root; }

void crt_json_free(crt_json_doc *doc) {
  if (!doc) return;
  for (chunk *c = doc->chunks; c;) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
  free(doc);
}

const crt_json *crt_json_get(const crt_json *obj, const char *key) {
  if (!obj || obj->kind != CRT_JSON_OBJECT) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (!strcmp(obj->keys[i], key)) return obj->items[i];
  return NULL;
}

const char *crt_json_kind_name(crt_json_kind k) {
  static const char *names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
  return (unsigned)k < 6 ? names[k] : "?";
}

/* common/json_pos.c: a second, position-recording pass over JSON text. */
#include "common/json_pos.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deeper documents are refused by Jansson too (its limit is 2048). */
#define JPOS_MAX_DEPTH 2048

typedef struct scanner {
  const char *p, *end;
  unsigned line, col;
  cov_arena *arena;
  cov_jpos_entry *items;
  size_t n, cap;
  int failed;
} scanner;

static void advance(scanner *s) {
  unsigned char c = (unsigned char)*s->p++;
  if (c == '\n') {
    s->line++;
    s->col = 1;
  } else if ((c & 0xC0) != 0x80) { /* count characters, not UTF-8 bytes */
    s->col++;
  }
}

static void skip_ws(scanner *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    advance(s);
}

static void add(scanner *s, const char *path, unsigned line, unsigned col, unsigned kl,
                unsigned kc) {
  if (s->n == s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 64;
    cov_jpos_entry *ni = cov_arena_grow(s->arena, s->items, s->n, ncap, sizeof *ni);
    if (!ni) {
      s->failed = 1;
      return;
    }
    s->items = ni;
    s->cap = ncap;
  }
  s->items[s->n++] = (cov_jpos_entry){path, line, col, kl, kc, 0, 0};
}

static void put_utf8(char *out, size_t *n, uint32_t cp) {
  if (cp < 0x80) {
    out[(*n)++] = (char)cp;
  } else if (cp < 0x800) {
    out[(*n)++] = (char)(0xC0 | (cp >> 6));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out[(*n)++] = (char)(0xE0 | (cp >> 12));
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else {
    out[(*n)++] = (char)(0xF0 | (cp >> 18));
    out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  }
}

static int hex4(const char *p, const char *end, uint32_t *v) {
  if (end - p < 4) return 0;
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (d < 0) return 0;
    *v = *v * 16 + (uint32_t)d;
  }
  return 1;
}

/* Scans a string token; returns its decoded text (for keys) or NULL. */
static char *scan_string(scanner *s, int decode) {
  if (s->p >= s->end || *s->p != '"') {
    s->failed = 1;
    return NULL;
  }
  advance(s);
  const char *start = s->p;
  while (s->p < s->end && *s->p != '"') {
    if (*s->p == '\\' && s->p + 1 < s->end) advance(s);
    advance(s);
  }
  if (s->p >= s->end) {
    s->failed = 1;
    return NULL;
  }
  const char *stop = s->p;
  advance(s); /* closing quote */
  if (!decode) return NULL;
  /* Decoded UTF-8 is never longer than the escaped text. */
  char *out = cov_arena_alloc(s->arena, (size_t)(stop - start) + 1);
  if (!out) {
    s->failed = 1;
    return NULL;
  }
  size_t n = 0;
  for (const char *q = start; q < stop;) {
    if (*q != '\\') {
      out[n++] = *q++;
      continue;
    }
    q++;
    char e = q < stop ? *q++ : '\\';
    switch (e) {
      case 'b': out[n++] = '\b'; break;
      case 'f': out[n++] = '\f'; break;
      case 'n': out[n++] = '\n'; break;
      case 'r': out[n++] = '\r'; break;
      case 't': out[n++] = '\t'; break;
      case 'u': {
        uint32_t cp, lo;
        if (!hex4(q, stop, &cp)) break;
        q += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && stop - q >= 6 && q[0] == '\\' && q[1] == 'u' &&
            hex4(q + 2, stop, &lo) && lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          q += 6;
        }
        if (cp == 0) cp = '?'; /* a NUL cannot be part of a C-string key */
        put_utf8(out, &n, cp);
        break;
      }
      default: out[n++] = e; break;
    }
  }
  out[n] = '\0';
  return out;
}

static void scan_body(scanner *s, const char *path, int depth);

static void scan_value(scanner *s, const char *path, unsigned kl, unsigned kc, int depth) {
  skip_ws(s);
  if (s->failed || s->p >= s->end || depth > JPOS_MAX_DEPTH) {
    s->failed = 1;
    return;
  }
  size_t at = s->n;
  add(s, path, s->line, s->col, kl, kc);
  scan_body(s, path, depth);
  if (!s->failed && at < s->n) {
    s->items[at].end_line = s->line;
    s->items[at].end_col = s->col;
  }
}

static void scan_body(scanner *s, const char *path, int depth) {
  char c = *s->p;
  if (c == '{') {
    advance(s);
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
      advance(s);
      return;
    }
    while (!s->failed) {
      skip_ws(s);
      unsigned kline = s->line, kcol = s->col;
      char *key = scan_string(s, 1);
      if (!key) return;
      skip_ws(s);
      if (s->p >= s->end || *s->p != ':') {
        s->failed = 1;
        return;
      }
      advance(s);
      char *child = common_jpath_key(s->arena, path, key);
      if (!child) {
        s->failed = 1;
        return;
      }
      scan_value(s, child, kline, kcol, depth + 1);
      skip_ws(s);
      if (s->p < s->end && *s->p == ',') {
        advance(s);
        continue;
      }
      if (s->p < s->end && *s->p == '}') advance(s);
      else s->failed = 1;
      return;
    }
  } else if (c == '[') {
    advance(s);
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
      advance(s);
      return;
    }
    for (size_t i = 0; !s->failed; i++) {
      char *child = common_jpath_index(s->arena, path, i);
      if (!child) {
        s->failed = 1;
        return;
      }
      scan_value(s, child, 0, 0, depth + 1);
      skip_ws(s);
      if (s->p < s->end && *s->p == ',') {
        advance(s);
        continue;
      }
      if (s->p < s->end && *s->p == ']') advance(s);
      else s->failed = 1;
      return;
    }
  } else if (c == '"') {
    scan_string(s, 0);
  } else {
    /* number, true, false, null: up to the next delimiter */
    while (s->p < s->end && !strchr(",]} \t\r\n", *s->p)) advance(s);
  }
}

static int before(unsigned l1, unsigned c1, unsigned l2, unsigned c2) {
  return l1 < l2 || (l1 == l2 && c1 <= c2);
}

const char *common_jpos_path_at(const cov_jpos *idx, unsigned line, unsigned col) {
  const cov_jpos_entry *best = NULL;
  for (size_t i = 0; idx && i < idx->count; i++) {
    const cov_jpos_entry *e = &idx->entries[i];
    int open = e->end_line == 0 || !before(e->end_line, e->end_col, line, col);
    if (!before(e->line, e->col, line, col) || !open) continue;
    if (!best || before(best->line, best->col, e->line, e->col)) best = e;
  }
  return best ? best->path : "$";
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const cov_jpos_entry *)a)->path, ((const cov_jpos_entry *)b)->path);
}

void common_jpos_build(cov_jpos *out, const char *text, size_t size, cov_arena *arena) {
  scanner s = {.p = text, .end = text + size, .line = 1, .col = 1, .arena = arena};
  if (size >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
      (unsigned char)text[2] == 0xBF)
    s.p += 3;
  scan_value(&s, "$", 0, 0, 0);
  if (s.n) qsort(s.items, s.n, sizeof *s.items, cmp_entry);
  out->entries = s.items;
  out->count = s.n;
}

const cov_jpos_entry *common_jpos_find(const cov_jpos *idx, const char *path) {
  if (!idx || !idx->count || !path) return NULL;
  cov_jpos_entry key = {.path = path};
  return bsearch(&key, idx->entries, idx->count, sizeof key, cmp_entry);
}

static int is_ident(const char *k) {
  if (!*k || !((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || *k == '_')) return 0;
  for (; *k; k++)
    if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
          *k == '_'))
      return 0;
  return 1;
}

char *common_jpath_key(cov_arena *arena, const char *base, const char *key) {
  if (is_ident(key)) return cov_arena_printf(arena, "%s.%s", base, key);
  size_t n = strlen(key);
  char *q = cov_arena_alloc(arena, n * 2 + 1);
  if (!q) return NULL;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (key[i] == '"' || key[i] == '\\') q[j++] = '\\';
    q[j++] = key[i];
  }
  q[j] = '\0';
  return cov_arena_printf(arena, "%s[\"%s\"]", base, q);
}

char *common_jpath_index(cov_arena *arena, const char *base, size_t index) {
  return cov_arena_printf(arena, "%s[%zu]", base, index);
}

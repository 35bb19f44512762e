/* common/status.c: diagnostics as values (see covenant/status.h).
 *
 * A record owns copies of every string it points to, because the input it
 * describes (a JSON document, an arena) is usually freed before the status is
 * printed. One malloc per record keeps cov_status_free trivial. */
#include "covenant/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"

struct cov_status_rec {
  cov_code code;
  cov_loc loc;        /* strings point into `text` */
  const char *src_file;
  int src_line;
  char *message;      /* points into `text` */
  struct cov_status_rec *next;
  char text[];        /* message \0 file \0 path \0 */
};

/* Returned when allocating a status itself fails: errors must never be lost.
 * It is shared by every thread, so it is const and never written: it is only
 * ever the last record of a chain (cov_status_join keeps it there), so no
 * `next` of it is ever set, and it is never freed. */
static const struct cov_status_rec k_oom_rec = {COV_OUT_OF_MEMORY, {0}, __FILE__, 0, NULL, NULL};
#define k_oom (*(struct cov_status_rec *)&k_oom_rec)

static cov_status make_record(cov_code code, const cov_loc *where, const char *src_file,
                              int src_line, const char *msg) {
  const char *file = where && where->file ? where->file : "";
  const char *path = where && where->path ? where->path : "";
  size_t lm = strlen(msg) + 1, lf = strlen(file) + 1, lp = strlen(path) + 1;
  struct cov_status_rec *r = malloc(sizeof *r + lm + lf + lp);
  if (!r) return &k_oom;
  r->code = code == COV_OK ? COV_INTERNAL : code;
  r->src_file = src_file;
  r->src_line = src_line;
  r->next = NULL;
  r->message = r->text;
  memcpy(r->text, msg, lm);
  char *f = r->text + lm, *p = f + lf;
  memcpy(f, file, lf);
  memcpy(p, path, lp);
  r->loc.file = *f ? f : NULL;
  r->loc.path = *p ? p : NULL;
  r->loc.line = where ? where->line : 0;
  r->loc.col = where ? where->col : 0;
  return r;
}

cov_status cov_status_makev_(cov_code code, const cov_loc *where, const char *src_file,
                             int src_line, const char *fmt, va_list ap) {
  char small[512];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  cov_status st;
  if (n >= 0 && (size_t)n < sizeof small) {
    st = make_record(code, where, src_file, src_line, small);
  } else if (n < 0) {
    st = make_record(code, where, src_file, src_line, fmt);
  } else {
    char *big = malloc((size_t)n + 1);
    if (!big) {
      va_end(ap2);
      return &k_oom;
    }
    vsnprintf(big, (size_t)n + 1, fmt, ap2);
    st = make_record(code, where, src_file, src_line, big);
    free(big);
  }
  va_end(ap2);
  return st;
}

cov_status cov_status_make_(cov_code code, const cov_loc *where, const char *src_file,
                            int src_line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cov_status st = cov_status_makev_(code, where, src_file, src_line, fmt, ap);
  va_end(ap);
  return st;
}

cov_status cov_status_join(cov_status list, cov_status more) {
  if (!list) return more;
  if (!more) return list;
  if (list == &k_oom) return more == &k_oom ? list : cov_status_join(more, list);
  /* append `more` at the end of `list`, but before a trailing k_oom */
  cov_status prev = NULL, tail = list;
  while (tail->next) prev = tail, tail = tail->next;
  if (tail != &k_oom) {
    tail->next = more;
    return list;
  }
  if (more == &k_oom) return list;
  prev->next = more; /* prev exists: list != &k_oom */
  cov_status mt = more;
  while (mt->next) mt = mt->next;
  if (mt != &k_oom) mt->next = &k_oom;
  return list;
}

cov_status cov_status_annotate(cov_status st, const char *fmt, ...) {
  if (!st || st == &k_oom) return st;
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  cov_status out = NULL;
  for (cov_status r = st; r;) {
    cov_status next = r->next;
    if (r == &k_oom) {
      out = cov_status_join(out, r);
      break;
    }
    size_t n = strlen(prefix) + strlen(r->message) + 1;
    char *msg = malloc(n);
    cov_status nr;
    if (msg) {
      snprintf(msg, n, "%s%s", prefix, r->message);
      nr = make_record(r->code, &r->loc, r->src_file, r->src_line, msg);
      free(msg);
    } else {
      nr = &k_oom;
    }
    free(r);
    out = cov_status_join(out, nr);
    r = next;
  }
  return out;
}

cov_code cov_status_code(cov_status st) { return st ? st->code : COV_OK; }
const char *cov_status_message(cov_status st) {
  if (!st) return "ok";
  return st->message ? st->message : "out of memory";
}
cov_loc cov_status_loc(cov_status st) {
  cov_loc none = {0};
  return st ? st->loc : none;
}
cov_status cov_status_next(cov_status st) { return st ? st->next : NULL; }

size_t cov_status_count(cov_status st) {
  size_t n = 0;
  for (; st; st = st->next) n++;
  return n;
}

const char *cov_code_name(cov_code code) {
  switch (code) {
    case COV_OK: return "ok";
    case COV_INVALID_ARGUMENT: return "invalid argument";
    case COV_PARSE_ERROR: return "parse error";
    case COV_INVALID_INPUT: return "invalid input";
    case COV_NOT_FOUND: return "not found";
    case COV_IO_ERROR: return "I/O error";
    case COV_OUT_OF_MEMORY: return "out of memory";
    case COV_UNSUPPORTED: return "unsupported";
    case COV_OUT_OF_RANGE: return "out of range";
    case COV_MAPPING_FAILED: return "mapping failed";
    case COV_DEVICE_ERROR: return "device error";
    case COV_INTERNAL: return "internal error";
  }
  return "unknown";
}

/* A JSON path or file name longer than this is shown as its start, how much
 * was left out, and its end: a 100,000-deep document's path would otherwise
 * fill the line and push the message itself out of it. */
#define SHOW_MAX 240

/* s escaped (common/text.h: control bytes as \xNN, so a name read from an
 * input cannot drive the terminal) and, with `cut`, shortened in the middle. */
static void shown(const char *s, int cut, char *out, size_t size) {
  size_t n = strlen(s);
  if (!cut || n <= SHOW_MAX) {
    common_escape_n(s, n, out, size);
    return;
  }
  char head[SHOW_MAX], tail[SHOW_MAX];
  common_escape_n(s, SHOW_MAX / 2, head, sizeof head);
  common_escape_n(s + n - SHOW_MAX / 2, SHOW_MAX / 2, tail, sizeof tail);
  snprintf(out, size, "%s...(%zu bytes left out)...%s", head, n - SHOW_MAX, tail);
}

void cov_status_format(cov_status st, char *buf, size_t size) {
  if (!size) return;
  if (!st) {
    snprintf(buf, size, "ok");
    return;
  }
  char where[64] = "";
  if (st->loc.line && st->loc.col)
    snprintf(where, sizeof where, ":%u:%u", st->loc.line, st->loc.col);
  else if (st->loc.line)
    snprintf(where, sizeof where, ":%u", st->loc.line);
  char file[4 * SHOW_MAX + 64], path[4 * SHOW_MAX + 64];
  shown(st->loc.file ? st->loc.file : "", 1, file, sizeof file);
  shown(st->loc.path ? st->loc.path : "", 1, path, sizeof path);
  int k = snprintf(buf, size, "%s%s%serror: %s%s", file, where, st->loc.file ? ": " : "", path,
                   st->loc.path ? ": " : "");
  if (k < 0 || (size_t)k >= size) return;
  common_escape_text(cov_status_message(st), buf + k, size - (size_t)k);
}

void cov_status_print(FILE *out, cov_status st, int with_source) {
  for (; st; st = st->next) {
    /* sized for the whole message: escaping at most quadruples it */
    size_t need = 4 * strlen(cov_status_message(st)) + 2 * (4 * SHOW_MAX + 64) + 160;
    char small[4096], *buf = need <= sizeof small ? small : malloc(need);
    if (!buf) buf = small, need = sizeof small;
    cov_status_format(st, buf, need);
    if (with_source)
      fprintf(out, "%s [%s:%d]\n", buf, st->src_file ? st->src_file : "?", st->src_line);
    else
      fprintf(out, "%s\n", buf);
    if (buf != small) free(buf);
  }
}

void cov_status_free(cov_status st) {
  while (st && st != &k_oom) {
    cov_status next = st->next;
    free(st);
    st = next;
  }
}

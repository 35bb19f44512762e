/* covenant/status.h: the result of every fallible call.
 *
 * A cov_status is NULL on success. On failure it points to a heap record that
 * carries a code, a message, where in the *input* the problem is (file,
 * line:col, and a JSON path or graph node name) and where in covenant's own
 * code it was raised. Statuses chain, so a checker can report every error it
 * found in one file rather than stopping at the first. The caller owns the
 * chain and releases it with cov_status_free(). */
#ifndef COVENANT_STATUS_H
#define COVENANT_STATUS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "covenant/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cov_code {
  COV_OK = 0,
  COV_INVALID_ARGUMENT, /* a caller passed something the API does not accept */
  COV_PARSE_ERROR,      /* input text is not well-formed (JSON, codelet, protobuf) */
  COV_INVALID_INPUT,    /* well-formed input that breaks a rule of its schema */
  COV_NOT_FOUND,        /* a file, target or name that does not exist */
  COV_IO_ERROR,
  COV_OUT_OF_MEMORY,
  COV_UNSUPPORTED,      /* valid, but beyond what covenant implements */
  COV_OUT_OF_RANGE,     /* a size or number past a limit (overflow, too large) */
  COV_MAPPING_FAILED,   /* no schedule exists for this operation on this target */
  COV_DEVICE_ERROR,     /* the accelerator runtime reported an error */
  COV_INTERNAL,         /* a bug in covenant */
} cov_code;

/* Where in the input a problem lies. Any field may be empty (NULL or 0). */
typedef struct cov_loc {
  const char *file;  /* input file as the user named it */
  unsigned line;     /* 1-based; 0 when unknown */
  unsigned col;      /* 1-based; 0 when unknown */
  const char *path;  /* JSON path ("$.storage[2].capacity") or node name */
} cov_loc;

typedef struct cov_status_rec *cov_status;

/* Builds a status. Prefer the cov_error() macro, which records the call site. */
COV_API cov_status cov_status_make_(cov_code code, const cov_loc *where, const char *src_file,
                                    int src_line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
COV_API cov_status cov_status_makev_(cov_code code, const cov_loc *where, const char *src_file,
                                     int src_line, const char *fmt, va_list ap);

#define cov_error(code, where, ...) \
  cov_status_make_((code), (where), __FILE__, __LINE__, __VA_ARGS__)

#define COV_RETURN_IF_ERROR(expr)    \
  do {                               \
    cov_status cov_s_ = (expr);      \
    if (cov_s_) return cov_s_;       \
  } while (0)

/* Appends `more` to the end of the chain `list`; either may be NULL. */
COV_API cov_status cov_status_join(cov_status list, cov_status more);
/* Prefixes every message in the chain with context ("while loading x: ").*/
COV_API cov_status cov_status_annotate(cov_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

COV_API cov_code cov_status_code(cov_status st);
COV_API const char *cov_status_message(cov_status st);
COV_API cov_loc cov_status_loc(cov_status st);
COV_API cov_status cov_status_next(cov_status st);
COV_API size_t cov_status_count(cov_status st);
COV_API const char *cov_code_name(cov_code code);

/* Prints each diagnostic of the chain as "file:line:col: error: path: message".
 * With `with_source`, appends covenant's own source location (for bug reports). */
COV_API void cov_status_print(FILE *out, cov_status st, int with_source);
/* Formats the first diagnostic into buf (always NUL-terminated). */
COV_API void cov_status_format(cov_status st, char *buf, size_t size);

COV_API void cov_status_free(cov_status st);

#ifdef __cplusplus
}
#endif
#endif

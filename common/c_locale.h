/* common/c_locale.h: numbers read and written the same in every locale.
 *
 * printf's %f/%g/%e and strtod follow the calling thread's LC_NUMERIC: in a
 * program that set a decimal-comma locale (de_DE), 0.5 is written "0,5" and
 * "0.5" reads as 0. Files covenant writes and reads (study rows, CSVs, ACGs,
 * codelets, JSON, traces) must not depend on the caller's locale, so the
 * library reads and formats numbers in the "C" locale: per call with the
 * functions below, or for a whole public call with a scope (uselocale(3)
 * changes the calling thread only, so this is thread-safe and the caller's
 * setting is restored on the way out). */
#ifndef COV_C_LOCALE_H
#define COV_C_LOCALE_H

#include <locale.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* strtod in the "C" locale ('.' is the decimal point). */
double common_strtod(const char *s, char **end);

/* snprintf / vsnprintf / fprintf in the "C" locale. */
int common_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int common_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
int common_fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The "C" locale for the calling thread until common_c_locale_leave. */
typedef struct common_c_locale {
  locale_t c, saved; /* (locale_t)0 when the switch could not be made */
} common_c_locale;
void common_c_locale_enter(common_c_locale *scope);
void common_c_locale_leave(common_c_locale *scope);

#endif

/* common/c_locale.c: number text independent of the caller's locale. */
#include "common/c_locale.h"

#include <stdlib.h>

void common_c_locale_enter(common_c_locale *scope) {
  /* glibc returns its static C locale object here, so this allocates nothing */
  scope->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  scope->saved = scope->c ? uselocale(scope->c) : (locale_t)0;
  if (!scope->saved && scope->c) {
    freelocale(scope->c);
    scope->c = (locale_t)0;
  }
}

void common_c_locale_leave(common_c_locale *scope) {
  if (!scope->c) return;
  uselocale(scope->saved);
  freelocale(scope->c);
  scope->c = scope->saved = (locale_t)0;
}

double common_strtod(const char *s, char **end) {
  common_c_locale scope;
  common_c_locale_enter(&scope);
  double v = strtod(s, end);
  common_c_locale_leave(&scope);
  return v;
}

int common_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) {
  common_c_locale scope;
  common_c_locale_enter(&scope);
  int n = vsnprintf(buf, size, fmt, ap);
  common_c_locale_leave(&scope);
  return n;
}

int common_snprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = common_vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

int common_fprintf(FILE *f, const char *fmt, ...) {
  common_c_locale scope;
  common_c_locale_enter(&scope);
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(f, fmt, ap);
  va_end(ap);
  common_c_locale_leave(&scope);
  return n;
}

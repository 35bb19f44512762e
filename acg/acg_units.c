/* acg/acg_units.c: byte sizes with binary units ("64KiB"). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "acg/acg_ir.h"

static const struct {
  const char *suffix;
  unsigned shift;
} k_units[] = {{"B", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};

int acg_parse_size(const char *s, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return -1;
  uint64_t v = 0;
  const char *p = s;
  for (; isdigit((unsigned char)*p); p++) {
    if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
      return -2;
  }
  unsigned shift = 0;
  if (*p) {
    int found = 0;
    for (size_t i = 0; i < sizeof k_units / sizeof *k_units; i++)
      if (strcmp(p, k_units[i].suffix) == 0) {
        shift = k_units[i].shift;
        found = 1;
      }
    if (!found) return -1;
  }
  if (shift && v > (UINT64_MAX >> shift)) return -2;
  *out = v << shift;
  return 0;
}

void acg_format_size(uint64_t bytes, char *buf, size_t size) {
  for (int i = (int)(sizeof k_units / sizeof *k_units) - 1; i > 0; i--) {
    uint64_t unit = (uint64_t)1 << k_units[i].shift;
    if (bytes && bytes % unit == 0) {
      snprintf(buf, size, "%llu%s", (unsigned long long)(bytes / unit), k_units[i].suffix);
      return;
    }
  }
  snprintf(buf, size, "%lluB", (unsigned long long)bytes);
}

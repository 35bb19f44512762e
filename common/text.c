/* common/text.c: escaping input text for messages (see text.h). */
#include "common/text.h"

#include <stdio.h>
#include <string.h>

static char *escape(const char *s, size_t n, int keep_nl, char *out, size_t size) {
  if (!size) return out;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char e[8];
    if (c == '\n') strcpy(e, keep_nl ? "\n" : "\\n");
    else if (c == '\t') strcpy(e, "\\t");
    else if (c == '\r') strcpy(e, "\\r");
    else if (c == '\\' && !keep_nl) strcpy(e, "\\\\");
    else if (c < 0x20 || c == 0x7f) snprintf(e, sizeof e, "\\x%02x", c);
    else e[0] = (char)c, e[1] = '\0';
    size_t len = strlen(e);
    if (o + len + 1 > size || (i + 1 < n && o + len + 4 > size)) {
      /* no room for this and a "..." after it */
      size_t keep = size > 4 ? size - 4 : 0;
      if (o > keep) o = keep;
      const char *dots = "...";
      while (*dots && o + 1 < size) out[o++] = *dots++;
      out[o] = '\0';
      return out;
    }
    memcpy(out + o, e, len);
    o += len;
  }
  out[o] = '\0';
  return out;
}

char *common_escape_n(const char *s, size_t n, char *out, size_t size) {
  return escape(s, n, 0, out, size);
}

char *common_escape_text(const char *s, char *out, size_t size) {
  return escape(s ? s : "", s ? strlen(s) : 0, 1, out, size);
}

char *common_escape(const char *s, char *out, size_t size) {
  return common_escape_n(s ? s : "", s ? strlen(s) : 0, out, size);
}

/* common/text.h: input text made safe to show in a message. */
#ifndef COV_TEXT_H
#define COV_TEXT_H

#include <stddef.h>

/* Copies `s` into out (size bytes, NUL-terminated) with every control byte
 * (below 0x20, and 0x7f) and backslash written as a C escape (\n, \t, \\,
 * \xNN), so a name read from a file cannot move the cursor, color or clear a
 * terminal when printed; bytes from 0x80 up (UTF-8) are kept. When it does
 * not fit, it ends in "...". Returns out. */
char *common_escape(const char *s, char *out, size_t size);

/* The same for `n` bytes that may contain NULs (shown as \x00). */
char *common_escape_n(const char *s, size_t n, char *out, size_t size);

/* common_escape, but '\n' and '\\' kept: for messages, which are several
 * lines by design and hold names escaped already (the rest of the control
 * bytes are still escaped). */
char *common_escape_text(const char *s, char *out, size_t size);

#endif

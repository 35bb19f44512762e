/* common/json_pos.h: source positions for JSON values.
 *
 * Jansson (the JSON library covenant uses) reports line:col for syntax
 * errors but keeps no positions for the values of a document it parsed. Every
 * semantic error in an ACG or a sweep spec must still say where it is, so this
 * module scans the same text once more and maps each JSON path ("$.a[2].b")
 * to the line:col of its value and, for object members, of its key. */
#ifndef COV_JSON_POS_H
#define COV_JSON_POS_H

#include <stddef.h>

#include "covenant/arena.h"

typedef struct cov_jpos_entry {
  const char *path;
  unsigned line, col;         /* the value */
  unsigned key_line, key_col; /* the member's key; 0 for array elements and $ */
  unsigned end_line, end_col; /* just past the value; 0 if the text broke off inside it */
} cov_jpos_entry;

typedef struct cov_jpos {
  cov_jpos_entry *entries; /* sorted by path */
  size_t count;
} cov_jpos;

/* Scans `text`; on malformed input it stops early and keeps what it found
 * (callers parse with Jansson first, which reports the syntax error). */
void common_jpos_build(cov_jpos *out, const char *text, size_t size, cov_arena *arena);
/* The entry for `path`, or NULL. */
const cov_jpos_entry *common_jpos_find(const cov_jpos *idx, const char *path);

/* The path of the innermost value that contains line:col (for locating a
 * syntax error in a document that could not be fully scanned); "$" if none. */
const char *common_jpos_path_at(const cov_jpos *idx, unsigned line, unsigned col);

/* Appends ".key" (or ["key"] when key is not an identifier) to a path held
 * in an arena; returns the new string. Shared by the scanner and the loaders
 * so that both spell paths the same way. */
char *common_jpath_key(cov_arena *arena, const char *base, const char *key);
char *common_jpath_index(cov_arena *arena, const char *base, size_t index);

#endif

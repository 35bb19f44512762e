/* common/edit_distance.h: Levenshtein distance between names, for the
 * "did you mean ...?" hints of every loader (ACG fields and names, codelet
 * symbols and ops). Each caller keeps its own rule for which distances are
 * worth a hint. */
#ifndef COV_EDIT_DISTANCE_H
#define COV_EDIT_DISTANCE_H

#include <stddef.h>

/* Names longer than this are never near misses (the distance is then
 * COV_EDIT_FAR), which also bounds the work on hostile input. */
#define COV_EDIT_MAX_NAME 64
#define COV_EDIT_FAR 99

size_t common_edit_distance(const char *a, const char *b);

/* Whether a name at distance d from a word of len characters is worth a
 * "did you mean" for user-typed names (commands, options, targets, suite
 * layers): a few letters changed, or a left-out suffix (npu-32x32 for
 * npu-32x32-os), not most of the word. */
int common_is_near_miss(size_t len, size_t d);

/* The one of cands[0..n) closest to name when it is a near miss
 * (common_is_near_miss), else NULL: the "did you mean" of a user-typed name. */
const char *common_nearest(const char *name, const char *const *cands, size_t n);

#endif

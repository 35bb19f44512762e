/* codelets/cdl_verify.h: name resolution and the static rules of codelets. */
#ifndef CDL_VERIFY_H
#define CDL_VERIFY_H

#include "codelets/cdl_ir.h"

/* Resolves every name of a parsed codelet, checks the rules of
 * codelets/README.md (names defined once, ranks, affine indices, type
 * parameters bound by inputs, outputs written, float-only operations not
 * writing integers, ...) and fills in the affine form of every access.
 * Returns every error found, sorted by position. `arena` is the one that
 * holds the codelet. */
cov_status cdl_verify(cov_arena *arena, cdl_codelet *c);

#endif

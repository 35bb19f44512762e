/* codelets/cdl_parse.h: codelet source text -> unverified IR. */
#ifndef CDL_PARSE_H
#define CDL_PARSE_H

#include <stddef.h>

#include "codelets/cdl_ir.h"

/* Parses every codelet of `text` (`size` bytes, `file` names it in
 * diagnostics and must outlive the arena). Codelets that parse are returned
 * even when others have syntax errors; the status chain holds one error per
 * codelet that failed (the parser resynchronises at the next 'codelet'). */
cov_status cdl_parse(cov_arena *arena, const char *text, size_t size, const char *file,
                     cdl_codelet ***out, size_t *out_n);

#endif

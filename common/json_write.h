/* common/json_write.h: JSON documents written to files atomically. Apart
 * from common/fileio.h because the standalone runtime builds without
 * jansson. */
#ifndef COV_JSON_WRITE_H
#define COV_JSON_WRITE_H

#include <jansson.h>

#include "covenant/status.h"

/* Writes `doc` to `path` (json_dumpf flags) with common_out: the previous
 * file stays whole until the new one is complete. */
cov_status common_write_json(const char *path, const json_t *doc, size_t flags);

#endif

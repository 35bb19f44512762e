/* common/json_write.c: common_write_json. */
#include "common/json_write.h"

#include <errno.h>
#include <string.h>

#include "common/fileio.h"

cov_status common_write_json(const char *path, const json_t *doc, size_t flags) {
  common_out o;
  COV_RETURN_IF_ERROR(common_out_open(path, &o));
  if (json_dumpf(doc, o.f, flags) != 0) {
    int e = errno;
    cov_loc loc = {path, 0, 0, NULL};
    cov_status st = cov_error(COV_IO_ERROR, &loc, "write failed: %s", e ? strerror(e) : "cannot write the JSON document");
    common_out_abort(&o);
    return st;
  }
  return common_out_commit(&o);
}

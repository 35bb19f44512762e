/* cli/run_sequence.c: `covenant run` with sequence and optional inputs and
 * outputs (covenant/model.h's cov_sequence).
 *
 * On the command line a sequence (or an optional) is either an ONNX
 * SequenceProto / OptionalProto file (.pb, as the ONNX test data ships
 * them) or a folder of .npy files named 0.npy, 1.npy, ... in element
 * order (an empty folder: an empty sequence, an optional with no value).
 * An optional of a sequence is an OptionalProto file, or a folder: of the
 * sequence's elements, or holding only a file named NONE when the optional
 * holds none. Outputs are written as such a folder. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "covenant/model.h"
#include "covenant/tensor.h"

/* Whether name is "<decimal>.npy" (no sign, no leading zeros but "0"). */
static bool element_name(const char *name) {
  size_t n = strlen(name);
  if (n < 5 || strcmp(name + n - 4, ".npy") != 0) return false;
  for (size_t i = 0; i < n - 4; i++)
    if (name[i] < '0' || name[i] > '9') return false;
  return !(name[0] == '0' && n > 5);
}

/* How many element files (N.npy) the folder holds, bounded. */
static cov_status count_elements(const char *dir, size_t *count) {
  cov_loc loc = {.file = dir};
  DIR *d = opendir(dir);
  if (!d) return cov_error(COV_IO_ERROR, &loc, "cannot open the folder: %s", strerror(errno));
  *count = 0;
  struct dirent *e;
  cov_status st = NULL;
  while (!st && (e = readdir(d)))
    if (element_name(e->d_name) && ++*count > COV_SEQUENCE_MAX_LENGTH)
      st = cov_error(COV_OUT_OF_RANGE, &loc, "more than %d element files", COV_SEQUENCE_MAX_LENGTH);
  closedir(d);
  return st;
}

static cov_status read_folder(const char *dir, cov_sequence *seq) {
  size_t n = 0;
  COV_RETURN_IF_ERROR(count_elements(dir, &n));
  size_t room = strlen(dir) + 32;
  char *p = malloc(room);
  if (!p) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = NULL;
  for (size_t k = 0; k < n && !st; k++) {
    snprintf(p, room, "%s/%zu.npy", dir, k);
    struct stat sb;
    if (stat(p, &sb) != 0) {
      cov_loc loc = {.file = dir};
      st = cov_error(COV_INVALID_INPUT, &loc,
                     "element %zu (%zu.npy) is missing; the folder holds %zu element files, which must "
                     "be numbered from 0 without gaps", k, k, n);
      break;
    }
    cov_tensor t;
    st = cov_npy_read(p, &t);
    if (!st) {
      st = cov_sequence_append(seq, &t);
      cov_tensor_release(&t);
    }
  }
  free(p);
  return st;
}

/* Whether the folder holds the file NONE (an optional sequence holding
 * none), and then no element files. */
static cov_status none_marker(const char *dir, bool *none) {
  size_t room = strlen(dir) + 8, n = 0;
  char *p = malloc(room);
  if (!p) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  snprintf(p, room, "%s/NONE", dir);
  struct stat sb;
  *none = stat(p, &sb) == 0;
  free(p);
  COV_RETURN_IF_ERROR(count_elements(dir, &n));
  if (*none && n) {
    cov_loc loc = {.file = dir};
    return cov_error(COV_INVALID_INPUT, &loc,
                     "holds NONE (an optional holding no sequence) and %zu element files", n);
  }
  return NULL;
}

cov_status cli_read_sequence(const cov_model *m, size_t i, const char *path, cov_sequence **out) {
  *out = NULL;
  cov_dtype dt = COV_DTYPE_INVALID;
  int rank;
  int64_t shape[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(cov_model_input_info(m, i, &dt, &rank, shape));
  cov_value_kind kind = cov_model_io_kind(m, 0, i);
  bool opt = kind == COV_VALUE_OPTIONAL;
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return kind == COV_VALUE_OPTIONAL_SEQUENCE ? cov_onnx_optional_sequence_read(path, dt, out)
                                               : cov_onnx_sequence_read(path, dt, opt, out);
  cov_sequence *seq;
  bool none = false;
  if (kind == COV_VALUE_OPTIONAL_SEQUENCE) {
    COV_RETURN_IF_ERROR(none_marker(path, &none));
    COV_RETURN_IF_ERROR(cov_sequence_create_optional_sequence(dt, none, &seq));
  } else {
    COV_RETURN_IF_ERROR(cov_sequence_create(dt, opt, &seq));
  }
  cov_status st = none ? NULL : read_folder(path, seq);
  if (st) {
    cov_sequence_free(seq);
    return st;
  }
  *out = seq;
  return NULL;
}

cov_status cli_write_sequence(const char *dir, const cov_sequence *seq) {
  cov_loc loc = {.file = dir};
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return cov_error(COV_IO_ERROR, &loc, "cannot make the folder: %s", strerror(errno));
  size_t room = strlen(dir) + 32;
  char *p = malloc(room);
  if (!p) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = NULL;
  if (cov_sequence_is_none(seq)) {
    snprintf(p, room, "%s/NONE", dir);
    FILE *f = fopen(p, "wb");
    if (!f || fclose(f) != 0) st = cov_error(COV_IO_ERROR, &loc, "cannot write NONE: %s", strerror(errno));
  }
  for (size_t k = 0; k < cov_sequence_length(seq) && !st; k++) {
    snprintf(p, room, "%s/%zu.npy", dir, k);
    st = cov_npy_write(p, cov_sequence_at(seq, k));
  }
  free(p);
  return st;
}

void cli_print_sequence(const char *name, const cov_sequence *seq) {
  size_t n = cov_sequence_length(seq);
  if (cov_sequence_kind(seq) == COV_VALUE_OPTIONAL_SEQUENCE) {
    if (cov_sequence_is_none(seq))
      printf("output '%s': optional sequence of %s: none\n", name, cov_dtype_name(cov_sequence_dtype(seq)));
    else
      printf("output '%s': optional sequence of %zu %s tensor%s\n", name, n,
             cov_dtype_name(cov_sequence_dtype(seq)), n == 1 ? "" : "s");
  } else if (cov_sequence_is_optional(seq)) {
    printf("output '%s': optional %s: %s\n", name, cov_dtype_name(cov_sequence_dtype(seq)),
           n ? "has a value" : "none");
  } else {
    printf("output '%s': sequence of %zu %s tensor%s\n", name, n, cov_dtype_name(cov_sequence_dtype(seq)),
           n == 1 ? "" : "s");
  }
  for (size_t k = 0; k < n; k++) {
    char what[64];
    snprintf(what, sizeof what, "%s[%zu]", name, k);
    cli_print_output(what, cov_sequence_at(seq, k));
  }
}

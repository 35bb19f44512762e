/* cli/cli_util.c: usage errors, diagnostics and output files for commands. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "cli/cli.h"

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "covenant %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'covenant %s --help' for more information.\n", cmd);
  va_end(ap);
  return CLI_EXIT_USAGE;
}

int cli_report(cov_status st) {
  if (!st) return CLI_EXIT_OK;
  cov_status_print(stderr, st, 0);
  cov_status_free(st);
  return CLI_EXIT_INPUT;
}

FILE *cli_open_output(const char *path) {
  if (!path || strcmp(path, "-") == 0) return stdout;
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, "%s: error: cannot open for writing: %s\n", path, strerror(errno));
  return f;
}

int cli_close_output(FILE *f, const char *path) {
  int bad = ferror(f);
  if (f == stdout) bad |= fflush(f) != 0;
  else bad |= fclose(f) != 0;
  if (bad) {
    fprintf(stderr, "%s: error: write failed: %s\n", path ? path : "<stdout>", strerror(errno));
    return CLI_EXIT_INPUT;
  }
  return CLI_EXIT_OK;
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return 0;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
  }
  return 0;
}

/* explore/explore_plot.c: `covenant explore plot DIR` runs the shipped
 * matplotlib script (explore_plot.py) on a study folder. Plotting stays in
 * Python because matplotlib draws far better plots than anything we would
 * write in C; the CSVs are the interface, so the script can be rerun or
 * replaced without touching a study. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/search_path.h"
#include "explore/explore.h"

cov_status cov_explore_plot(const char *dir, const char *script) {
  char path[4096];
  if (!script) {
    COV_RETURN_IF_ERROR(common_resolve_data_file("explore_plot", "explore", ".py",
                                              "COVENANT_EXPLORE_PATH", path, sizeof path));
    script = path;
  }
  /* matplotlib comes from Debian (python3-matplotlib), so prefer Debian's
   * python over whatever python3 comes first on PATH. */
  const char *py = getenv("COVENANT_PYTHON");
  if (!py || !*py) py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return cov_error(COV_IO_ERROR, COV_AT_FILE(script), "fork failed: %s", strerror(errno));
  if (pid == 0) {
    execlp(py, py, script, dir, (char *)NULL);
    _exit(127); /* the parent says what it could not run */
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return cov_error(COV_INTERNAL, COV_AT_FILE(script), "waitpid: %s", strerror(errno));
  if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = script), "cannot run %s (exit 127); plotting needs it with "
                     "matplotlib (Debian: python3-matplotlib)", py);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = script),
                     "plotting failed (exit %d); it needs %s with matplotlib (Debian: python3-matplotlib)",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1, py);
  return NULL;
}

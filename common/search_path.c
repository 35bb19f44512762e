/* common/search_path.c: name -> file lookup for shipped data. */
#include "common/search_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int try_dir(const char *dir, size_t dir_len, const char *name, const char *ext, char *out,
                   size_t size) {
  int n = snprintf(out, size, "%.*s/%s%s", (int)dir_len, dir, name, ext);
  return n > 0 && (size_t)n < size && access(out, R_OK) == 0;
}

int common_shipped_dir(int index, const char *subdir, char *out, size_t size) {
  int k = -1;
  if (index == 0) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = '\0';
    k = snprintf(out, size, "%s/../share/covenant/%s", exe, subdir);
  } else if (index == 1) {
    k = snprintf(out, size, "%s/%s", COV_DATADIR, subdir);
  } else if (index == 2) {
    k = snprintf(out, size, "%s/%s", COV_SOURCEDIR, subdir);
  }
  return k > 0 && (size_t)k < size;
}

cov_status common_resolve_data_file(const char *name_or_path, const char *subdir, const char *ext,
                                 const char *env_var, char *out, size_t size) {
  cov_loc loc = {.file = name_or_path};
  if (!name_or_path || !*name_or_path)
    return cov_error(COV_INVALID_ARGUMENT, NULL, "empty %s name", subdir);
  if (strchr(name_or_path, '/') || ends_with(name_or_path, ext)) {
    if (strlen(name_or_path) >= size)
      return cov_error(COV_OUT_OF_RANGE, &loc, "path too long");
    if (access(name_or_path, R_OK) != 0)
      return cov_error(COV_NOT_FOUND, &loc, "no such file");
    strcpy(out, name_or_path);
    return NULL;
  }
  for (const char *c = name_or_path; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '-' || *c == '_' || *c == '.'))
      return cov_error(COV_INVALID_ARGUMENT, NULL, "'%s' is neither a path nor a %s name",
                       name_or_path, subdir);
  const char *env = env_var ? getenv(env_var) : NULL;
  if (env) {
    for (const char *p = env; *p;) {
      const char *colon = strchr(p, ':');
      size_t len = colon ? (size_t)(colon - p) : strlen(p);
      if (len && try_dir(p, len, name_or_path, ext, out, size)) return NULL;
      p += len + (colon ? 1 : 0);
    }
  }
  char dir[8192];
  for (int i = 0; i < COV_SHIPPED_DIRS; i++)
    if (common_shipped_dir(i, subdir, dir, sizeof dir) &&
        try_dir(dir, strlen(dir), name_or_path, ext, out, size))
      return NULL;
  return cov_error(COV_NOT_FOUND, NULL,
                   "no %s named '%s' (looked in $%s, %s/%s and %s/%s); pass a path to use "
                   "another file",
                   subdir, name_or_path, env_var ? env_var : "-", COV_DATADIR, subdir,
                   COV_SOURCEDIR, subdir);
}

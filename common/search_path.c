/* common/search_path.c: name -> file lookup for shipped data. */
#define _GNU_SOURCE /* dladdr */
#include "common/search_path.h"
#include "common/loc.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/text.h"

#include "common/edit_distance.h"

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int try_dir(const char *dir, size_t dir_len, const char *name, const char *ext, char *out,
                   size_t size) {
  int n = snprintf(out, size, "%.*s/%s%s", (int)dir_len, dir, name, ext);
  struct stat sb;
  return n > 0 && (size_t)n < size && stat(out, &sb) == 0 && S_ISREG(sb.st_mode) &&
         access(out, R_OK) == 0;
}

#ifndef COV_LIB_TO_DATA
#define COV_LIB_TO_DATA "../share/covenant"
#endif
#ifndef COV_BIN_TO_DATA
#define COV_BIN_TO_DATA "../share/covenant"
#endif

/* The folder of the file at `path` (cut at its last '/'), into out. */
static int dir_of(const char *path, char *out, size_t size) {
  const char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash - path) >= size) return 0;
  memcpy(out, path, (size_t)(slash - path));
  out[slash - path] = '\0';
  return 1;
}

/* <dir>/<rel>/<subdir>, with <dir>/<rel> made canonical when it exists (so
 * messages show .../share/covenant, not .../bin/../share/covenant). */
static int in_data_dir(const char *dir, const char *rel, const char *subdir, char *out, size_t size) {
  char joined[8192], real[4096];
  int n = snprintf(joined, sizeof joined, "%s/%s", dir, rel);
  if (n <= 0 || (size_t)n >= sizeof joined) return -1;
  return snprintf(out, size, "%s/%s", realpath(joined, real) ? real : joined, subdir);
}

int common_shipped_dir(int index, const char *subdir, char *out, size_t size) {
  int k = -1;
  char exe[4096], mod[4096], dir[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  if (index == 0) {
    /* Beside the file that holds this code: libcovenant.so in <prefix>/<libdir>
     * (a program linked against it, wherever the prefix was copied to), or
     * the program itself when linked statically (the covenant tool). The
     * relative paths are fixed at configure time from the install layout. */
    Dl_info info;
    if (!dladdr((void *)common_shipped_dir, &info) || !info.dli_fname) return 0;
    if (!realpath(info.dli_fname, mod)) return 0;
    if (!dir_of(mod, dir, sizeof dir)) return 0;
    char real_exe[4096];
    int is_exe = n > 0 && realpath(exe, real_exe) && strcmp(real_exe, mod) == 0;
    k = in_data_dir(dir, is_exe ? COV_BIN_TO_DATA : COV_LIB_TO_DATA, subdir, out, size);
  } else if (index == 1) {
    /* Beside the running program (bin/../share/covenant). */
    if (n <= 0 || !dir_of(exe, dir, sizeof dir)) return 0;
    k = in_data_dir(dir, COV_BIN_TO_DATA, subdir, out, size);
  } else if (index == 2) {
    k = snprintf(out, size, "%s/%s", COV_DATADIR, subdir);
  } else if (index == 3) {
    /* The source tree keeps the layer suite with the benchmarks. */
    k = snprintf(out, size, "%s/%s%s", COV_SOURCEDIR, strcmp(subdir, "suite") ? "" : "bench/", subdir);
  }
  return k > 0 && (size_t)k < size;
}

static cov_status lookup_name(const char *name, const char *subdir, const char *ext,
                              const char *env_var, char *out, size_t size, int path_ok);

cov_status common_resolve_data_file(const char *name_or_path, const char *subdir, const char *ext,
                                 const char *env_var, char *out, size_t size) {
  cov_loc loc = {.file = name_or_path};
  if (!name_or_path || !*name_or_path)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, subdir), "empty %s name", subdir);
  if (strchr(name_or_path, '/') || ends_with(name_or_path, ext)) {
    if (strlen(name_or_path) >= size)
      return cov_error(COV_OUT_OF_RANGE, &loc, "path too long");
    if (access(name_or_path, R_OK) != 0)
      return cov_error(COV_NOT_FOUND, &loc, "no such file");
    strcpy(out, name_or_path);
    return NULL;
  }
  return lookup_name(name_or_path, subdir, ext, env_var, out, size, 1);
}

cov_status common_resolve_data_name(const char *name, const char *subdir, const char *ext,
                                 const char *env_var, char *out, size_t size) {
  return lookup_name(name, subdir, ext, env_var, out, size, 0);
}

static cov_status lookup_name(const char *name, const char *subdir, const char *ext,
                              const char *env_var, char *out, size_t size, int path_ok) {
  const char *name_or_path = name;
  if (!name || !*name) return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, subdir), "empty %s name", subdir);
  int plain = path_ok || (strlen(name) <= 64 && name[0] != '.');
  for (const char *c = name; *c && plain; c++)
    plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '_' || *c == '.';
  if (!plain) {
    char shown[160];
    common_escape(name, shown, sizeof shown);
    int one = (int)(strlen(subdir) > 1 ? strlen(subdir) - 1 : strlen(subdir)); /* "target" */
    if (path_ok)
      return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, name), "'%s' is neither a path nor a %.*s name", shown,
                       one, subdir);
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, name),
                     "'%s' is not a %.*s name (names have up to 64 letters, digits, '-', '_' and "
                     "'.', not first), and it is not opened as a path",
                     shown, one, subdir);
  }
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
  /* Not found: the closest shipped name as a hint, and what there is. */
  common_data_names names;
  common_list_data_names(subdir, ext, env_var, &names);
  const char *near = NULL;
  size_t best = COV_EDIT_FAR, len = strlen(name_or_path);
  char list[1024] = "";
  for (int i = 0; i < names.n; i++) {
    size_t d = common_edit_distance(name_or_path, names.name[i]);
    if (d < best) best = d, near = names.name[i];
    size_t k = strlen(list);
    snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", names.name[i]);
  }
  /* A typo or a left-out suffix (npu-32x32 for npu-32x32-os), not another name. */
  if (near && !common_is_near_miss(len, best)) near = NULL;
  char what[64];
  snprintf(what, sizeof what, "%.*s", (int)(strlen(subdir) > 1 ? strlen(subdir) - 1 : strlen(subdir)), subdir);
  char hint[128] = "";
  if (near) snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
  /* A file of that name here was meant as a path (notjson.txt): say how
   * to pass it as one rather than opening what was given as a name. */
  char file_hint[400] = "";
  if (path_ok && access(name_or_path, F_OK) == 0)
    snprintf(file_hint, sizeof file_hint, "; a file '%s' exists: write ./%s to use it", name_or_path,
             name_or_path);
  return cov_error(COV_NOT_FOUND, COV_AT(NULL, name),
                   "no %s named '%s'%s%s; the %s found: %s (in $%s, share/covenant/%s beside the "
                   "library and the program, %s/%s, %s/%s); pass a path to use another file",
                   what, name_or_path, hint, file_hint, subdir, names.n ? list : "none", env_var ? env_var : "-",
                   subdir, COV_DATADIR, subdir, COV_SOURCEDIR, subdir);
}

/* One search folder's names, added when new. */
static void list_dir(const char *dir, size_t dir_len, const char *ext, common_data_names *out) {
  char path[4096];
  if (snprintf(path, sizeof path, "%.*s", (int)dir_len, dir) >= (int)sizeof path) return;
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) && out->n < COMMON_MAX_DATA_NAMES) {
    size_t n = strlen(e->d_name), m = strlen(ext);
    if (n <= m || n - m >= sizeof out->name[0] || strcmp(e->d_name + n - m, ext) != 0) continue;
    char name[sizeof out->name[0]];
    snprintf(name, sizeof name, "%.*s", (int)(n - m), e->d_name);
    int seen = 0;
    for (int i = 0; i < out->n && !seen; i++) seen = !strcmp(out->name[i], name);
    if (seen) continue;
    /* Sorted insertion: readdir's order is the file system's. */
    int at = out->n;
    while (at > 0 && strcmp(out->name[at - 1], name) > 0) {
      memcpy(out->name[at], out->name[at - 1], sizeof out->name[0]);
      at--;
    }
    memcpy(out->name[at], name, sizeof name);
    out->n++;
  }
  closedir(d);
}

void common_list_data_names(const char *subdir, const char *ext, const char *env_var,
                            common_data_names *out) {
  out->n = 0;
  const char *env = env_var ? getenv(env_var) : NULL;
  for (const char *p = env; p && *p;) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    if (len) list_dir(p, len, ext, out);
    p += len + (colon ? 1 : 0);
  }
  char dir[4096];
  for (int i = 0; i < COV_SHIPPED_DIRS; i++)
    if (common_shipped_dir(i, subdir, dir, sizeof dir)) list_dir(dir, strlen(dir), ext, out);
}

/* backends/amdgpu/amdgpu_hsaco.c: emit the object, link it with ld.lld. */
#include "backends/amdgpu/amdgpu_hsaco.h"
#include "common/loc.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/gpu/gpu_llvm.h"
#include "common/fileio.h"
#include "common/text.h"

extern char **environ;

/* Runs the linker, trying the names in order, its stdout and stderr into
 * `log` (so what it prints, an LLVM crash dump under a memory limit
 * included, never reaches the user raw: the error is covenant's own, with
 * lld's first line of diagnosis); returns its exit status, 128 + the signal
 * that killed it, or -1 when none could be started. */
static int run_lld(const char *obj, const char *out, const char *log, char *used, size_t used_size) {
  const char *env = getenv("COVENANT_LD_LLD");
  const char *candidates[] = {env, "ld.lld-19", "ld.lld", NULL};
  for (int i = 0; i < 3; i++) {
    if (!candidates[i] || !*candidates[i]) continue;
    char *argv[] = {(char *)candidates[i], "-shared", "--no-undefined", "--threads=1", "-o", (char *)out,
                    (char *)obj, NULL};
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) return -1;
    int ok = posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600) == 0 &&
             posix_spawn_file_actions_adddup2(&fa, 1, 2) == 0;
    pid_t pid;
    int spawned = ok && posix_spawnp(&pid, candidates[i], &fa, NULL, argv, environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    if (!spawned) continue;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    snprintf(used, used_size, "%s", candidates[i]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 128;
  }
  return -1;
}

/* lld's first line that says what went wrong (not the crash handler's
 * banner or stack dump), escaped, into out; "" when there is none. */
static void lld_first_line(const char *log, char *out, size_t size) {
  out[0] = '\0';
  char *text = NULL;
  size_t n = 0;
  cov_status st = common_read_file(log, 1 << 20, &text, &n);
  cov_status_free(st);
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    if (!*line || strstr(line, "PLEASE submit") || strstr(line, "Stack dump") || line[0] == ' ' ||
        line[0] == '#' || (line[0] >= '0' && line[0] <= '9'))
      continue;
    common_escape(line, out, size);
    break;
  }
  free(text);
}

/* the location of a diagnostic: the kernel module (named after its layer) */
static const char *module_name(LLVMModuleRef module) {
  size_t n;
  return LLVMGetModuleIdentifier(module, &n);
}

cov_status amdgpu_hsaco_build(LLVMModuleRef module, const amdgpu_hsaco_options *opts,
                              char **out_hsaco, size_t *out_size) {
  *out_hsaco = NULL;
  *out_size = 0;
  if (opts->code_object_version != 4 && opts->code_object_version != 5)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, module_name(module)), "code object version %u (expected 4 or 5)",
                     opts->code_object_version);
  /* LLVM 19 defaults to v5; Debian's HIP runtime (5.2) only loads v4. The
   * flag's value is the version times 100. */
  LLVMAddModuleFlag(module, LLVMModuleFlagBehaviorError, "amdhsa_code_object_version",
                    strlen("amdhsa_code_object_version"),
                    LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(
                                                         LLVMGetModuleContext(module)),
                                                     opts->code_object_version * 100, 0)));
  gpu_emit_options eo = {.triple = "amdgcn-amd-amdhsa", .mcpu = opts->mcpu, .features = "",
                         .opt_level = opts->opt_level, .kind = GPU_EMIT_OBJECT};
  char *obj = NULL;
  size_t obj_size = 0;
  COV_RETURN_IF_ERROR(gpu_llvm_emit(module, &eo, &obj, &obj_size));

  char dir[] = "/tmp/covenant-hsaco-XXXXXX";
  if (!mkdtemp(dir)) {
    free(obj);
    return cov_error(COV_IO_ERROR, COV_AT_FILE(dir), "cannot create a temporary directory: %s",
                     strerror(errno));
  }
  char obj_path[64], so_path[64], log_path[64], used[64] = "";
  snprintf(obj_path, sizeof obj_path, "%s/k.o", dir);
  snprintf(so_path, sizeof so_path, "%s/k.hsaco", dir);
  snprintf(log_path, sizeof log_path, "%s/lld.log", dir);
  cov_status st = common_write_file(obj_path, obj, obj_size);
  free(obj);
  if (!st) {
    int rc = run_lld(obj_path, so_path, log_path, used, sizeof used);
    char said[400];
    if (rc > 0) lld_first_line(log_path, said, sizeof said);
    if (rc == -1)
      st = cov_error(COV_NOT_FOUND, COV_AT(NULL, module_name(module)),
                     "cannot run ld.lld to link the HSACO (install lld-19 or set "
                     "COVENANT_LD_LLD)");
    else if (rc > 128)
      st = cov_error(COV_INTERNAL, COV_AT(NULL, module_name(module)),
                     "%s crashed linking the HSACO (signal %d; out of memory under a memory limit such as "
                     "ulimit -v?)%s%s",
                     used, rc - 128, said[0] ? ": " : "", said);
    else if (rc != 0)
      st = cov_error(COV_INTERNAL, COV_AT(NULL, module_name(module)), "%s failed to link the HSACO (exit status %d)%s%s",
                     used, rc, said[0] ? ": " : "", said);
    else
      st = common_read_file(so_path, (size_t)1 << 30, out_hsaco, out_size);
  }
  unlink(obj_path);
  unlink(so_path);
  unlink(log_path);
  rmdir(dir);
  return st;
}

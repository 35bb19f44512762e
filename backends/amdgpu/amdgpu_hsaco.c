/* backends/amdgpu/amdgpu_hsaco.c: emit the object, link it with ld.lld. */
#include "backends/amdgpu/amdgpu_hsaco.h"
#include "common/loc.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/gpu/gpu_llvm.h"
#include "common/fileio.h"

extern char **environ;

/* Runs the linker, trying the names in order; returns its exit status or -1
 * when none could be started. */
static int run_lld(const char *obj, const char *out, char *used, size_t used_size) {
  const char *env = getenv("COVENANT_LD_LLD");
  const char *candidates[] = {env, "ld.lld-19", "ld.lld", NULL};
  for (int i = 0; i < 3; i++) {
    if (!candidates[i] || !*candidates[i]) continue;
    char *argv[] = {(char *)candidates[i], "-shared", "--no-undefined", "-o", (char *)out,
                    (char *)obj, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, candidates[i], NULL, NULL, argv, environ) != 0) continue;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    snprintf(used, used_size, "%s", candidates[i]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
  return -1;
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
  char obj_path[64], so_path[64], used[64] = "";
  snprintf(obj_path, sizeof obj_path, "%s/k.o", dir);
  snprintf(so_path, sizeof so_path, "%s/k.hsaco", dir);
  cov_status st = common_write_file(obj_path, obj, obj_size);
  free(obj);
  if (!st) {
    int rc = run_lld(obj_path, so_path, used, sizeof used);
    if (rc == -1)
      st = cov_error(COV_NOT_FOUND, COV_AT(NULL, module_name(module)),
                     "cannot run ld.lld to link the HSACO (install lld-19 or set "
                     "COVENANT_LD_LLD)");
    else if (rc != 0)
      st = cov_error(COV_INTERNAL, COV_AT(NULL, module_name(module)), "%s failed to link the HSACO (exit status %d)", used, rc);
    else
      st = common_read_file(so_path, (size_t)1 << 30, out_hsaco, out_size);
  }
  unlink(obj_path);
  unlink(so_path);
  rmdir(dir);
  return st;
}

/* backends/registry/backend_registry.h: the registry of backends, the one
 * module above every backend (cmake/modules.txt).
 *
 * A target is "ref" (the CPU reference interpreter, the oracle every
 * backend is checked against) or an ACG, whose backend.name picks its
 * backend here; nothing else in covenant switches on backend names. The
 * CLI opens every --target through backend_target_open and takes the
 * default target from backend_default_target.
 *
 * Adding a backend: a module under backends/ (cmake/modules.txt, with
 * registry depending on it), a row in k_backends (backend_registry.c) with
 * the entry points it has, and the name in acg/acg_load.c's list of
 * backend.name values. A GPU vendor also fills a gpu_vendor
 * (backends/gpu/gpu_vendor.h), which gpu_target_open finds through
 * backend_gpu_vendors. */
#ifndef COV_BACKEND_REGISTRY_H
#define COV_BACKEND_REGISTRY_H

#include <stddef.h>

#include "covenant/acg.h"
#include "covenant/model.h"
#include "covenant/status.h"
#include "covenant/tensor.h"

#ifdef COV_HAVE_GPU_BACKENDS
#include "backends/gpu/gpu_vendor.h"
#else
typedef struct gpu_vendor gpu_vendor;
#endif

/* The target of every command when --target is not given. */
#define BACKEND_DEFAULT_TARGET "npu-16x16"
/* The pseudo-target of the CPU reference interpreter (no ACG). */
#define BACKEND_REF "ref"

/* What a backend does (bits of backend_info.ops). */
enum {
  BACKEND_MAP = 1,     /* the mapper schedules layers for its ACGs (covenant map) */
  BACKEND_COMPILE = 2, /* compiles layers and models to code (covenant compile) */
  BACKEND_RUN = 4,     /* runs models (covenant run) */
  BACKEND_VERIFY = 8,  /* runs the correctness protocol on suite layers (covenant verify) */
};

typedef struct backend_target backend_target;

typedef struct backend_info {
  const char *name;    /* an ACG's backend.name, or BACKEND_REF */
  const char *summary; /* one line for listings and errors */
  unsigned ops;        /* BACKEND_* */
  /* Runs a loaded model (read from the file `name`, which diagnostics
   * name) on inputs (cov_model_input_name order) into outputs (allocated
   * here, cov_model_output_name order): the model-level entry point of
   * every backend. ref interprets it, npu-sim maps, compiles and simulates
   * it, the GPU backends compile it whole and run it on the device through
   * the runtime (without the vendor's driver: COV_DEVICE_ERROR, nothing
   * run). */
  cov_status (*run_model)(const backend_target *t, const cov_model *m, const char *name, const cov_tensor *inputs,
                          size_t n_inputs, cov_tensor *outputs, size_t n_outputs);
  /* GPU vendors: their gpu_vendor (covenant compile/run then take the GPU
   * path: models whole into one artifact); NULL otherwise */
  const gpu_vendor *gpu;
} backend_info;

/* An opened target: its backend and (except for ref) its ACG. */
struct backend_target {
  const backend_info *backend;
  cov_acg *acg; /* NULL for ref */
};

/* Opens `name` (an ACG path or shipped target name, or "ref"; NULL means
 * BACKEND_DEFAULT_TARGET) and finds its backend. An ACG whose backend.name
 * no built-in backend serves (a GPU target in a build without LLVM, or no
 * backend.name) is COV_UNSUPPORTED, naming the backends there are. */
cov_status backend_target_open(const char *name, backend_target *out);
void backend_target_close(backend_target *t);

/* The backend called `name` (backend.name or "ref"); NULL if none is built. */
const backend_info *backend_find(const char *name);
/* Every built-in backend, i in [0, backend_count()). */
int backend_count(void);
const backend_info *backend_at(int i);

#ifdef COV_HAVE_GPU_BACKENDS
/* The GPU vendors of the table, NULL-terminated (for gpu_target_open). */
gpu_vendors backend_gpu_vendors(void);
#endif

#endif

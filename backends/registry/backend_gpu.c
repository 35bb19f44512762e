/* backends/registry/backend_gpu.c: the amdgpu and nvptx rows: the shared
 * GPU code (backends/gpu/) called with the table's vendors. Suite layers
 * compile one code object each (or run on the device, checked against a
 * CPU loop nest), models compile whole into one artifact, the mapper's GPU
 * search plans their kernels. */
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_artifact.h"
#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_layer.h"
#include "backends/gpu/gpu_tune.h"
#include "backends/registry/backend_rows.h"
#include "covenant/gpu.h"
#include "mapper/map_gpu.h"
#include "runtime/crt.h"

/* The shared GPU code's options: the target by name (it opens the ACG with
 * its vendor) and the GPU options of o. */
static cov_gpu_options gpu_options(const backend_options *o) {
  return (cov_gpu_options){.target = o->target,
                           .suite = o->suite,
                           .dtype = o->dtype,
                           .allow_unfused = o->allow_unfused,
                           .code_object_version = o->code_object_version,
                           .notes = o->notes,
                           .tuning = o->tuning,
                           .shapes = o->shapes,
                           .n_shapes = o->n_shapes,
                           .f32_activations = o->f32_activations,
                           .f16_operands = o->f16_operands};
}

static cov_dtype dtype_of(const backend_options *o) { return o->dtype != COV_DTYPE_INVALID ? o->dtype : COV_F16; }

#define MAX_SUITE 256
/* The suite's layers the GPU lowering takes (contractions and max pools),
 * in file order; any others are left out of 'all'. */
static cov_status suite_contractions(const char *suite, cov_dtype dt, char (*names)[96], int *n) {
  int count = 0;
  COV_RETURN_IF_ERROR(gpu_layer_suite_names(suite, names, MAX_SUITE, &count));
  *n = 0;
  for (int i = 0; i < count; i++) {
    gpu_layer l;
    cov_status st = gpu_layer_from_spec(suite, names[i], dt, &l);
    if (st) {
      cov_status_free(st);
      continue;
    }
    if (*n != i) memcpy(names[*n], names[i], sizeof names[i]);
    (*n)++;
  }
  return NULL;
}

/* What compile wrote, as the NPU compile says it: the code objects the
 * manifest lists ("file": "NAME") and the manifest. */
static void print_written(const char *dir, FILE *out) {
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  FILE *f = fopen(path, "rb");
  if (!f) return;
  static const char key[] = "\"file\": \"";
  char line[4096], first[3][256];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    const char *q = strstr(line, key);
    if (!q) continue;
    q += strlen(key);
    if (n < 3) snprintf(first[n], sizeof first[n], "%.*s", (int)strcspn(q, "\""), q);
    n++;
  }
  fclose(f);
  fprintf(out, "wrote %d code object%s and %s:", n, n == 1 ? "" : "s", path);
  for (int i = 0; i < n && i < 3; i++) fprintf(out, " %s/%s", dir, first[i]);
  fprintf(out, "%s\n", n > 3 ? " ..." : "");
}

/* Layers ('all': the suite's layers the lowering takes), compiled (out_dir
 * set) or run on the device. */
static cov_status gpu_layers(const backend_options *opts, const char *const *args, int n_args, const char *out_dir,
                             FILE *out) {
  cov_gpu_options o = gpu_options(opts);
  char (*suite_names)[96] = calloc(MAX_SUITE, sizeof *suite_names); /* no static state */
  if (!suite_names) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  int n_suite = 0, n = 0;
  cov_status st = NULL;
  for (int i = 0; i < n_args && !n_suite && !st; i++)
    if (!strcmp(args[i], "all")) {
      char found[4096];
      const char *suite = o.suite;
      st = suite ? NULL : cov_suite_find(found, sizeof found);
      if (!suite) suite = found;
      if (!st) st = suite_contractions(suite, dtype_of(opts), suite_names, &n_suite);
    }
  const char **specs = st ? NULL : malloc(sizeof *specs * (size_t)n_args * (size_t)(n_suite + 1));
  if (!st && !specs) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int i = 0; i < n_args && !st; i++) {
    if (strcmp(args[i], "all")) {
      specs[n++] = args[i];
      continue;
    }
    for (int j = 0; j < n_suite; j++) specs[n++] = suite_names[j];
    o.allow_unfused = 1;
  }
  if (!st)
    st = out_dir ? cov_gpu_compile(&o, specs, n, out_dir, opts->report ? out : NULL) : cov_gpu_run(&o, specs, n, out);
  free(specs);
  free(suite_names);
  if (!st && out_dir) print_written(out_dir, out);
  return st;
}

cov_status backend_gpu_compile_layers(const backend_target *t, const backend_options *o, const char *const *layers,
                                      int n, const char *out_dir, FILE *out) {
  (void)t;
  return gpu_layers(o, layers, n, out_dir, out);
}

cov_status backend_gpu_run_layers(const backend_target *t, const backend_options *o, const char *const *layers,
                                  int n, FILE *out) {
  (void)t;
  return gpu_layers(o, layers, n, NULL, out);
}

/* The model whole into one artifact, and what it holds. */
cov_status backend_gpu_compile_model(const backend_target *t, const backend_options *o, const char *model,
                                     const char *out_path, FILE *out) {
  (void)t;
  cov_gpu_options go = gpu_options(o);
  COV_RETURN_IF_ERROR(cov_gpu_compile_model(&go, model, out_path));
  crt_artifact *a = NULL;
  cov_status st = crt_artifact_load(out_path, &a);
  if (!st) {
    crt_traffic tr;
    crt_artifact_traffic(a, &tr);
    fprintf(out, "wrote %s: %s for %s, %d kernel launches (%d modules), %d steps; weights %llu bytes, arena %llu bytes; "
            "%llu bytes of activations moved between kernels per inference (%llu f32, %llu 16-bit)\n",
            out_path, a->model, a->target, tr.launches, a->n_modules, a->n_steps, (unsigned long long)a->weight_bytes,
            (unsigned long long)a->arena_bytes, (unsigned long long)tr.act_bytes, (unsigned long long)tr.f32_bytes,
            (unsigned long long)tr.half_bytes);
  }
  crt_artifact_free(a);
  return st;
}

cov_status backend_gpu_run_model(const backend_target *t, const backend_options *o, const cov_model *m,
                                 const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                 size_t n_outputs, backend_report **report) {
  (void)o;
  if (report) *report = NULL;
  return gpu_run_model_on_device(backend_gpu_vendors(), cov_acg_file(t->acg), COV_F16, m, name, inputs, n_inputs,
                                 outputs, n_outputs);
}

cov_status backend_gpu_check_model(const backend_target *t, const backend_options *o, const char *path,
                                   double tolerance, backend_inputs_fn inputs, void *user, FILE *out) {
  (void)t;
  cov_gpu_options go = gpu_options(o);
  return cov_gpu_run_model(&go, path, tolerance, inputs, user, out);
}

/* The GPU search's schedule of a layer (f16 multiplicands, as the GPU
 * backend compiles suite layers). */
cov_status backend_gpu_map_layer(const backend_target *t, const cov_layer *layer, int explain, FILE *out) {
  map_gpu_problem p;
  map_gpu_result *r = calloc(1, sizeof *r);
  cov_status st = r ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = map_gpu_problem_of_layer(layer, t->acg, COV_F16, &p);
  if (!st) st = map_gpu_search(t->acg, &p, NULL, r);
  if (!st && explain) {
    st = map_gpu_explain(t->acg, cov_layer_name(layer), &p, r, 8, out);
  } else if (!st) {
    char txt[192];
    map_gpu_sched_text(&r->c[0], txt, sizeof txt);
    fprintf(out, "%s on %s: %.0f cycles (%s; %lld candidates)\n", cov_layer_name(layer), cov_acg_name(t->acg),
            r->c[0].cycles, txt, (long long)r->enumerated);
  }
  free(r);
  return st;
}

cov_status backend_gpu_map_candidates(const backend_target *t, const backend_options *o, const char *const *layers,
                                      int n, int top, FILE *out) {
  (void)t;
  gpu_target g;
  memset(&g, 0, sizeof g);
  cov_dtype dt = dtype_of(o);
  cov_status st = gpu_target_open(backend_gpu_vendors(), o->target, dt, &g);
  for (int i = 0; i < n && !st; i++) st = gpu_spec_candidates(&g, o->suite, layers[i], dt, top, out);
  if (g.acg) gpu_target_close(&g);
  return st;
}

cov_status backend_gpu_tune_prepare(const backend_target *t, const backend_options *o, const char *const *specs,
                                    int n, int top, const char *out_dir, FILE *out) {
  (void)t;
  cov_gpu_options go = gpu_options(o);
  COV_RETURN_IF_ERROR(gpu_tune_prepare(backend_gpu_vendors(), &go, specs, n, top, out_dir, out));
  fprintf(out, "wrote %s/tune.json, %s/manifest.json and the kernels; on the device: covenant-run %s --tune -o times.json\n",
          out_dir, out_dir, out_dir);
  return NULL;
}

/* A compute operator compiles when the model compiler has a kernel for
 * each of its codelets; layout becomes copies; anything else refuses the
 * model (a GPU model runs whole on the device). */
cov_status backend_gpu_op_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                                  size_t size) {
  (void)t;
  if (op->layout) {
    snprintf(why, size, "layout: copies (refused where the group changes values: cov_model_group_info.alters)");
    *where = BACKEND_OP_GPU;
    return NULL;
  }
  for (int i = 0; i < op->n_codelets; i++)
    if (!gpu_codelet_has_kernel(op->codelets[i])) {
      snprintf(why, size, "%s: no GPU kernel", op->codelets[i]);
      *where = BACKEND_OP_REFUSED;
      return NULL;
    }
  *where = BACKEND_OP_GPU;
  return NULL;
}

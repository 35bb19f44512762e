/* backends/npu-sim/compile/npu_layer.c: a suite layer for an NPU target,
 * mapped, compiled, and written as a program with its manifest (covenant
 * compile LAYER) or loaded into the simulator and run (covenant verify). */
#include "backends/npu-sim/compile/npu_compile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fileio.h"

cov_status npu_layer_build(npu_layer_job *j, const cov_acg *acg, const char *suite, const char *name, int scale) {
  memset(j, 0, sizeof *j);
  COV_RETURN_IF_ERROR(cov_layer_from_suite(suite, name, scale, &j->layer));
  COV_RETURN_IF_ERROR(cov_map(j->layer, acg, NULL, &j->sched));
  COV_RETURN_IF_ERROR(cov_npu_select_by_simulation(j->sched, acg, COV_NPU_SELECT_MAX_OPS, NULL));
  return cov_npu_compile(j->sched, &j->prog);
}

void npu_layer_job_free(npu_layer_job *j) {
  cov_npu_sim_free(j->sim);
  cov_npu_program_free(j->prog);
  cov_schedule_free(j->sched);
  cov_layer_free(j->layer);
  memset(j, 0, sizeof *j);
}

/* DIR/manifest.json: the layer, its target, predicted cycles, tensors. */
static cov_status write_manifest(const npu_layer_job *j, const cov_acg *acg, const char *name, int scale,
                                 const char *path) {
  common_out mf;
  COV_RETURN_IF_ERROR(common_out_open(path, &mf));
  FILE *f = mf.f;
  fprintf(f, "{\n  \"layer\": \"%s\",\n  \"scale\": %lld,\n  \"target\": \"%s\",\n", name, (long long)scale,
          cov_acg_name(acg));
  fprintf(f, "  \"program\": \"program.npu\",\n  \"predicted_cycles\": %.0f,\n  \"tensors\": [",
          cov_schedule_cycles(j->sched));
  for (int i = 0; i < cov_npu_program_tensor_count(j->prog); i++) {
    const char *tname, *role;
    cov_dtype dt;
    int64_t shape[COV_MAX_RANK];
    int rank = cov_npu_program_tensor(j->prog, i, &tname, &role, &dt, shape);
    fprintf(f, "%s\n    {\"name\": \"%s\", \"role\": \"%s\", \"dtype\": \"%s\", \"shape\": [", i ? "," : "", tname,
            role, cov_dtype_name(dt));
    for (int d = 0; d < rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)shape[d]);
    fprintf(f, "]}");
  }
  fprintf(f, "\n  ]\n}\n");
  return common_out_commit(&mf);
}

cov_status npu_compile_layer_dir(const cov_acg *acg, const char *suite, const char *name, int scale,
                                 const char *dir, FILE *msg) {
  npu_layer_job j;
  cov_status st = npu_layer_build(&j, acg, suite, name, scale);
  if (!st && mkdir(dir, 0777) != 0 && errno != EEXIST) {
    cov_loc loc = {dir, 0, 0, NULL};
    st = cov_error(COV_IO_ERROR, &loc, "cannot create the directory: %s", strerror(errno));
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/program.npu", dir);
  if (!st) st = cov_npu_program_save(j.prog, path);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  if (!st) st = write_manifest(&j, acg, name, scale, path);
  if (!st) fprintf(msg, "wrote %s/program.npu and %s/manifest.json\n", dir, dir);
  npu_layer_job_free(&j);
  return st;
}

cov_status npu_layer_load(npu_layer_job *j, const cov_acg *acg) {
  COV_RETURN_IF_ERROR(cov_npu_sim_create(acg, &j->sim));
  return cov_npu_sim_load(j->sim, j->prog);
}

void npu_layer_in_dtypes(const npu_layer_job *j, cov_dtype *dt, int n) {
  for (int k = 0; k < n; k++) dt[k] = COV_F32;
  for (int i = 0; i < cov_npu_program_tensor_count(j->prog); i++) {
    const char *tn;
    cov_dtype d;
    cov_npu_program_tensor(j->prog, i, &tn, NULL, &d, NULL);
    int k;
    if (sscanf(tn, "in%d", &k) == 1 && k >= 0 && k < n && cov_dtype_is_float(d) &&
        cov_dtype_precision_bits(d) < cov_dtype_precision_bits(COV_F32))
      dt[k] = d;
  }
}

cov_status npu_layer_run(npu_layer_job *j, const cov_tensor *inputs, int n_inputs, cov_tensor *output,
                         uint64_t *cycles, double *array_util) {
  for (int i = 0; i < n_inputs; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "in%d", i);
    COV_RETURN_IF_ERROR(cov_npu_sim_write(j->sim, nm, &inputs[i]));
  }
  cov_npu_stats *stats = NULL;
  cov_status st = cov_npu_sim_run(j->sim, NULL, &stats);
  if (!st) st = cov_npu_sim_read(j->sim, "out", output);
  if (!st) {
    *cycles = cov_npu_stats_cycles(stats);
    *array_util = cov_npu_stats_array_utilization(stats);
  }
  cov_npu_stats_free(stats);
  return st;
}

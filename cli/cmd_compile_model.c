/* cli/cmd_compile_model.c: `covenant compile MODEL.onnx --target npu-* -o DIR`.
 *
 * Each compute layer group of the model is described by the frontend, built
 * into one mapper layer, mapped and compiled into one NPU program, written as
 * DIR/group_<i>.npu with the group's constants (weights, biases) compiled
 * into it, so `covenant sim` runs it with the model's parameters and
 * `covenant disasm` lists it. DIR/manifest.json says how the programs make
 * up the model: its inputs and outputs, and per group its program, which
 * model value feeds each program tensor (a group input, or a constant held
 * by the program), the value its output becomes (with both shapes where the
 * program's differs by a reshape), and for groups not compiled why, and how
 * they run instead (layout work in the frontend; others call by call, as
 * `covenant run` does). Output is deterministic: the same model and target
 * give byte-identical files. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cli_compile.h"
#include "covenant/mapper.h"
#include "covenant/model.h"
#include "covenant/npu.h"

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void json_shape(FILE *f, int rank, const int64_t *shape) {
  fputc('[', f);
  for (int d = 0; d < rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)shape[d]);
  fputc(']', f);
}

static void first_line(cov_status st, char *buf, size_t n) {
  cov_status_format(st, buf, n);
  char *nl = strchr(buf, '\n');
  if (nl) *nl = '\0';
}

/* The compiled group: program tensors in0.. are the layer's inputs. */
typedef struct group_job {
  cov_model_group *desc;
  cov_layer *layer;
  cov_schedule *sched;
  cov_npu_program *prog;
} group_job;

static void job_free(group_job *j) {
  cov_npu_program_free(j->prog);
  cov_schedule_free(j->sched);
  cov_layer_free(j->layer);
  cov_model_group_free(j->desc);
  memset(j, 0, sizeof *j);
}

static cov_status job_build(const cov_model *m, size_t i, const cov_acg *acg, group_job *j) {
  memset(j, 0, sizeof *j);
  COV_RETURN_IF_ERROR(cov_model_group_describe(m, i, &j->desc));
  COV_RETURN_IF_ERROR(cov_layer_from_model_group(j->desc, &j->layer));
  COV_RETURN_IF_ERROR(cov_map(j->layer, acg, NULL, &j->sched));
  /* the same choice as covenant run makes (npu_model.c) */
  COV_RETURN_IF_ERROR(cov_npu_select_by_simulation(j->sched, acg, COV_NPU_SELECT_MAX_OPS, NULL));
  COV_RETURN_IF_ERROR(cov_npu_compile(j->sched, &j->prog));
  /* Constants go into the program (converted to its tensors' dtypes). */
  for (int k = 0; k < cov_layer_num_inputs(j->layer); k++) {
    const cov_model_arg *a;
    COV_RETURN_IF_ERROR(cov_layer_model_input(j->desc, k, &a));
    if (a->kind != COV_MODEL_ARG_CONST) continue;
    cov_tensor t;
    COV_RETURN_IF_ERROR(cov_layer_input(j->layer, k, &t));
    t.data = a->t.data;
    char nm[32];
    snprintf(nm, sizeof nm, "in%d", k);
    COV_RETURN_IF_ERROR(cov_npu_program_set_data(j->prog, nm, &t));
  }
  return NULL;
}

/* The manifest entry of a compiled group. */
static void write_group(FILE *f, size_t i, const group_job *j, const char *file) {
  const cov_model_group *d = j->desc;
  fprintf(f, "    {\"index\": %zu, \"name\": ", i);
  json_str(f, cov_model_group_name(d));
  fprintf(f, ", \"kind\": ");
  json_str(f, cov_model_group_kind(d));
  fprintf(f, ", \"runs\": \"npu\",\n     \"codelets\": [");
  for (size_t c = 0; c < cov_model_group_num_calls(d); c++) {
    fprintf(f, "%s", c ? ", " : "");
    json_str(f, cov_model_group_call_at(d, c)->codelet);
  }
  fprintf(f, "],\n     \"program\": ");
  json_str(f, file);
  fprintf(f, ", \"predicted_cycles\": %.0f,\n     \"inputs\": [", cov_schedule_cycles(j->sched));
  for (int k = 0; k < cov_layer_num_inputs(j->layer); k++) {
    const cov_model_arg *a = NULL;
    cov_tensor t = {0};
    cov_status_free(cov_layer_model_input(d, k, &a));
    cov_status_free(cov_layer_input(j->layer, k, &t));
    fprintf(f, "%s\n       {\"tensor\": \"in%d\", \"value\": ", k ? "," : "", k);
    json_str(f, a ? a->value : "?");
    fprintf(f, ", \"source\": \"%s\", \"shape\": ",
            a && a->kind == COV_MODEL_ARG_CONST ? "constant, in the program" : "group input");
    json_shape(f, t.rank, t.shape);
    fputc('}', f);
  }
  cov_tensor want;
  const char *out = cov_model_group_output(d, &want);
  int64_t pshape[COV_MAX_RANK] = {0};
  int prank = 0;
  for (int k = 0; k < cov_npu_program_tensor_count(j->prog); k++) {
    const char *name;
    int r = cov_npu_program_tensor(j->prog, k, &name, NULL, NULL, pshape);
    if (!strcmp(name, "out")) {
      prank = r;
      break;
    }
  }
  fprintf(f, "\n     ],\n     \"output\": {\"tensor\": \"out\", \"value\": ");
  json_str(f, out);
  fprintf(f, ", \"shape\": ");
  json_shape(f, want.rank, want.shape);
  fprintf(f, ", \"program_shape\": ");
  json_shape(f, prank, pshape);
  fprintf(f, "}}");
}

static cov_status write_io(FILE *f, const cov_model *m) {
  for (int out = 0; out < 2; out++) {
    size_t n = out ? cov_model_num_outputs(m) : cov_model_num_inputs(m);
    fprintf(f, "  \"%s\": [", out ? "outputs" : "inputs");
    for (size_t i = 0; i < n; i++) {
      cov_dtype dt;
      int rank;
      int64_t shape[COV_MAX_RANK];
      COV_RETURN_IF_ERROR(out ? cov_model_output_info(m, i, &dt, &rank, shape)
                              : cov_model_input_info(m, i, &dt, &rank, shape));
      fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
      json_str(f, out ? cov_model_output_name(m, i) : cov_model_input_name(m, i));
      fprintf(f, ", \"dtype\": \"%s\", \"shape\": ", cov_dtype_name(dt));
      json_shape(f, rank < 0 ? 0 : rank, shape);
      fputc('}', f);
    }
    fprintf(f, "\n  ],\n");
  }
  return NULL;
}

int cli_compile_model(const char *path, const char *target, const char *dir) {
  cov_acg *acg = NULL;
  cov_model *m = NULL;
  cov_status st = cov_acg_load_target(target, &acg);
  if (!st) st = cov_model_load_file(path, NULL, &m);
  if (!st && mkdir(dir, 0777) != 0 && errno != EEXIST) {
    cov_loc loc = {dir, 0, 0, NULL};
    st = cov_error(COV_IO_ERROR, &loc, "cannot create the directory: %s", strerror(errno));
  }
  char mpath[4096];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
  FILE *f = NULL;
  if (!st && !(f = fopen(mpath, "w"))) {
    cov_loc loc = {mpath, 0, 0, NULL};
    st = cov_error(COV_IO_ERROR, &loc, "cannot create the file");
  }
  size_t n = m ? cov_model_num_groups(m) : 0, compiled = 0;
  if (!st) {
    fprintf(f, "{\n  \"model\": ");
    json_str(f, path);
    fprintf(f, ",\n  \"target\": ");
    json_str(f, cov_acg_name(acg));
    fprintf(f, ",\n");
    st = write_io(f, m);
    fprintf(f, "  \"groups\": [\n");
  }
  for (size_t i = 0; i < n && !st; i++) {
    cov_model_group_info info;
    if ((st = cov_model_group_get_info(m, i, &info))) break;
    if (i) fprintf(f, ",\n");
    if (info.layout) {
      fprintf(f, "    {\"index\": %zu, \"kind\": ", i);
      json_str(f, info.kind);
      fprintf(f, ", \"runs\": \"frontend\"}");
      continue;
    }
    group_job j;
    cov_status gs = job_build(m, i, acg, &j);
    if (gs) {
      /* Not an error of the command: the group runs call by call. */
      char why[512];
      first_line(gs, why, sizeof why);
      cov_status_free(gs);
      fprintf(f, "    {\"index\": %zu, \"kind\": ", i);
      json_str(f, info.kind);
      fprintf(f, ", \"runs\": \"call by call\", \"reason\": ");
      json_str(f, why);
      fprintf(f, "}");
    } else {
      char file[64], ppath[4200];
      snprintf(file, sizeof file, "group_%zu.npu", i);
      snprintf(ppath, sizeof ppath, "%s/%s", dir, file);
      st = cov_npu_program_save(j.prog, ppath);
      if (!st) write_group(f, i, &j, file);
      compiled++;
    }
    job_free(&j);
  }
  if (f) {
    if (!st) fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0 && !st) {
      cov_loc loc = {mpath, 0, 0, NULL};
      st = cov_error(COV_IO_ERROR, &loc, "write error");
    }
  }
  if (!st)
    printf("wrote %zu program(s) and %s (%zu of %zu groups compiled; the others run in the "
           "frontend or call by call, see the manifest)\n",
           compiled, mpath, compiled, n);
  cov_model_free(m);
  cov_acg_free(acg);
  return st ? cli_report(st) : CLI_EXIT_OK;
}

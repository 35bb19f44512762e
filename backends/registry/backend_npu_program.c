/* backends/registry/backend_npu_program.c: the npu-sim row's program-file
 * entries (backend_info.program_*): reading a program.npu, finding its ACG,
 * disassembling it and running it in the simulator on pseudo-random inputs,
 * for `covenant disasm` and `covenant sim`. A program records the name of
 * the ACG it was compiled for, so the ACG is found by that name unless the
 * caller names another (which the simulator then refuses if its digest
 * differs). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/registry/backend_rows.h"
#include "common/fileio.h"
#include "common/loc.h"
#include "common/text.h"
#include "covenant/npu.h"

struct backend_program {
  const char *path;
  cov_npu_program *prog;
  cov_acg *acg;         /* NULL until program_acg */
  cov_npu_sim *sim;     /* program_sim's */
  cov_npu_stats *stats; /* program_sim's */
  unsigned long long seed;
};

/* A compile manifest (DIR/manifest.json) or a compiled-model artifact passed
 * where a program is wanted: what to pass instead. NULL when path is
 * neither. */
static cov_status manifest_instead(const char *path) {
  /* regular files only: a FIFO or a device would block the read (the
   * loader's own error already says what the path is) */
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cov_loc loc = {path, 0, 0, NULL};
  if (n >= 7 && memcmp(buf, "\x7f" "COVART", 7) == 0)
    return cov_error(COV_INVALID_ARGUMENT, &loc,
                     "this is a compiled-model artifact, not an NPU program; run it with "
                     "'covenant-run %s' ('--info' lists its programs)", path);
  const char *p = buf;
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  if (*p != '{') return NULL;
  /* The programs it names: "program": "NAME" (a layer's program.npu or a
   * model's group_<i>.npu), beside the manifest. */
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
  char list[1024] = "";
  size_t k = 0;
  int count = 0;
  for (const char *q = strstr(buf, "\"program\": \""); q; q = strstr(q + 1, "\"program\": \"")) {
    const char *name = q + strlen("\"program\": \"");
    size_t len = strcspn(name, "\"");
    /* "DIR/NAME, " appended by hand, cut at the buffer's end. */
    const char *parts[3] = {count ? ", " : "", path, name};
    size_t lens[3] = {count ? 2 : 0, dir_len, len};
    for (int j = 0; j < 3 && count < 4; j++)
      for (size_t c = 0; c < lens[j] && k + 1 < sizeof list; c++) list[k++] = parts[j][c];
    list[k] = '\0';
    count++;
  }
  if (!count)
    return cov_error(COV_INVALID_ARGUMENT, &loc, "this is a JSON file, not an NPU program (.npu)");
  return cov_error(COV_INVALID_ARGUMENT, &loc,
                   "this is a compile manifest, not an NPU program; pass the program%s it names: "
                   "%s%s%s",
                   count > 1 ? "s" : "", list, count > 4 ? ", ..." : "",
                   count > 1 ? " (one at a time; 'covenant run MODEL.onnx' runs a whole model)" : "");
}

cov_status backend_npu_program_open(const char *path, backend_program **out) {
  *out = NULL;
  backend_program *p = calloc(1, sizeof *p);
  if (!p) return cov_error(COV_OUT_OF_MEMORY, COV_AT(path, NULL), "out of memory");
  p->path = path;
  cov_status st = cov_npu_program_load(path, &p->prog);
  if (st) {
    free(p);
    cov_status hint = manifest_instead(path);
    if (!hint) return st;
    cov_status_free(st);
    return hint;
  }
  *out = p;
  return NULL;
}

/* The ACG a program runs on: target when given (a path or a shipped name),
 * else the name in the program's header, which is only ever looked up as a
 * shipped target: a header is input, and must not make covenant open a
 * path it names (a device, a FIFO, a file of someone else's). */
cov_status backend_npu_program_acg(backend_program *p, const char *target) {
  if (target) return backend_acg_load(target, &p->acg);
  cov_status st = cov_acg_load_named(cov_npu_program_acg_name(p->prog), &p->acg);
  if (!st || cov_status_code(st) != COV_NOT_FOUND) return st ? cov_status_annotate(st, "the program's ACG: ") : NULL;
  /* A program compiled for an ACG file given by path (--target dir/my.json):
   * its header holds the ACG's name only, and a path is never read from
   * it, so say which option brings the file. */
  char shown[160];
  common_escape(cov_npu_program_acg_name(p->prog), shown, sizeof shown);
  cov_status hint = cov_error(COV_NOT_FOUND, COV_AT(NULL, "--target"),
                              "the program's ACG: %s; if it was compiled for an ACG file given by path, "
                              "pass that file: --target PATH/TO/FILE.json (the file whose \"name\" is '%s')",
                              cov_status_message(st), shown);
  cov_status_free(st);
  return hint;
}

cov_status backend_npu_program_disasm(const backend_program *p, FILE *out) {
  return cov_npu_program_disasm(p->prog, p->acg, out);
}

/* A value in [-1, 1) from an xorshift state: the stream the CLI's random
 * inputs use, so a seed means the same inputs in every command. */
static float rand_pm1(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return (float)((*state >> 11) % 2000000) / 1000000.0f - 1.0f;
}

/* The program's float inputs, and weights it does not carry, filled with
 * pseudo-random values in [-1, 1) from seed. */
static cov_status fill_inputs(const cov_npu_program *p, cov_npu_sim *sim, unsigned long long seed) {
  cov_status st = NULL;
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int i = 0; i < cov_npu_program_tensor_count(p) && !st; i++) {
    const char *name, *role;
    cov_dtype dt;
    int64_t shape[COV_MAX_RANK];
    int rank = cov_npu_program_tensor(p, i, &name, &role, &dt, shape);
    bool fill = strcmp(role, "input") == 0 ||
                (strcmp(role, "weight") == 0 && !cov_npu_program_tensor_has_data(p, i));
    if (!fill || !cov_dtype_is_float(dt)) continue;
    cov_tensor t = {0};
    st = cov_tensor_alloc(&t, COV_F32, rank, shape);
    for (int64_t k = 0; !st && k < cov_tensor_numel(&t); k++) ((float *)t.data)[k] = rand_pm1(&s);
    if (!st) st = cov_npu_sim_write(sim, name, &t);
    cov_tensor_release(&t);
  }
  return st;
}

cov_status backend_npu_program_sim(backend_program *p, const backend_sim_options *o) {
  p->seed = o->seed;
  cov_status st = cov_npu_sim_create(p->acg, &p->sim);
  if (!st) cov_npu_sim_set_max_insns(p->sim, o->max_insns), cov_npu_sim_set_max_work(p->sim, o->max_work);
  if (!st) st = cov_npu_sim_load(p->sim, p->prog);
  if (st) return cov_status_annotate(st, "%s: ", p->path);
  COV_RETURN_IF_ERROR(fill_inputs(p->prog, p->sim, o->seed));
  common_out trace_out = {0};
  if (o->trace) COV_RETURN_IF_ERROR(common_out_open(o->trace, &trace_out));
  st = cov_npu_sim_run(p->sim, trace_out.f, &p->stats);
  if (o->trace) /* kept after a failed run too: it shows what ran up to the failure */
    st = cov_status_join(st, common_out_commit(&trace_out));
  return st;
}

/* Each output's shape, first values and sum. */
static cov_status print_outputs(FILE *out, const cov_npu_program *p, cov_npu_sim *sim) {
  cov_status st = NULL;
  for (int i = 0; i < cov_npu_program_tensor_count(p) && !st; i++) {
    const char *name, *role;
    cov_dtype dt;
    int64_t shape[COV_MAX_RANK];
    int rank = cov_npu_program_tensor(p, i, &name, &role, &dt, shape);
    if (strcmp(role, "output") != 0) continue;
    cov_tensor t = {0};
    if ((st = cov_npu_sim_read(sim, name, &t))) break;
    double sum = 0;
    int64_t n = cov_tensor_numel(&t);
    fprintf(out, "output %s %s[", name, cov_dtype_name(dt));
    for (int d = 0; d < rank; d++) fprintf(out, "%s%lld", d ? "," : "", (long long)shape[d]);
    fprintf(out, "]:");
    for (int64_t k = 0; k < n; k++) {
      double v = dt == COV_F32   ? ((float *)t.data)[k]
                 : dt == COV_F16 ? cov_f16_to_f32(((uint16_t *)t.data)[k])
                                 : 0;
      sum += v;
      if (k < 8) fprintf(out, " %.6g", v);
    }
    fprintf(out, "%s  (sum %.6g)\n", n > 8 ? " ..." : "", sum);
    cov_tensor_release(&t);
  }
  return st;
}

cov_status backend_npu_program_sim_report(const backend_program *p, FILE *out) {
  fprintf(out, "program %s on %s, random inputs with seed %llu\n", p->path, cov_acg_name(p->acg), p->seed);
  cov_npu_stats_print(p->stats, out);
  return print_outputs(out, p->prog, p->sim);
}

void backend_npu_program_close(backend_program *p) {
  if (!p) return;
  cov_npu_stats_free(p->stats);
  cov_npu_sim_free(p->sim);
  cov_acg_free(p->acg);
  cov_npu_program_free(p->prog);
  free(p);
}

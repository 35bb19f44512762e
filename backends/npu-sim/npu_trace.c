/* backends/npu-sim/npu_trace.c: Chrome/Perfetto traces (the JSON object
 * format, 1 us = 1 cycle), for one program (`covenant sim --trace`) or for
 * several run one after another (`covenant run MODEL --trace`: each layer
 * group's program).
 *
 * A multi-program trace has one track per unit, as a single program's has,
 * plus a "layers" track with one span per program (its label: the group or
 * call) and a "cpu" track with an instant for each call that ran on the CPU
 * instead. Programs run back to back: each one's events are shifted by the
 * cycles of those before it, which is how the whole run's total is counted
 * too (a program starts once the previous one has finished). */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"

struct cov_npu_trace {
  FILE *f;
  const cov_acg *acg;
  uint64_t now;  /* cycles of the programs traced so far */
  int lane, cpu; /* tids of the layers and cpu tracks */
};

void npu_trace_header(FILE *f, const cov_acg *g, const cov_npu_stats *names) {
  fprintf(f,
          "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"time_unit\":\"1 us = 1 cycle\","
          "\"acg\":\"%s\"},\"traceEvents\":[",
          g->name);
  npu_target t;
  uint32_t cores = npu_target_init(g, &t) ? 1 : t.cores; /* (a refused ACG: no cores to name) */
  for (uint32_t c = 0; c < cores; c++)
    for (int u = 0; u < names->n_units; u++) {
      fprintf(f, "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"",
              u || c ? "," : "", u + (int)c * NPU_TRACE_CORE_TIDS);
      if (cores > 1) fprintf(f, "core %u: ", c);
      fprintf(f, "%s\"}}", names->unit_name[u]);
    }
}

/* A label as a JSON string's contents (node names are the model's). */
static void put_json(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
}

cov_status cov_npu_trace_begin(FILE *f, const cov_acg *acg, cov_npu_trace **out) {
  *out = NULL;
  if (!f || !acg) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_trace_begin"), "NULL");
  cov_npu_stats *names = NULL;
  COV_RETURN_IF_ERROR(npu_stats_create(acg, &names));
  cov_npu_trace *t = calloc(1, sizeof *t);
  if (!t) {
    cov_npu_stats_free(names);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "trace");
  }
  t->f = f;
  t->acg = acg;
  t->lane = names->n_units;
  t->cpu = names->n_units + 1;
  npu_trace_header(f, acg, names);
  fprintf(f,
          "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":"
          "\"layers\"}},\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{"
          "\"name\":\"cpu\"}}",
          names->n_units ? "," : "", t->lane, t->cpu);
  cov_npu_stats_free(names);
  *out = t;
  return NULL;
}

cov_status cov_npu_sim_run_traced(cov_npu_sim *sim, cov_npu_trace *t, const char *label,
                                  cov_npu_stats **out_stats) {
  if (out_stats) *out_stats = NULL;
  if (!sim || !t) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_sim_run_traced"), "NULL");
  if (!sim->prog) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_sim_run_traced"), "no program loaded");
  if (sim->acg != t->acg && npu_acg_digest(sim->acg) != npu_acg_digest(t->acg))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_sim_run_traced"), "the trace is for ACG '%s', the simulator's is '%s'",
                     t->acg->name, sim->acg->name);
  cov_npu_stats *s = NULL;
  COV_RETURN_IF_ERROR(npu_stats_create(sim->acg, &s));
  npu_exec_opts o = {.trace = t->f, .trace_fragment = true, .trace_offset = t->now, .max_dyn = sim->max_dyn};
  cov_status st = npu_exec(sim, sim->prog, &o, s);
  if (!st) {
    fprintf(t->f, ",\n{\"name\":\"");
    put_json(t->f, label ? label : "program");
    fprintf(t->f, "\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%llu,\"dur\":%llu}", t->lane,
            (unsigned long long)t->now, (unsigned long long)(s->cycles ? s->cycles : 1));
    t->now += s->cycles;
  }
  if (st || !out_stats) cov_npu_stats_free(s);
  else *out_stats = s;
  return st;
}

void cov_npu_trace_note(cov_npu_trace *t, const char *label) {
  if (!t) return;
  fprintf(t->f, ",\n{\"name\":\"");
  put_json(t->f, label ? label : "cpu");
  fprintf(t->f, "\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%d,\"ts\":%llu}", t->cpu,
          (unsigned long long)t->now);
}

cov_status cov_npu_trace_end(cov_npu_trace *t) {
  if (!t) return NULL;
  fprintf(t->f, "\n]}\n");
  cov_status st = ferror(t->f) ? cov_error(COV_IO_ERROR, COV_AT_CALL("cov_npu_trace_end"), "write error in the trace") : NULL;
  free(t);
  return st;
}

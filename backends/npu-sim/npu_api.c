/* backends/npu-sim/npu_api.c: the public cov_npu_* API over the program,
 * verifier and simulator internals. */
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"
#include "common/fileio.h"
#include "common/fileio.h"
#include "mapper/map_ir.h"

#define NPU_MAX_FILE_BYTES ((size_t)1 << 31)

cov_status cov_npu_program_decode(const void *data, size_t size, const char *name,
                                  cov_npu_program **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_program_decode"), "out is NULL");
  *out = NULL;
  if (!data && size) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_program_decode"), "data is NULL");
  return npu_decode(data, size, name, out);
}

cov_status cov_npu_program_load(const char *path, cov_npu_program **out) {
  if (!out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_program_load"), "out is NULL");
  *out = NULL;
  char *data = NULL;
  size_t size = 0;
  COV_RETURN_IF_ERROR(common_read_file(path, NPU_MAX_FILE_BYTES, &data, &size));
  cov_status st = npu_decode((const uint8_t *)data, size, path, out);
  free(data);
  return st;
}

cov_status cov_npu_program_encode(const cov_npu_program *p, void **out, size_t *size) {
  uint8_t *bytes = NULL;
  *out = NULL;
  *size = 0;
  COV_RETURN_IF_ERROR(npu_encode(p, &bytes, size));
  *out = bytes;
  return NULL;
}

cov_status cov_npu_program_save(const cov_npu_program *p, const char *path) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  COV_RETURN_IF_ERROR(npu_encode(p, &bytes, &n));
  cov_status st = common_write_file(path, bytes, n);
  free(bytes);
  return st;
}

void cov_npu_program_free(cov_npu_program *p) { npu_prog_free(p); }

/* The program is verified against the schedule's ACG (the simulator's own
 * static checks and dry run) before it is handed out: a program the
 * simulator would refuse is never written, and a model run declines the
 * layer (runs it another way, with this reason) instead of failing later. */
cov_status cov_npu_compile(const cov_schedule *s, cov_npu_program **out) {
  if (!s || !out) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_compile"), "NULL argument");
  *out = NULL;
  const map_schedule *ms = map_schedule_of(s);
  cov_npu_program *p = NULL;
  COV_RETURN_IF_ERROR(npu_codegen(ms, &p));
  cov_status st = cov_npu_program_verify(p, ms->acg);
  if (st) {
    cov_npu_program_free(p);
    return cov_status_annotate(st, "the generated program does not run on ACG '%s' (refused): ",
                               ms->acg && ms->acg->name ? ms->acg->name : "");
  }
  *out = p;
  return NULL;
}

/* Simulated cycles of the program the schedule compiles to. */
static cov_status sim_cycles(const cov_schedule *s, const cov_acg *acg, uint64_t *cycles) {
  cov_npu_program *prog = NULL;
  cov_npu_sim *sim = NULL;
  cov_npu_stats *stats = NULL;
  cov_status st = cov_npu_compile(s, &prog);
  if (!st) st = cov_npu_sim_create(acg, &sim);
  if (!st) st = cov_npu_sim_load(sim, prog);
  if (!st) st = cov_npu_sim_run(sim, NULL, &stats);
  if (!st) *cycles = cov_npu_stats_cycles(stats);
  cov_npu_stats_free(stats);
  cov_npu_sim_free(sim);
  cov_npu_program_free(prog);
  return st;
}

cov_status cov_npu_select_by_simulation(cov_schedule *s, const cov_acg *acg, double max_ops,
                                        int *chosen) {
  if (chosen) *chosen = -1;
  if (!s || !acg) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_select_by_simulation"), "NULL argument");
  int n = cov_schedule_num_alternatives(s);
  if (n == 0 || cov_schedule_ops(s) > max_ops) return NULL;
  uint64_t best = 0;
  COV_RETURN_IF_ERROR(sim_cycles(s, acg, &best));
  int pick = -1;
  for (int i = 0; i < n; i++) {
    /* alternative i sits in s->alts[i]; compile it by swapping it in */
    COV_RETURN_IF_ERROR(cov_schedule_select_alternative(s, i));
    uint64_t c = 0;
    cov_status st = sim_cycles(s, acg, &c);
    cov_status back = cov_schedule_select_alternative(s, i);
    if (back) {
      cov_status_free(st);
      return back;
    }
    if (st) { /* an alternative the code generator cannot take is not a candidate */
      cov_status_free(st);
      continue;
    }
    if (c < best) {
      best = c;
      pick = i;
    }
  }
  if (pick >= 0) COV_RETURN_IF_ERROR(cov_schedule_select_alternative(s, pick));
  if (chosen) *chosen = pick;
  return NULL;
}

cov_status cov_npu_program_disasm(const cov_npu_program *p, const cov_acg *acg, FILE *out) {
  return npu_disasm(p, acg, out);
}

const char *cov_npu_program_acg_name(const cov_npu_program *p) { return p->acg_name; }
int cov_npu_program_tensor_count(const cov_npu_program *p) { return (int)p->n_tensors; }
int cov_npu_program_tensor(const cov_npu_program *p, int i, const char **name, const char **role,
                           cov_dtype *dtype, int64_t *shape) {
  if (i < 0 || (uint32_t)i >= p->n_tensors) return -1;
  const npu_tensor *t = &p->tensors[i];
  if (name) *name = t->name;
  if (role) *role = npu_role_name(t->role);
  if (dtype) *dtype = (cov_dtype)t->dtype;
  for (int d = 0; d < t->rank && shape; d++) shape[d] = t->dims[d];
  return t->rank;
}

int cov_npu_program_tensor_has_data(const cov_npu_program *p, int i) {
  if (i < 0 || (uint32_t)i >= p->n_tensors) return 0;
  const npu_tensor *t = &p->tensors[i];
  for (uint32_t k = 0; k < p->n_segs; k++)
    if (p->segs[k].addr <= t->addr && p->segs[k].addr + p->segs[k].bytes >= t->addr + t->bytes)
      return 1;
  return 0;
}

/* ---- simulator ---- */

static void sim_release_mem(cov_npu_sim *sim) {
  int ns = sim->acg->n_storage;
  if (sim->cbuf) /* cores 1.. own the memories of the nodes they do not share */
    for (uint32_t c = 1; c < sim->tgt.cores; c++)
      for (int s = 0; s < ns; s++)
        if (sim->cbuf[(size_t)c * (size_t)ns + (size_t)s] != sim->buf[s]) free(sim->cbuf[(size_t)c * (size_t)ns + (size_t)s]);
  free(sim->cbuf);
  sim->cbuf = NULL;
  if (sim->buf)
    for (int s = 0; s < ns; s++) free(sim->buf[s]);
  free(sim->buf);
  sim->buf = NULL;
  free(sim->dram);
  sim->dram = NULL;
  sim->dram_bytes = 0;
}

cov_status cov_npu_sim_create(const cov_acg *acg, cov_npu_sim **out) {
  if (!out || !acg) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_sim_create"), "NULL argument");
  *out = NULL;
  cov_npu_sim *sim = calloc(1, sizeof *sim);
  if (!sim) return cov_error(COV_OUT_OF_MEMORY, NULL, "simulator");
  sim->acg = acg;
  cov_status st = npu_target_init(acg, &sim->tgt);
  sim->f16 = st ? NULL : malloc(65536 * sizeof(float));
  if (!st && !sim->f16) st = cov_error(COV_OUT_OF_MEMORY, NULL, "simulator");
  if (st) {
    free(sim);
    return st;
  }
  for (uint32_t i = 0; i < 65536; i++) sim->f16[i] = cov_f16_to_f32((uint16_t)i);
  *out = sim;
  return NULL;
}

void cov_npu_sim_free(cov_npu_sim *sim) {
  if (!sim) return;
  sim_release_mem(sim);
  free(sim->scratch);
  free(sim->f16);
  free(sim);
}

void cov_npu_sim_set_max_insns(cov_npu_sim *sim, uint64_t max_insns) {
  if (sim) sim->max_dyn = max_insns;
}

void cov_npu_sim_set_max_work(cov_npu_sim *sim, uint64_t max_work) {
  if (sim) sim->max_work = max_work;
}

/* Static checks, the instruction count the loop nest asks for (before any
 * of it runs: the dry run would walk every one), then the dry run
 * (addresses, chains). */
static cov_status verify(cov_npu_sim *sim, const npu_prog *p) {
  COV_RETURN_IF_ERROR(npu_verify_static(p, &sim->tgt, NULL));
  uint64_t limit = sim->max_dyn ? sim->max_dyn : NPU_MAX_DYN_INSNS, n = 0, work = 0;
  npu_dyn_count(p, &n, &work);
  if (n > limit || n == UINT64_MAX) /* saturated: more than any limit */
    return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, p->acg_name),
                     "the program runs %llu%s instructions (its loop counts multiplied out), more than the "
                     "simulator's limit of %llu (raise it with --max-insns N)",
                     (unsigned long long)n, n == UINT64_MAX ? " or more" : "", (unsigned long long)limit);
  uint64_t wlimit = sim->max_work ? sim->max_work : NPU_MAX_DYN_WORK;
  if (work > wlimit || work == UINT64_MAX)
    return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, p->acg_name),
                     "the program's instructions compute or move %llu%s elements (multiply-adds, DMA and vector "
                     "elements, its loop counts multiplied out), more than the simulator's limit of %llu (raise it "
                     "with --max-work N)",
                     (unsigned long long)work, work == UINT64_MAX ? " or more" : "", (unsigned long long)wlimit);
  npu_exec_opts o = {.dry = true, .max_dyn = sim->max_dyn};
  /* The dry run needs DRAM's size but not its contents. */
  uint64_t saved = sim->dram_bytes;
  sim->dram_bytes = p->dram_bytes;
  cov_status st = npu_exec(sim, p, &o, NULL);
  sim->dram_bytes = saved;
  return st;
}

cov_status cov_npu_sim_verify(cov_npu_sim *sim, const cov_npu_program *p) { return verify(sim, p); }

cov_status cov_npu_program_verify(const cov_npu_program *p, const cov_acg *acg) {
  cov_npu_sim *sim = NULL;
  COV_RETURN_IF_ERROR(cov_npu_sim_create(acg, &sim));
  cov_status st = verify(sim, p);
  cov_npu_sim_free(sim);
  return st;
}

/* Every core's memories (ISA.md "Cores"): core 0's are sim->buf; the
 * others have their own of each on-chip node of one instance per core,
 * and core 0's of the nodes the cores share. */
static cov_status sim_core_mem(cov_npu_sim *sim) {
  const cov_acg *g = sim->acg;
  size_t ns = (size_t)g->n_storage, n = sim->tgt.cores ? sim->tgt.cores : 1;
  sim->cbuf = calloc(n * ns, sizeof *sim->cbuf);
  if (!sim->cbuf) return cov_error(COV_OUT_OF_MEMORY, NULL, "simulator memories");
  for (size_t c = 0; c < n; c++)
    for (size_t s = 0; s < ns; s++) {
      uint8_t **b = &sim->cbuf[c * ns + s];
      *b = sim->buf[s];
      if (c == 0 || !sim->buf[s] || g->storage[s].instances <= 1) continue;
      *b = calloc(1, (size_t)g->storage[s].capacity_bytes);
      if (!*b)
        return cov_error(COV_OUT_OF_MEMORY, NULL, "buffer '%s' of core %zu (%llu bytes)", g->storage[s].name, c,
                         (unsigned long long)g->storage[s].capacity_bytes);
    }
  return NULL;
}

cov_status cov_npu_sim_load(cov_npu_sim *sim, const cov_npu_program *p) {
  sim->prog = NULL;
  COV_RETURN_IF_ERROR(verify(sim, p));
  sim_release_mem(sim);
  const cov_acg *g = sim->acg;
  sim->buf = calloc((size_t)g->n_storage, sizeof *sim->buf);
  if (!sim->buf) return cov_error(COV_OUT_OF_MEMORY, NULL, "simulator memories");
  for (int s = 0; s < g->n_storage; s++) {
    if (s == sim->tgt.dram || g->storage[s].kind == ACG_DRAM || g->storage[s].kind == ACG_CACHE)
      continue;
    sim->buf[s] = calloc(1, (size_t)g->storage[s].capacity_bytes);
    if (!sim->buf[s])
      return cov_error(COV_OUT_OF_MEMORY, NULL, "buffer '%s' (%llu bytes)", g->storage[s].name,
                       (unsigned long long)g->storage[s].capacity_bytes);
  }
  COV_RETURN_IF_ERROR(sim_core_mem(sim));
  sim->dram = calloc(1, p->dram_bytes ? (size_t)p->dram_bytes : 1);
  if (!sim->dram)
    return cov_error(COV_OUT_OF_MEMORY, NULL, "DRAM image of %llu bytes",
                     (unsigned long long)p->dram_bytes);
  sim->dram_bytes = p->dram_bytes;
  for (uint32_t i = 0; i < p->n_segs; i++)
    memcpy(sim->dram + p->segs[i].addr, p->segs[i].data, (size_t)p->segs[i].bytes);
  sim->prog = p;
  return NULL;
}

static cov_status find_tensor(cov_npu_sim *sim, const char *name, const npu_tensor **out) {
  if (!sim->prog) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("find_tensor"), "no program loaded");
  int i = npu_prog_find_tensor(sim->prog, name);
  if (i < 0) return cov_error(COV_NOT_FOUND, COV_AT(NULL, name), "the program has no tensor '%s'", name);
  *out = &sim->prog->tensors[i];
  return NULL;
}

static cov_status check_shape(const npu_tensor *t, const cov_tensor *x) {
  bool ok = cov_tensor_numel(x) * (int64_t)cov_dtype_size(t->dtype) == (int64_t)t->bytes;
  if (!ok)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, t->name),
                     "tensor '%s': %lld elements given, the program's tensor holds %llu", t->name,
                     (long long)cov_tensor_numel(x),
                     (unsigned long long)(t->bytes / cov_dtype_size(t->dtype)));
  return NULL;
}

/* One f32 as a narrower float dtype (f16, bf16, e4m3, e5m2) at d: rounded
 * to nearest even (common/half.c, common/fp8.c). */
static void store_narrow(uint8_t *d, cov_dtype t, float f) {
  uint16_t h;
  switch (t) {
    case COV_E4M3: d[0] = cov_f32_to_e4m3(f); return;
    case COV_E5M2: d[0] = cov_f32_to_e5m2(f); return;
    case COV_BF16: h = cov_f32_to_bf16(f); break;
    default: h = cov_f32_to_f16(f); break;
  }
  memcpy(d, &h, 2);
}

static bool narrow_float(cov_dtype t) {
  return t == COV_F16 || t == COV_BF16 || t == COV_E4M3 || t == COV_E5M2;
}

/* x's data in t's dtype at d: f32 converts to the narrower float dtypes
 * (round to nearest even), so callers can hand over the model's f32 tensors. */
static cov_status store_as(const npu_tensor *t, const cov_tensor *x, uint8_t *d, const char *name) {
  int64_t n = cov_tensor_numel(x);
  if (x->dtype == (cov_dtype)t->dtype) {
    memcpy(d, x->data, (size_t)t->bytes);
  } else if (x->dtype == COV_F32 && narrow_float((cov_dtype)t->dtype)) {
    const float *f = x->data;
    size_t es = cov_dtype_size((cov_dtype)t->dtype);
    for (int64_t i = 0; i < n; i++) store_narrow(d + es * (size_t)i, (cov_dtype)t->dtype, f[i]);
  } else if (!cov_dtype_is_float(x->dtype) && x->dtype != COV_I64 && x->dtype != COV_BOOL &&
             (t->dtype == COV_F32 || t->dtype == COV_F16 || t->dtype == COV_BF16 ||
              t->dtype == COV_I8 || t->dtype == COV_I32)) {
    /* integers into a float array's operand (or a wider integer): only
     * where every value is exact in the tensor's dtype */
    cov_dtype td = (cov_dtype)t->dtype;
    int64_t lim = td == COV_F32 ? (1 << 24) : td == COV_F16 ? 2048 : td == COV_BF16 ? 256
                  : td == COV_I8 ? 127 : INT32_MAX;
    for (int64_t i = 0; i < n; i++) {
      int64_t v = x->dtype == COV_I8 ? ((const int8_t *)x->data)[i]
                  : x->dtype == COV_U8 ? ((const uint8_t *)x->data)[i]
                                       : ((const int32_t *)x->data)[i];
      if (v > lim || v < -lim - (td == COV_I8 ? 1 : 0))
        return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, name),
                         "tensor '%s' is %s; element %lld of the %s data (%lld) is not exact in it",
                         name, cov_dtype_name(td), (long long)i, cov_dtype_name(x->dtype),
                         (long long)v);
      if (td == COV_I8) d[i] = (uint8_t)(int8_t)v;
      else if (td == COV_I32) memcpy(d + 4 * i, &(int32_t){(int32_t)v}, 4);
      else if (td == COV_F32) memcpy(d + 4 * i, &(float){(float)v}, 4);
      else
        store_narrow(d + 2 * i, td, (float)v);
    }
  } else {
    return cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, name), "tensor '%s' is %s; cannot write %s data", name,
                     cov_dtype_name(t->dtype), cov_dtype_name(x->dtype));
  }
  return NULL;
}

cov_status cov_npu_sim_write(cov_npu_sim *sim, const char *name, const cov_tensor *x) {
  const npu_tensor *t = NULL;
  COV_RETURN_IF_ERROR(find_tensor(sim, name, &t));
  COV_RETURN_IF_ERROR(check_shape(t, x));
  return store_as(t, x, sim->dram + t->addr, name);
}

cov_status cov_npu_program_set_data(cov_npu_program *p, const char *name, const cov_tensor *x) {
  if (!p || !name || !x || (!x->data && cov_tensor_numel(x)))
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_program_set_data"), "NULL");
  int i = npu_prog_find_tensor(p, name);
  if (i < 0) return cov_error(COV_NOT_FOUND, COV_AT(NULL, name), "the program has no tensor '%s'", name);
  const npu_tensor *t = &p->tensors[i];
  COV_RETURN_IF_ERROR(check_shape(t, x));
  uint8_t *bytes = malloc(t->bytes ? (size_t)t->bytes : 1);
  if (!bytes) return cov_error(COV_OUT_OF_MEMORY, NULL, "tensor '%s'", name);
  cov_status st = store_as(t, x, bytes, name);
  if (!st) st = npu_prog_add_segment(p, t->addr, bytes, t->bytes);
  free(bytes);
  return st;
}

cov_status cov_npu_sim_read(cov_npu_sim *sim, const char *name, cov_tensor *out) {
  const npu_tensor *t = NULL;
  COV_RETURN_IF_ERROR(find_tensor(sim, name, &t));
  int64_t shape[COV_MAX_RANK];
  for (int d = 0; d < t->rank; d++) shape[d] = t->dims[d];
  COV_RETURN_IF_ERROR(cov_tensor_alloc(out, (cov_dtype)t->dtype, t->rank, shape));
  memcpy(out->data, sim->dram + t->addr, (size_t)t->bytes);
  return NULL;
}

cov_status npu_stats_create(const cov_acg *g, cov_npu_stats **out) {
  cov_arena *a = cov_arena_create();
  cov_npu_stats *s = a ? cov_arena_alloc(a, sizeof *s) : NULL;
  if (!s) {
    cov_arena_destroy(a);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "statistics");
  }
  s->arena = a;
  s->n_edges = g->n_edges;
  s->n_units = g->n_edges + g->n_compute;
  s->n_storage = g->n_storage;
  s->clock_mhz = g->clock_mhz;
  s->unit = cov_arena_array(a, (size_t)s->n_units, sizeof *s->unit);
  s->unit_name = cov_arena_array(a, (size_t)s->n_units, sizeof *s->unit_name);
  s->bytes_read = cov_arena_array(a, (size_t)g->n_storage + 1, sizeof *s->bytes_read);
  s->bytes_written = cov_arena_array(a, (size_t)g->n_storage + 1, sizeof *s->bytes_written);
  s->storage_name = cov_arena_array(a, (size_t)g->n_storage + 1, sizeof *s->storage_name);
  if (!s->unit || !s->unit_name || !s->bytes_read || !s->bytes_written || !s->storage_name) {
    cov_arena_destroy(a);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "statistics");
  }
  for (int e = 0; e < g->n_edges; e++)
    s->unit_name[e] = cov_arena_printf(a, "dma:%s->%s", acg_node_name(g, g->edges[e].from),
                                       acg_node_name(g, g->edges[e].to));
  for (int c = 0; c < g->n_compute; c++) {
    s->unit_name[g->n_edges + c] = g->compute[c].name;
    for (int k = 0; k < g->compute[c].n_caps; k++) { /* every unit that runs gemms */
      acg_mac_form f;
      if (g->compute[c].caps[k].throughput > s->peak_macs_per_cycle && acg_mac_form_of(g, c, k, &f, NULL, 0))
        s->peak_macs_per_cycle = g->compute[c].caps[k].throughput;
    }
  }
  for (int i = 0; i < g->n_storage; i++) s->storage_name[i] = g->storage[i].name;
  cov_status st = npu_energy_init(&s->energy, g, a);
  if (st) {
    cov_arena_destroy(a);
    return st;
  }
  *out = s;
  return NULL;
}

cov_status cov_npu_sim_run(cov_npu_sim *sim, FILE *trace, cov_npu_stats **out_stats) {
  if (out_stats) *out_stats = NULL;
  if (!sim->prog) return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_npu_sim_run"), "no program loaded");
  cov_npu_stats *s = NULL;
  COV_RETURN_IF_ERROR(npu_stats_create(sim->acg, &s));
  npu_exec_opts o = {.dry = false, .trace = trace, .max_dyn = sim->max_dyn};
  cov_status st = npu_exec(sim, sim->prog, &o, s);
  if (st || !out_stats) cov_npu_stats_free(s);
  else *out_stats = s;
  return st;
}

void cov_npu_stats_free(cov_npu_stats *s) {
  if (s) cov_arena_destroy(s->arena);
}
uint64_t cov_npu_stats_cycles(const cov_npu_stats *s) { return s->cycles; }
uint64_t cov_npu_stats_macs(const cov_npu_stats *s) { return s->macs; }
double cov_npu_stats_array_utilization(const cov_npu_stats *s) {
  /* against the peak of the capabilities the gemms used */
  if (!s->cycles || s->ideal_cycles <= 0) return 0;
  return s->ideal_cycles / ((double)s->cycles * (s->cores > 1 ? s->cores : 1));
}
double cov_npu_stats_unit_utilization(const cov_npu_stats *s, const char *unit) {
  for (int u = 0; u < s->n_units; u++)
    if (strcmp(s->unit_name[u], unit) == 0)
      return s->cycles && s->unit[u].insns
                 ? (double)s->unit[u].busy / ((double)s->cycles * (s->cores > 1 ? s->cores : 1))
                 : -1;
  return -1;
}
uint64_t cov_npu_stats_storage_bytes(const cov_npu_stats *s, const char *storage) {
  for (int i = 0; i < s->n_storage; i++)
    if (strcmp(s->storage_name[i], storage) == 0) return s->bytes_read[i] + s->bytes_written[i];
  return 0;
}
uint64_t cov_npu_stats_stalls(const cov_npu_stats *s, const char *cause) {
  uint64_t t = 0;
  for (int u = 0; u < s->n_units; u++) {
    if (strcmp(cause, "dependency") == 0) t += s->unit[u].stall_dep;
    else if (strcmp(cause, "bank") == 0) t += s->unit[u].stall_bank;
    else if (strcmp(cause, "bandwidth") == 0) t += s->unit[u].stall_bw;
  }
  return t;
}

void cov_npu_stats_print(const cov_npu_stats *s, FILE *out) {
  fprintf(out, "cycles %llu (%.3f us at %.0f MHz), %llu instructions executed\n",
          (unsigned long long)s->cycles, (double)s->cycles / s->clock_mhz, s->clock_mhz,
          (unsigned long long)s->dyn_insns);
  double cores = s->cores > 1 ? s->cores : 1;
  if (s->cores > 1)
    fprintf(out, "cores %u (units' figures summed over the cores, utilisation of all of them)\n", s->cores);
  fprintf(out, "MACs %llu, array utilisation %.1f%% of %.0f MACs/cycle\n",
          (unsigned long long)s->macs, 100 * cov_npu_stats_array_utilization(s),
          s->ideal_cycles > 0 ? (double)s->macs / s->ideal_cycles : s->peak_macs_per_cycle);
  fprintf(out, "%-22s %8s %12s %6s %12s %12s %12s\n", "unit", "insns", "busy", "util",
          "stall:dep", "stall:bank", "stall:bw");
  for (int u = 0; u < s->n_units; u++) {
    const npu_unit_stats *us = &s->unit[u];
    if (!us->insns) continue;
    fprintf(out, "%-22s %8llu %12llu %5.1f%% %12llu %12llu %12llu\n", s->unit_name[u],
            (unsigned long long)us->insns, (unsigned long long)us->busy,
            s->cycles ? 100.0 * (double)us->busy / ((double)s->cycles * cores) : 0.0,
            (unsigned long long)us->stall_dep, (unsigned long long)us->stall_bank,
            (unsigned long long)us->stall_bw);
  }
  fprintf(out, "%-22s %14s %14s\n", "storage", "bytes read", "bytes written");
  for (int i = 0; i < s->n_storage; i++)
    if (s->bytes_read[i] || s->bytes_written[i])
      fprintf(out, "%-22s %14llu %14llu\n", s->storage_name[i],
              (unsigned long long)s->bytes_read[i], (unsigned long long)s->bytes_written[i]);
  cov_npu_stats_print_energy(s, out);
}

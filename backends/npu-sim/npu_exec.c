/* backends/npu-sim/npu_exec.c: runs a verified program, functionally and in
 * time, in one pass over the dynamic instruction stream.
 *
 * Functional: instructions take effect in program order (so results do not
 * depend on timing). Timing: each unit (one DMA engine per ACG edge, each
 * compute node) is an in-order pipeline; an instruction starts when its unit
 * is free and the data it reads/overwrites is ready, as recorded by a
 * scoreboard of byte blocks per storage node. Every duration comes from the
 * ACG: edge bandwidth and latency, DRAM's own bandwidth and burst width,
 * array shape and capability throughput/latency, banks and bank width.
 * The dry mode computes addresses only: it is the verifier's dynamic half and
 * runs before every simulation, so the real run never touches memory out of
 * range.
 *
 * size: the instruction semantics of ISA.md (DMA, GEMM, vector ops, control) and their timing share the executor state; each instruction is a function of its own
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/npu-sim/npu_internal.h"
#include "common/loc.h"
#include "mapper/map_ir.h"

typedef struct blk {
  uint64_t w_ready; /* the last write's data is visible to other units */
  uint64_t w_occ;   /* ... to later instructions on the writer's own unit */
  uint64_t r_done;  /* the last read has finished (for write-after-read) */
  int32_t w_unit;
} blk;

typedef struct range {
  int buf; /* storage node */
  uint64_t lo, hi;
} range;

/* What an array keeps between gemms (ISA.md "Chained gemms"): the tile a
 * HOLD gemm left in an output-stationary array's PEs, the weights a
 * weight-stationary array loaded last. Tracked in dry and real runs alike:
 * the dry run rejects a chain the hardware could not execute. */
typedef struct chain_st {
  bool held;         /* a HOLD gemm's partial sums are in the PEs, not in c's buffer */
  uint32_t held_pc;  /* that gemm */
  range c;           /* its c bytes (no other unit may touch them until drained) */
  npu_mem cm;        /* its c operand (register and offset folded into c_addr) */
  int64_t c_addr;
  uint32_t m;
  uint16_t n;
  uint8_t cap;
  npu_insn cins;     /* that gemm (its m digits, if any) */
  bool wres;         /* weights of the last gemm are in the PEs, unchanged in their buffer */
  uint32_t w_pc;
  range b;
  npu_mem bm;
  int64_t b_addr;
  uint16_t k, wn;
  uint8_t wcap;
  npu_insn wins;     /* that gemm (its k digits, if any) */
  uint64_t stream_start; /* when the last gemm began streaming (weights in place) */
} chain_st;

/* How many of its latest reservations the DRAM interface remembers: a
 * transfer may take a gap between them; before the oldest, the interface
 * counts as busy (bounded work per transfer). */
#define DRAM_SLOTS 32

/* What the cores of a program share (ISA.md "Cores"): DRAM's interface and
 * the trace. */
typedef struct ex_shared {
  /* DRAM's shared interface: its latest reservations [s, e), by start */
  uint64_t dram_s[DRAM_SLOTS], dram_e[DRAM_SLOTS], dram_floor;
  int dram_n;
  bool trace_any;
} ex_shared;

typedef struct loop_frame {
  uint32_t start, end, left;
} loop_frame;

/* One core's executor; the cores of a program run side by side (npu_exec). */
typedef struct ex {
  cov_npu_sim *sim;
  ex_shared *sh;
  uint8_t **buf;   /* this core's on-chip memories, per storage node */
  int tid0;        /* its units' first trace track */
  uint32_t core, lo, hi; /* its instructions [lo, hi) */
  loop_frame stack[NPU_MAX_LOOP_DEPTH];
  int depth;
  uint64_t dyn;    /* instructions it executed */
  uint64_t now;    /* when its latest unit instruction started */
  uint32_t syncs;  /* sync instructions it passed */
  bool ended, at_sync;
  const npu_prog *p;
  const npu_target *t;
  const cov_acg *g;
  bool dry;
  FILE *trace;
  uint64_t trace_offset;
  int64_t reg[NPU_NREGS];
  uint32_t pc;
  /* timing */
  uint64_t *unit_free, barrier, max_end;
  chain_st *chain; /* per compute node */
  blk **sb;       /* a storage node the cores share: core 0's (sb_own false) */
  bool *sb_own;
  int *sb_shift;
  uint64_t *sb_n;
  cov_npu_stats *st;
} ex;

#define EFAIL(...) return cov_error(COV_INVALID_INPUT, &loc, __VA_ARGS__)

static bool overlaps(const range *a, const range *b) {
  return a->buf == b->buf && a->lo < b->hi && b->lo < a->hi;
}

/* A DMA or VOP touching storage: it may not read or write a tile an array
 * holds (its bytes are in the PEs, not in the buffer, until the chain's last
 * gemm drains them); a write over an array's resident weights makes them
 * stale (the next gemm must load them again). */
static cov_status chain_touch(ex *x, const char *opname, const range *rr, int nr, const range *ww,
                              int nw) {
  cov_loc loc = {NULL, 0, 0, NULL};
  for (int u = 0; u < x->g->n_compute; u++) {
    chain_st *cs = &x->chain[u];
    for (int i = 0; i < nr + nw; i++) {
      const range *q = i < nr ? &rr[i] : &ww[i - nr];
      if (cs->held && overlaps(q, &cs->c))
        EFAIL("instruction %u (%s): %s bytes [%llu, %llu) of '%s' while gemm %u holds them in "
              "'%s' (flag hold: not drained until a gemm without hold ends the chain)",
              x->pc, opname, i < nr ? "reads" : "writes", (unsigned long long)q->lo,
              (unsigned long long)q->hi, x->g->storage[q->buf].name, cs->held_pc,
              x->g->compute[u].name);
      if (i >= nr && cs->wres && overlaps(q, &cs->b)) cs->wres = false;
    }
  }
  return NULL;
}

/* Effective byte address of an operand (mem_range bounded it inside its buffer). */
static int64_t eff(const ex *x, const npu_mem *m) { return x->reg[m->reg] + (int64_t)m->off; }

/* The first field in which a gemm's operand m (at byte address addr)
 * differs from the one an earlier gemm left in the array (held, at
 * held_addr), named from names (buffer, address, row and column strides),
 * or NULL when it is the same operand. */
static const char *const k_c_fields[4] = {"c.buf", "c (address)", "c.row_stride", "c.col_stride"};
static const char *const k_b_fields[4] = {"b.buf", "b (address)", "b.row_stride", "b.col_stride"};

static const char *operand_differs(const npu_mem *m, int64_t addr, const npu_mem *held, int64_t held_addr,
                                   const char *const names[4]) {
  return m->buf != held->buf                 ? names[0]
         : addr != held_addr                 ? names[1]
         : m->row_stride != held->row_stride ? names[2]
         : m->col_stride != held->col_stride ? names[3]
                                             : NULL;
}

/* The chaining rules of one gemm (flags hold, chain, wkeep), then what the
 * array keeps after it. */
static cov_status chain_gemm(ex *x, const npu_insn *in, const range *ra, const range *rb,
                             const range *rc) {
  cov_loc loc = {NULL, 0, 0, NULL};
  chain_st *cs = &x->chain[in->unit];
  const char *un = x->g->compute[in->unit].name;
  const npu_mem c = in->u.gemm.c, b = in->u.gemm.b;
  int64_t ca = eff(x, &c), ba = eff(x, &b);
  if (in->flags & NPU_GEMM_CHAIN) {
    if (!cs->held)
      EFAIL("instruction %u (gemm): field flags: chain, but '%s' holds no tile (the previous gemm "
            "on it did not set hold)", x->pc, un);
    const char *f = operand_differs(&c, ca, &cs->cm, cs->c_addr, k_c_fields);
    if (!f)
      f = in->u.gemm.m != cs->m                ? "m"
          : in->u.gemm.n != cs->n              ? "n"
          : in->u.gemm.cap != cs->cap          ? "cap"
          : !npu_gemm_same_mdig(in, &cs->cins) ? "m digits"
                                               : NULL;
    if (f)
      EFAIL("instruction %u (gemm): field %s: differs from gemm %u, whose tile this gemm continues "
            "(flag chain: same c, m, n, m digits and cap)", x->pc, f, cs->held_pc);
    if (overlaps(ra, &cs->c) || overlaps(rb, &cs->c))
      EFAIL("instruction %u (gemm): field %s: reads the tile gemm %u holds in '%s' (flag hold)",
            x->pc, overlaps(ra, &cs->c) ? "a" : "b", cs->held_pc, un);
  } else if (cs->held) {
    EFAIL("instruction %u (gemm): field flags: gemm %u holds its tile in '%s' (flag hold), so the "
          "next gemm must continue it (flags acc chain)", x->pc, cs->held_pc, un);
  }
  if (in->flags & NPU_GEMM_WKEEP) {
    if (!cs->wres)
      EFAIL("instruction %u (gemm): field flags: wkeep, but '%s' holds no weights (no gemm before "
            "it, or the weights' bytes were written since)", x->pc, un);
    const char *f = operand_differs(&b, ba, &cs->bm, cs->b_addr, k_b_fields);
    if (!f)
      f = in->u.gemm.k != cs->k                ? "k"
          : in->u.gemm.n != cs->wn             ? "n"
          : in->u.gemm.cap != cs->wcap         ? "cap"
          : !npu_gemm_same_kdig(in, &cs->wins) ? "k digits"
                                               : NULL;
    if (f)
      EFAIL("instruction %u (gemm): field %s: differs from gemm %u, whose weights this gemm reuses "
            "(flag wkeep: same b, k, n and cap)", x->pc, f, cs->w_pc);
  }
  cs->held = in->flags & NPU_GEMM_HOLD;
  if (cs->held) {
    cs->held_pc = x->pc;
    cs->c = *rc;
    cs->cm = c;
    cs->c_addr = ca;
    cs->m = in->u.gemm.m;
    cs->n = in->u.gemm.n;
    cs->cap = in->u.gemm.cap;
    cs->cins = *in;
  }
  /* Every gemm leaves its weights in a weight-stationary array. */
  cs->wres = !x->t->output_stationary && !overlaps(rc, rb);
  if (!(in->flags & NPU_GEMM_WKEEP)) cs->w_pc = x->pc;
  cs->b = *rb;
  cs->bm = b;
  cs->b_addr = ba;
  cs->k = in->u.gemm.k;
  cs->wins = *in;
  cs->wn = in->u.gemm.n;
  cs->wcap = in->u.gemm.cap;
  return NULL;
}

static uint64_t capacity(const ex *x, int buf) {
  return buf == x->t->dram ? x->sim->dram_bytes : x->g->storage[buf].capacity_bytes;
}

/* Byte range of a rows x cols operand; error when outside its buffer. */
static cov_status mem_range(ex *x, const char *opname, const char *field, const npu_mem *m,
                            uint64_t rows, uint64_t cols, uint64_t es, range *out) {
  cov_loc loc = {NULL, 0, 0, NULL};
  __int128 base = (__int128)x->reg[m->reg] + m->off;
  __int128 lo = base, hi = base;
  __int128 dr = (__int128)(rows - 1) * m->row_stride * (__int128)es;
  __int128 dc = (__int128)(cols - 1) * m->col_stride * (__int128)es;
  if (dr < 0) lo += dr; else hi += dr;
  if (dc < 0) lo += dc; else hi += dc;
  hi += es;
  uint64_t cap = capacity(x, m->buf);
  if (lo < 0 || hi > (__int128)cap)
    EFAIL("instruction %u (%s): field %s: bytes [%lld, %lld) outside '%s' (%llu bytes)", x->pc,
          opname, field, (long long)lo, (long long)hi, x->g->storage[m->buf].name,
          (unsigned long long)cap);
  *out = (range){m->buf, (uint64_t)lo, (uint64_t)hi};
  return NULL;
}

/* The bytes a gemm's A (a) or B reads: npu_gemm_bytes at the register's
 * value, bounded inside the buffer like mem_range. */
static cov_status gemm_range(ex *x, const npu_insn *in, int which, uint64_t es, range *out) {
  cov_loc loc = {NULL, 0, 0, NULL};
  const npu_mem *m = which == 0 ? &in->u.gemm.a : which == 1 ? &in->u.gemm.b : &in->u.gemm.c;
  npu_brange b = npu_gemm_bytes(in, which, es);
  __int128 lo = (__int128)x->reg[m->reg] + b.lo, hi = (__int128)x->reg[m->reg] + b.hi;
  uint64_t cap = capacity(x, m->buf);
  if (lo < 0 || hi > (__int128)cap)
    EFAIL("instruction %u (gemm): field %s: bytes [%lld, %lld) outside '%s' (%llu bytes)", x->pc,
          which == 0 ? "a" : which == 1 ? "b" : "c", (long long)lo, (long long)hi, x->g->storage[m->buf].name,
          (unsigned long long)cap);
  *out = (range){m->buf, (uint64_t)lo, (uint64_t)hi};
  return NULL;
}

/* ---- scoreboard ---- */

/* Whether the cores share storage node s: DRAM, or one instance on chip. */
static bool shared_node(const ex *x, int s) {
  return s == x->t->dram || x->g->storage[s].kind == ACG_DRAM || x->g->storage[s].instances <= 1;
}

/* first: core 0's executor, whose blocks of shared nodes this core uses */
static cov_status sb_init(ex *x, const ex *first) {
  int n = x->g->n_storage;
  x->sb = calloc((size_t)n, sizeof *x->sb);
  x->sb_own = calloc((size_t)n, sizeof *x->sb_own);
  x->sb_shift = calloc((size_t)n, sizeof *x->sb_shift);
  x->sb_n = calloc((size_t)n, sizeof *x->sb_n);
  if (!x->sb || !x->sb_own || !x->sb_shift || !x->sb_n) return cov_error(COV_OUT_OF_MEMORY, NULL, "scoreboard");
  for (int s = 0; s < n; s++) {
    if (first && shared_node(x, s)) {
      x->sb[s] = first->sb[s];
      x->sb_shift[s] = first->sb_shift[s];
      x->sb_n[s] = first->sb_n[s];
      continue;
    }
    x->sb_own[s] = true;
    uint64_t cap = capacity(x, s);
    /* 64-byte blocks on chip (the mapper aligns tiles to them); DRAM: at
     * most 64Ki blocks */
    int shift = 6;
    _Static_assert(MAP_PLACE_ALIGN == 64, "the mapper's place alignment is the scoreboard's block");
    while ((cap >> shift) > 65536) shift++;
    x->sb_shift[s] = shift;
    x->sb_n[s] = (cap >> shift) + 1;
    x->sb[s] = calloc((size_t)x->sb_n[s], sizeof(blk));
    if (!x->sb[s]) return cov_error(COV_OUT_OF_MEMORY, NULL, "scoreboard");
    for (uint64_t b = 0; b < x->sb_n[s]; b++) x->sb[s][b].w_unit = -1;
  }
  return NULL;
}
static void sb_free(ex *x) {
  if (x->sb && x->sb_own)
    for (int s = 0; s < x->g->n_storage; s++)
      if (x->sb_own[s]) free(x->sb[s]);
  free(x->sb);
  free(x->sb_own);
  free(x->sb_shift);
  free(x->sb_n);
}
static uint64_t sb_ready(const ex *x, const range *r, int unit, bool write) {
  uint64_t t = 0;
  if (r->hi <= r->lo) return 0;
  const blk *b = x->sb[r->buf];
  uint64_t b0 = r->lo >> x->sb_shift[r->buf], b1 = (r->hi - 1) >> x->sb_shift[r->buf];
  for (uint64_t i = b0; i <= b1; i++) {
    /* A compute unit's pipeline forwards its own results (accumulating in
     * place); a DMA engine's data is there only after the edge latency,
     * but its writes travel its edge in order: a write after its own
     * earlier write waits for that one's issue, not for its arrival. */
    uint64_t w = b[i].w_unit == unit && (unit >= x->g->n_edges || write) ? b[i].w_occ : b[i].w_ready;
    if (w > t) t = w;
    if (write && b[i].r_done > t) t = b[i].r_done;
  }
  return t;
}
static void sb_mark(ex *x, const range *r, int unit, bool write, uint64_t occ_end,
                    uint64_t ready) {
  if (r->hi <= r->lo) return;
  blk *b = x->sb[r->buf];
  uint64_t b0 = r->lo >> x->sb_shift[r->buf], b1 = (r->hi - 1) >> x->sb_shift[r->buf];
  for (uint64_t i = b0; i <= b1; i++) {
    if (write) {
      b[i].w_ready = ready;
      b[i].w_occ = occ_end;
      b[i].w_unit = unit;
    } else if (occ_end > b[i].r_done) {
      b[i].r_done = occ_end;
    }
  }
}

/* Cycle counts saturate at NPU_CYCLE_CAP (2^62): a slow ACG (the loader
 * bounds bandwidths and throughputs, but a derived or hand-built ACG may
 * still be extreme) then gives "too many cycles" at the end of the run
 * rather than a count that wrapped around to a small, wrong number. Every
 * term below the cap, so a sum of two cannot overflow 64 bits. */
#define NPU_CYCLE_CAP (UINT64_C(1) << 62)
static uint64_t cyc_add(uint64_t a, uint64_t b) {
  if (a > NPU_CYCLE_CAP) a = NPU_CYCLE_CAP;
  if (b > NPU_CYCLE_CAP) b = NPU_CYCLE_CAP;
  return a + b > NPU_CYCLE_CAP ? NPU_CYCLE_CAP : a + b;
}
static uint64_t cyc_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) || r > NPU_CYCLE_CAP ? NPU_CYCLE_CAP : r;
}

static uint64_t cdiv(uint64_t a, double per_cycle) {
  if (per_cycle <= 0) return a ? 1 : 0;
  double c = ceil((double)a / per_cycle);
  return c < (double)NPU_CYCLE_CAP ? (uint64_t)c : NPU_CYCLE_CAP; /* also NaN */
}
static double edge_bw(const ex *x, int from, int to) {
  int e = npu_find_edge(x->g, from, to);
  return e >= 0 ? x->g->edges[e].bandwidth_bytes_per_cycle : 0;
}

static void trace_event(ex *x, int unit, const char *name, uint64_t start, uint64_t dur) {
  if (!x->trace) return;
  fprintf(x->trace,
          "%s\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%llu,\"dur\":%llu,"
          "\"args\":{\"insn\":%u}}",
          x->sh->trace_any ? "," : "", name, unit + x->tid0, (unsigned long long)(start + x->trace_offset),
          (unsigned long long)(dur ? dur : 1), x->pc);
  x->sh->trace_any = true;
}

/* Common timing step: start after the unit, the barrier and the operands'
 * dependencies; record stalls, busy time, scoreboard and trace. */
/* `occ` cycles of DRAM's shared interface for a transfer ready at `ready`:
 * returns when its first burst goes, *end when its last has. The engines
 * queue independently (each unit runs its own instructions in program
 * order), so the interface serves a transfer's bursts whenever it is free
 * from the transfer's ready time, between the bursts of transfers reserved
 * before it, not after every transfer issued before it on other engines: a
 * store that waits for its epilogue does not hold back the next tile's
 * loads. */
static uint64_t dram_reserve(ex *x, uint64_t ready, uint64_t occ, uint64_t *end) {
  uint64_t at = ready > x->sh->dram_floor ? ready : x->sh->dram_floor;
  *end = at;
  if (!occ) return at;
  uint64_t ns[2 * DRAM_SLOTS + 2], ne[2 * DRAM_SLOTS + 2], left = occ, first = 0;
  int n = 0;
  for (int i = 0; i <= x->sh->dram_n; i++) { /* the reservations, this one's pieces in their gaps */
    uint64_t gap_end = i < x->sh->dram_n ? x->sh->dram_s[i] : UINT64_MAX;
    if (left && at < gap_end) {
      uint64_t take = gap_end - at < left ? gap_end - at : left;
      if (left == occ) first = at;
      ns[n] = at;
      ne[n++] = cyc_add(at, take);
      left -= take;
      *end = cyc_add(at, take);
    }
    if (i == x->sh->dram_n) break;
    ns[n] = x->sh->dram_s[i];
    ne[n++] = x->sh->dram_e[i];
    if (at < x->sh->dram_e[i]) at = x->sh->dram_e[i];
  }
  int m = 0; /* merge touching intervals (the list is sorted and disjoint) */
  for (int i = 0; i < n; i++) {
    if (m && ns[i] <= ne[m - 1]) {
      if (ne[i] > ne[m - 1]) ne[m - 1] = ne[i];
    } else {
      ns[m] = ns[i];
      ne[m++] = ne[i];
    }
  }
  int drop = m > DRAM_SLOTS ? m - DRAM_SLOTS : 0; /* forget the oldest, and the gaps before them */
  for (int i = 0; i < drop; i++)
    if (ne[i] > x->sh->dram_floor) x->sh->dram_floor = ne[i];
  x->sh->dram_n = m - drop;
  memcpy(x->sh->dram_s, ns + drop, sizeof ns[0] * (size_t)x->sh->dram_n);
  memcpy(x->sh->dram_e, ne + drop, sizeof ne[0] * (size_t)x->sh->dram_n);
  return first;
}

static void timing(ex *x, int unit, const char *name, const range *reads, int nr,
                   const range *writes, int nw, uint64_t occ, uint64_t latency,
                   uint64_t bank_extra, uint64_t *out_start) {
  uint64_t base = x->unit_free[unit] > x->barrier ? x->unit_free[unit] : x->barrier;
  uint64_t dep = 0;
  for (int i = 0; i < nr; i++) {
    uint64_t r = sb_ready(x, &reads[i], unit, false);
    if (r > dep) dep = r;
  }
  for (int i = 0; i < nw; i++) {
    uint64_t r = sb_ready(x, &writes[i], unit, true);
    if (r > dep) dep = r;
  }
  uint64_t start = base;
  npu_unit_stats *us = &x->st->unit[unit];
  if (dep > start) {
    us->stall_dep += dep - start;
    start = dep;
  }
  if (out_start) { /* DMA: *out_start cycles of DRAM's shared interface */
    uint64_t dram_end, at = dram_reserve(x, start, *out_start, &dram_end);
    us->stall_bw += at - start;
    start = at;
    *out_start = start;
    if (dram_end - start > occ) occ = dram_end - start; /* bursts between others' */
  }
  uint64_t occ_end = cyc_add(start, occ), ready = cyc_add(occ_end, latency);
  for (int i = 0; i < nr; i++) sb_mark(x, &reads[i], unit, false, occ_end, ready);
  for (int i = 0; i < nw; i++) sb_mark(x, &writes[i], unit, true, occ_end, ready);
  x->now = start;
  x->unit_free[unit] = occ_end;
  if (ready > x->max_end) x->max_end = ready;
  us->insns++;
  us->busy = cyc_add(us->busy, occ);
  us->stall_bank = cyc_add(us->stall_bank, bank_extra);
  trace_event(x, unit, name, start, occ);
}

/* A weight-stationary gemm on an array with two weight registers per PE
 * (ACG `weight_buffers` 2): its weights (reads[1], the b operand) shift into
 * the idle register set over b's edge while the previous gemm streams, from
 * when that gemm began streaming (the set it loaded is then active, the
 * other free) and b is ready; its stream starts once its weights are in,
 * the array has finished the previous stream, and a, c (and bias) are
 * ready. wl: the weight load's cycles; rest: the stream's (the caller allows
 * this only when b's edge is not also a's or the preload's). */
static void timing_wload(ex *x, int unit, const range *reads, int nr, const range *w, uint64_t wl,
                         uint64_t rest, uint64_t latency, uint64_t bank_extra) {
  chain_st *cs = &x->chain[unit - x->g->n_edges];
  npu_unit_stats *us = &x->st->unit[unit];
  uint64_t busy_to = x->unit_free[unit] > x->barrier ? x->unit_free[unit] : x->barrier;
  uint64_t ls = cs->stream_start > x->barrier ? cs->stream_start : x->barrier;
  uint64_t rb = sb_ready(x, &reads[1], unit, false);
  if (rb > ls) ls = rb;
  uint64_t ss = cyc_add(ls, wl) > busy_to ? cyc_add(ls, wl) : busy_to;
  uint64_t dep = 0;
  for (int i = 0; i < nr; i++) {
    uint64_t r = i == 1 ? 0 : sb_ready(x, &reads[i], unit, false);
    if (r > dep) dep = r;
  }
  uint64_t r = sb_ready(x, w, unit, true);
  if (r > dep) dep = r;
  if (dep > ss) {
    us->stall_dep += dep - ss;
    ss = dep;
  }
  if (rb > busy_to && rb - busy_to < ss - busy_to) us->stall_dep += rb - busy_to;
  uint64_t occ_end = cyc_add(ss, rest), ready = cyc_add(occ_end, latency);
  for (int i = 0; i < nr; i++) sb_mark(x, &reads[i], unit, false, occ_end, ready);
  sb_mark(x, w, unit, true, occ_end, ready);
  uint64_t from = ls > busy_to ? ls : busy_to;
  x->now = from;
  x->unit_free[unit] = occ_end;
  cs->stream_start = ss;
  if (ready > x->max_end) x->max_end = ready;
  us->insns++;
  us->busy = cyc_add(us->busy, occ_end - from);
  us->stall_bank = cyc_add(us->stall_bank, bank_extra);
  trace_event(x, unit, "gemm", from, occ_end - from);
}

/* ---- element access ---- */

static inline float ld_f(const uint8_t *p, cov_dtype t) {
  switch (t) {
    case COV_F32: {
      float f;
      memcpy(&f, p, 4);
      return f;
    }
    case COV_F16: {
      uint16_t h;
      memcpy(&h, p, 2);
      return cov_f16_to_f32(h);
    }
    case COV_BF16: {
      uint16_t h;
      memcpy(&h, p, 2);
      return cov_bf16_to_f32(h);
    }
    case COV_E4M3: return cov_e4m3_to_f32(p[0]);
    case COV_E5M2: return cov_e5m2_to_f32(p[0]);
    case COV_I8: return (float)(int8_t)p[0];
    case COV_U8: return (float)p[0];
    case COV_I32: {
      int32_t i;
      memcpy(&i, p, 4);
      return (float)i;
    }
    default: return 0;
  }
}
static inline void st_f(uint8_t *p, cov_dtype t, float v) {
  switch (t) {
    case COV_F32: memcpy(p, &v, 4); break;
    case COV_F16: {
      uint16_t h = cov_f32_to_f16(v);
      memcpy(p, &h, 2);
      break;
    }
    case COV_BF16: {
      uint16_t h = cov_f32_to_bf16(v);
      memcpy(p, &h, 2);
      break;
    }
    case COV_E4M3: p[0] = cov_f32_to_e4m3(v); break;
    case COV_E5M2: p[0] = cov_f32_to_e5m2(v); break;
    default: break;
  }
}
static inline int64_t ld_i(const uint8_t *p, cov_dtype t) {
  if (t == COV_I8) return (int8_t)p[0];
  if (t == COV_U8) return p[0];
  int32_t i;
  memcpy(&i, p, 4);
  return i;
}
static inline void st_i(uint8_t *p, cov_dtype t, int64_t v) {
  if (t == COV_I8) {
    p[0] = (uint8_t)(int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    return;
  }
  if (t == COV_U8) {
    p[0] = (uint8_t)(v > 255 ? 255 : v < 0 ? 0 : v);
    return;
  }
  int32_t i = (int32_t)(v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v);
  memcpy(p, &i, 4);
}

/* A float into an integer dtype: rounded half to even, then saturated to
 * the dtype's range (NaN gives 0): ONNX QuantizeLinear's conversion, and
 * what onnxruntime's requantisation ends with (_mm_cvtps_epi32 under the
 * default rounding mode, clamped). */
static inline void st_f_int(uint8_t *p, cov_dtype t, float v) {
  double r = isnan(v) ? 0.0 : common_round_even((double)v);
  if (r > 2147483647.0) r = 2147483647.0;
  if (r < -2147483648.0) r = -2147483648.0;
  st_i(p, t, (int64_t)r);
}

/* ---- DMA ---- */

/* Fills n elements with the padding value: zeros, or -infinity. */
static void pad_fill(uint8_t *p, uint64_t n, uint64_t es, cov_dtype dt, bool neginf) {
  if (!neginf) {
    memset(p, 0, (size_t)(n * es));
    return;
  }
  uint8_t pat[4];
  if (dt == COV_F32) {
    float f = -INFINITY;
    memcpy(pat, &f, 4);
  } else if (dt == COV_F16) {
    uint16_t h = 0xfc00;
    memcpy(pat, &h, 2);
  } else {
    uint16_t h = 0xff80; /* bf16 */
    memcpy(pat, &h, 2);
  }
  for (uint64_t i = 0; i < n; i++) memcpy(p + i * es, pat, (size_t)es);
}

/* A DMA's elements in range: per dimension the valid index range
 * (coordinates inside [0, extent); lo > hi: none), the local element count
 * and the valid one. */
typedef struct dma_span {
  int64_t vlo[NPU_DMA_MAX_RANK], vhi[NPU_DMA_MAX_RANK]; /* inclusive; vlo > vhi = none */
  uint64_t n_local, n_valid;
} dma_span;

static void dma_span_of(const npu_insn *in, dma_span *sp) {
  int rank = in->u.dma.rank;
  bool any = true;
  uint64_t n_local = 1, n_valid = 1;
  for (int d = 0; d < rank; d++) {
    const npu_dma_dim *dd = &in->u.dma.dim[d];
    int64_t lo = 0, hi = (int64_t)dd->count - 1;
    if (dd->step == 0) {
      if (dd->start < 0 || (int64_t)dd->start >= (int64_t)dd->extent) hi = -1;
    } else {
      /* start + i*step in [0, extent-1] */
      int64_t a = -(int64_t)dd->start, b = (int64_t)dd->extent - 1 - dd->start;
      int64_t s = dd->step;
      int64_t ilo, ihi;
      if (s > 0) {
        ilo = a >= 0 ? (a + s - 1) / s : -((-a) / s);
        ihi = b >= 0 ? b / s : -((-b + s - 1) / s);
      } else {
        int64_t t = -s; /* -i*t in [a, b]  <=>  i in [-b/t, -a/t] */
        ilo = -b >= 0 ? (-b + t - 1) / t : -((b) / t);
        ihi = -a >= 0 ? (-a) / t : -((a + t - 1) / t);
      }
      if (ilo > lo) lo = ilo;
      if (ihi < hi) hi = ihi;
    }
    sp->vlo[d] = lo;
    sp->vhi[d] = hi;
    if (lo > hi) any = false;
    n_local *= dd->count;
    n_valid *= any ? (uint64_t)(hi - lo + 1) : 0;
  }
  if (!any) n_valid = 0;
  sp->n_local = n_local;
  sp->n_valid = n_valid;
}

/* Functional: walk the tile; the innermost dimension is a run. dbase,
 * lbase: the DRAM and local byte addresses (checked by the caller). */
static void dma_copy(ex *x, const npu_insn *in, int local, const dma_span *sp, int64_t dbase,
                     int64_t lbase) {
  bool store = in->flags & NPU_DMA_STORE;
  bool neginf = in->flags & NPU_DMA_PAD_NEGINF;
  cov_dtype dt = in->u.dma.dtype;
  uint64_t es = cov_dtype_size(dt);
  int rank = in->u.dma.rank;
  uint64_t n_valid = sp->n_valid;
  const int64_t *vlo = sp->vlo, *vhi = sp->vhi;
  uint8_t *dram = x->sim->dram, *lm = x->buf[local];
  uint32_t idx[NPU_DMA_MAX_RANK] = {0};
  const npu_dma_dim *in_d = &in->u.dma.dim[rank - 1];
  bool contiguous = in_d->step == 1 && in_d->dram_stride == 1 && in_d->local_stride == 1;
  for (;;) {
    bool row_valid = n_valid > 0;
    int64_t doff = dbase, loff = lbase;
    for (int d = 0; d < rank - 1; d++)
      if ((int64_t)idx[d] < vlo[d] || (int64_t)idx[d] > vhi[d]) row_valid = false;
    /* DRAM offsets are formed for in-range coordinates only (those the dry
     * run bounded); others could overflow. */
    for (int d = 0; d < rank - 1; d++) {
      const npu_dma_dim *dd = &in->u.dma.dim[d];
      if (row_valid)
        doff += ((int64_t)dd->start + (int64_t)idx[d] * dd->step) * (int64_t)dd->dram_stride *
                (int64_t)es;
      loff += (int64_t)idx[d] * dd->local_stride * (int64_t)es;
    }
    int64_t lo = row_valid ? vlo[rank - 1] : 0, hi = row_valid ? vhi[rank - 1] : -1;
    if (contiguous) {
      uint64_t cnt = in_d->count;
      int64_t d0 = lo <= hi ? doff + ((int64_t)in_d->start + lo) * (int64_t)es : 0;
      if (store) {
        if (lo <= hi)
          memcpy(dram + d0, lm + loff + lo * (int64_t)es, (size_t)(hi - lo + 1) * es);
      } else {
        if (lo > hi) {
          pad_fill(lm + loff, cnt, es, dt, neginf);
        } else {
          pad_fill(lm + loff, (uint64_t)lo, es, dt, neginf);
          memcpy(lm + loff + lo * (int64_t)es, dram + d0, (size_t)(hi - lo + 1) * es);
          pad_fill(lm + loff + (hi + 1) * (int64_t)es, (uint64_t)((int64_t)cnt - 1 - hi), es, dt, neginf);
        }
      }
    } else {
      for (int64_t i = 0; i < (int64_t)in_d->count; i++) {
        uint8_t *lp = lm + loff + i * (int64_t)in_d->local_stride * (int64_t)es;
        bool v = i >= lo && i <= hi;
        uint8_t *dp = v ? dram + (doff + ((int64_t)in_d->start + i * in_d->step) *
                                             (int64_t)in_d->dram_stride * (int64_t)es)
                        : NULL;
        if (store) {
          if (v) memcpy(dp, lp, es);
        } else if (v) {
          memcpy(lp, dp, es);
        } else {
          pad_fill(lp, 1, es, dt, neginf);
        }
      }
    }
    int d = rank - 2;
    while (d >= 0 && ++idx[d] == in->u.dma.dim[d].count) idx[d--] = 0;
    if (d < 0) break;
  }
}

/* Timing: the engine moves every local byte (padding zeros included) at
 * the edge's bandwidth; DRAM serves whole bursts of its interface width for
 * each contiguous run, at its own bandwidth shared by all engines. rl, rd:
 * the local and DRAM byte ranges. */
static void dma_timing(ex *x, const npu_insn *in, int local, const dma_span *sp, const range *rl,
                       const range *rd) {
  const acg_edge *e = &x->g->edges[in->unit];
  bool store = in->flags & NPU_DMA_STORE;
  uint64_t es = cov_dtype_size(in->u.dma.dtype);
  int rank = in->u.dma.rank;
  const npu_dma_dim *in_d = &in->u.dma.dim[rank - 1];
  uint64_t n_valid = sp->n_valid;
  uint64_t lbytes = sp->n_local * es, dbytes = n_valid * es;
  const acg_storage *ds = &x->g->storage[x->t->dram];
  uint64_t burst = ds->width_bits >= 8 ? ds->width_bits / 8 : 1;
  bool dram_contig = in_d->step == 1 && in_d->dram_stride == 1;
  uint64_t run = dram_contig ? (uint64_t)(sp->vhi[rank - 1] - sp->vlo[rank - 1] + 1) * es : es;
  uint64_t runs = n_valid && run ? dbytes / run : 0;
  uint64_t dcost = runs * ((run + burst - 1) / burst) * burst;
  double dram_bw = ds->bandwidth_bytes_per_cycle;
  uint64_t d_occ = cdiv(dcost, dram_bw);
  uint64_t e_occ = cdiv(lbytes, e->bandwidth_bytes_per_cycle);
  uint64_t occ = e_occ > d_occ ? e_occ : d_occ;
  uint64_t start = d_occ;
  const range *reads = store ? rl : rd, *writes = store ? rd : rl;
  timing(x, in->unit, store ? "dma.store" : "dma.load", reads, 1, writes, 1, occ,
         e->latency_cycles, 0, &start);
  npu_unit_stats *us = &x->st->unit[in->unit];
  us->bytes += lbytes;
  x->st->energy.edge_bytes[in->unit] += lbytes;
  if (store) {
    x->st->bytes_read[local] += lbytes;
    x->st->bytes_written[x->t->dram] += dbytes;
  } else {
    x->st->bytes_read[x->t->dram] += dbytes;
    x->st->bytes_written[local] += lbytes;
  }
}

static cov_status run_dma(ex *x, const npu_insn *in) {
  cov_loc loc = {NULL, 0, 0, NULL};
  const acg_edge *e = &x->g->edges[in->unit];
  bool store = in->flags & NPU_DMA_STORE;
  int local = e->from == x->t->dram ? e->to : e->from;
  uint64_t es = cov_dtype_size(in->u.dma.dtype);
  int rank = in->u.dma.rank;
  dma_span sp;
  dma_span_of(in, &sp);
  uint64_t n_valid = sp.n_valid;
  /* Address ranges: the local tile, and the DRAM bytes of valid elements. */
  __int128 lbase = (__int128)x->reg[in->u.dma.local_reg] + in->u.dma.local_off;
  __int128 lhi = lbase + es;
  for (int d = 0; d < rank; d++)
    lhi += (__int128)(in->u.dma.dim[d].count - 1) * in->u.dma.dim[d].local_stride * es;
  if (lbase < 0 || lhi > (__int128)capacity(x, local))
    EFAIL("instruction %u (dma): field local_off: bytes [%lld, %lld) outside '%s' (%llu bytes)",
          x->pc, (long long)lbase, (long long)lhi, x->g->storage[local].name,
          (unsigned long long)capacity(x, local));
  __int128 dbase = (__int128)x->reg[in->u.dma.dram_reg] + in->u.dma.dram_off;
  __int128 dlo = dbase, dhi = dbase + es;
  if (n_valid) {
    for (int d = 0; d < rank; d++) {
      const npu_dma_dim *dd = &in->u.dma.dim[d];
      __int128 c0 = (__int128)dd->start + (__int128)sp.vlo[d] * dd->step;
      __int128 c1 = (__int128)dd->start + (__int128)sp.vhi[d] * dd->step;
      __int128 cmin = c0 < c1 ? c0 : c1, cmax = c0 < c1 ? c1 : c0;
      dlo += cmin * dd->dram_stride * es;
      dhi += cmax * dd->dram_stride * es;
    }
    if (dlo < 0 || dhi > (__int128)x->sim->dram_bytes)
      EFAIL("instruction %u (dma): field dram_off: bytes [%lld, %lld) outside DRAM (%llu bytes)",
            x->pc, (long long)dlo, (long long)dhi, (unsigned long long)x->sim->dram_bytes);
  }
  range rl = {local, (uint64_t)lbase, (uint64_t)lhi};
  range rd = {x->t->dram, n_valid ? (uint64_t)dlo : 0, n_valid ? (uint64_t)dhi : 0};
  COV_RETURN_IF_ERROR(chain_touch(x, "dma", &rl, store ? 1 : 0, &rl, store ? 0 : 1));
  if (x->dry) return NULL;
  dma_copy(x, in, local, &sp, (int64_t)dbase, (int64_t)lbase);
  dma_timing(x, in, local, &sp, &rl, &rd);
  return NULL;
}

/* ---- GEMM ---- */

static float *scratch(cov_npu_sim *sim, size_t n) {
  if (n > sim->scratch_n) {
    float *f = realloc(sim->scratch, n * sizeof *f);
    if (!f) return NULL;
    sim->scratch = f;
    sim->scratch_n = n;
  }
  return sim->scratch;
}

#define KOFF_TABLE 256

/* acg_bank_degree for a row of A read through k digits: the distinct
 * words of its k elements, counted per bank, over the ports (the same rule
 * for elements that are not evenly spaced). */
static uint32_t bank_degree_at(const acg_storage *s, uint64_t addr, const npu_insn *in, uint64_t es) {
  uint32_t banks = s->banks ? s->banks : 1, ports = s->ports ? s->ports : 1;
  uint64_t word = s->width_bits >= 8 ? s->width_bits / 8 : 1;
  if (banks > 256) banks = 256;
  uint64_t seen[KOFF_TABLE];
  uint32_t n_seen = 0, cnt[256] = {0}, worst = 0, K = in->u.gemm.k;
  if (K > KOFF_TABLE) return 1; /* (a weight-stationary row: k <= the array rows) */
  for (uint32_t j = 0; j < K; j++) {
    uint64_t w = (uint64_t)((int64_t)addr + npu_gemm_koff(in, true, j) * (int64_t)es) / word;
    bool dup = false;
    for (uint32_t i = 0; i < n_seen && !dup; i++) dup = seen[i] == w;
    if (dup) continue;
    seen[n_seen++] = w;
    uint32_t c = ++cnt[w % banks];
    if (c > worst) worst = c;
  }
  worst = (worst + ports - 1) / ports;
  return worst ? worst : 1;
}

/* A GEMM's operands as the functional and timing halves read them: the
 * capability's dtypes, its flags, the operands' bytes and their strides in
 * bytes (strides are in elements and may be 0), and the k digits' offsets. */
typedef struct gemm_view {
  const acg_capability *cap;
  acg_mac_form form;
  bool tiles, os;
  uint64_t M, K, N;
  cov_dtype ta, tb, to;
  uint64_t ea, eb, eo;
  bool acc, bias, chain, hold, wkeep, kdig, ktab, mdig;
  const npu_mem *ma, *mb, *mc, *mbias;
  const uint8_t *pa, *pb, *pbias;
  uint8_t *pc;
  int64_t ars, acs, brs, bcs, crs, ccs, bis;
  /* k digits (ISA.md): byte offsets of A's columns and B's rows, tabled for
   * the short k of a weight-stationary array, else computed per element */
  int64_t ko_a[KOFF_TABLE], ko_b[KOFF_TABLE];
} gemm_view;

/* The instruction's fields and flags; where !bytes (a dry run) none of
 * its addresses. */
static void gemm_view_of(const ex *x, const npu_insn *in, bool bytes, gemm_view *v) {
  const acg_compute *c = &x->g->compute[in->unit];
  const acg_capability *cap = &c->caps[in->u.gemm.cap];
  v->cap = cap;
  v->tiles = npu_unit_tiles(x->g, in->unit, in->u.gemm.cap, &v->form);
  v->os = x->t->output_stationary && !v->tiles;
  v->M = in->u.gemm.m, v->K = in->u.gemm.k, v->N = in->u.gemm.n;
  v->ta = cap->in[0], v->tb = cap->n_in > 1 ? cap->in[1] : cap->in[0], v->to = cap->out;
  v->ea = cov_dtype_size(v->ta), v->eb = cov_dtype_size(v->tb), v->eo = cov_dtype_size(v->to);
  v->acc = in->flags & NPU_GEMM_ACC, v->bias = in->flags & NPU_GEMM_BIAS;
  v->chain = in->flags & NPU_GEMM_CHAIN, v->hold = in->flags & NPU_GEMM_HOLD;
  v->wkeep = in->flags & NPU_GEMM_WKEEP;
  v->ma = &in->u.gemm.a, v->mb = &in->u.gemm.b, v->mc = &in->u.gemm.c, v->mbias = &in->u.gemm.bias;
  if (!bytes) return;
  const npu_mem *ma = v->ma, *mb = v->mb, *mc = v->mc, *mbias = v->mbias;
  uint64_t ea = v->ea, eb = v->eb, eo = v->eo;
  v->pa = x->buf[ma->buf] + x->reg[ma->reg] + ma->off;
  v->pb = x->buf[mb->buf] + x->reg[mb->reg] + mb->off;
  v->pc = x->buf[mc->buf] + x->reg[mc->reg] + mc->off;
  v->pbias = v->bias ? x->buf[mbias->buf] + x->reg[mbias->reg] + mbias->off : NULL;
  v->ars = ma->row_stride * (int64_t)ea, v->acs = ma->col_stride * (int64_t)ea;
  v->brs = mb->row_stride * (int64_t)eb, v->bcs = mb->col_stride * (int64_t)eb;
  v->crs = mc->row_stride * (int64_t)eo, v->ccs = mc->col_stride * (int64_t)eo;
  v->bis = mbias->col_stride * (int64_t)eo;
  v->kdig = in->flags & NPU_GEMM_KDIG, v->ktab = v->kdig && v->K <= KOFF_TABLE;
  for (uint64_t k = 0; v->ktab && k < v->K; k++) {
    v->ko_a[k] = npu_gemm_koff(in, true, (uint32_t)k) * (int64_t)ea;
    v->ko_b[k] = npu_gemm_koff(in, false, (uint32_t)k) * (int64_t)eb;
  }
  v->mdig = in->flags & NPU_GEMM_MDIG;
}

#define KOFF(tab, isa, k, st, es)                                   \
  (!kdig ? (int64_t)(k) * (st)                                      \
   : ktab ? (tab)[k] : npu_gemm_koff(in, isa, (uint32_t)(k)) * (int64_t)(es))
#define MOFF(isa, m, st, es) \
  (!mdig ? (int64_t)(m) * (st) : npu_gemm_moff(in, isa, (uint32_t)(m)) * (int64_t)(es))

/* fp16 x fp16 products are exact in fp32, so multiplying the widened
 * values and adding in fp32 is exactly "fp16 multiply, fp32 accumulate". */
static cov_status gemm_f32(ex *x, const npu_insn *in, const gemm_view *v) {
  uint64_t M = v->M, K = v->K, N = v->N, ea = v->ea, eb = v->eb, eo = v->eo;
  cov_dtype ta = v->ta, tb = v->tb, to = v->to;
  int64_t ars = v->ars, acs = v->acs, brs = v->brs, bcs = v->bcs, crs = v->crs, ccs = v->ccs;
  const int64_t *ko_a = v->ko_a, *ko_b = v->ko_b;
  bool kdig = v->kdig, ktab = v->ktab, mdig = v->mdig;
  const uint8_t *pa = v->pa, *pb = v->pb, *pbias = v->pbias;
  uint8_t *pc = v->pc;
  int64_t bis = v->bis;
  bool acc = v->acc, bias = v->bias;
  float *A = scratch(x->sim, M * K + K * N + N);
  if (!A) return cov_error(COV_OUT_OF_MEMORY, NULL, "gemm staging");
  float *B = A + M * K, *acc_row = B + K * N;
  const float *h = x->sim->f16;
  for (uint64_t m = 0; m < M; m++)
    for (uint64_t k = 0; k < K; k++) {
      const uint8_t *q = pa + MOFF(true, m, ars, ea) + KOFF(ko_a, true, k, acs, ea);
      A[m * K + k] = ta == COV_F16 ? h[(uint16_t)(q[0] | q[1] << 8)] : ld_f(q, ta);
    }
  for (uint64_t k = 0; k < K; k++)
    for (uint64_t n = 0; n < N; n++) {
      const uint8_t *q = pb + KOFF(ko_b, false, k, brs, eb) + (int64_t)n * bcs;
      B[k * N + n] = tb == COV_F16 ? h[(uint16_t)(q[0] | q[1] << 8)] : ld_f(q, tb);
    }
  for (uint64_t m = 0; m < M; m++) {
    uint8_t *crow = pc + MOFF(false, m, crs, eo);
    for (uint64_t n = 0; n < N; n++)
      acc_row[n] = acc ? ld_f(crow + (int64_t)n * ccs, to)
                          : bias ? ld_f(pbias + (int64_t)n * bis, to) : 0.0f;
    if (N == 16) { /* the common array width: a fixed trip count in a local
                    * array (no aliasing) vectorises fully */
      float av[16];
      memcpy(av, acc_row, sizeof av);
      for (uint64_t k = 0; k < K; k++) {
        float a = A[m * K + k];
        const float *brow = B + k * 16;
        for (int n = 0; n < 16; n++) av[n] += a * brow[n];
      }
      memcpy(acc_row, av, sizeof av);
    } else {
      for (uint64_t k = 0; k < K; k++) {
        float a = A[m * K + k];
        const float *brow = B + k * N;
        for (uint64_t n = 0; n < N; n++) acc_row[n] += a * brow[n];
      }
    }
    if (ccs == 4) memcpy(crow, acc_row, N * sizeof(float));
    else
      for (uint64_t n = 0; n < N; n++) memcpy(crow + (int64_t)n * ccs, &acc_row[n], 4);
  }
  return NULL;
}

/* i8 x i8 -> i32, wrapping like a 32-bit adder */
static void gemm_i32(const npu_insn *in, const gemm_view *v) {
  uint64_t M = v->M, K = v->K, N = v->N, ea = v->ea, eb = v->eb, eo = v->eo;
  int64_t ars = v->ars, acs = v->acs, brs = v->brs, bcs = v->bcs, crs = v->crs, ccs = v->ccs;
  const int64_t *ko_a = v->ko_a, *ko_b = v->ko_b;
  bool kdig = v->kdig, ktab = v->ktab, mdig = v->mdig;
  const uint8_t *pa = v->pa, *pb = v->pb, *pbias = v->pbias;
  uint8_t *pc = v->pc;
  int64_t bis = v->bis;
  bool acc = v->acc, bias = v->bias;
  for (uint64_t m = 0; m < M; m++) {
    uint8_t *crow = pc + MOFF(false, m, crs, eo);
    for (uint64_t n = 0; n < N; n++) {
      uint32_t s = acc ? (uint32_t)ld_i(crow + (int64_t)n * ccs, v->to)
                          : bias ? (uint32_t)ld_i(pbias + (int64_t)n * bis, v->to) : 0u;
      for (uint64_t k = 0; k < K; k++)
        s += (uint32_t)(ld_i(pa + MOFF(true, m, ars, ea) + KOFF(ko_a, true, k, acs, ea), v->ta) *
                        ld_i(pb + KOFF(ko_b, false, k, brs, eb) + (int64_t)n * bcs, v->tb));
      int32_t r = (int32_t)s;
      memcpy(crow + (int64_t)n * ccs, &r, 4);
    }
  }
}
#undef KOFF
#undef MOFF

/* Timing from the array's dataflow, shape, capability and edges. r, nr:
 * the ranges it reads; w: the one it writes. */
static void gemm_timing(ex *x, const npu_insn *in, const gemm_view *v, const range *r, int nr,
                        const range *w) {
  const acg_capability *cap = v->cap;
  const npu_mem *ma = v->ma, *mb = v->mb, *mc = v->mc, *mbias = v->mbias;
  uint64_t M = v->M, K = v->K, N = v->N, ea = v->ea, eb = v->eb, eo = v->eo;
  bool acc = v->acc, bias = v->bias;
  int un = npu_node_of_compute(x->g, in->unit);
  double bwa = edge_bw(x, ma->buf, un), bwb = edge_bw(x, mb->buf, un), bwc = edge_bw(x, un, mc->buf);
  uint64_t macs = M * K * N;
  uint64_t peak = cdiv(macs, cap->throughput);
  const acg_storage *sa = &x->g->storage[ma->buf], *sbf = &x->g->storage[mb->buf];
  uint64_t occ, bank_extra, wl_occ = 0;
  /* A chained gemm finds its partial sums in the PEs: nothing to preload. */
  uint64_t pre = (acc || bias) && !v->chain
                     ? cdiv(M * N * eo, edge_bw(x, acc ? mc->buf : mbias->buf, un)) : 0;
  if (v->tiles) { /* a matrix, SIMD or scalar unit: whole issues (acg_mac.c) */
    acg_mac_operands mo = {M, K, N, {ma->buf, mb->buf, mc->buf, mc->buf}, {ea, eb, eo}, acc};
    occ = acg_mac_tile_cycles(x->g, in->unit, in->u.gemm.cap, &v->form, &mo);
    bank_extra = 0;
  } else if (!v->os) {
    /* Weight-stationary: load K x N weights into the PEs, then stream M rows
     * of A (K elements per cycle); results leave the bottom row. */
    /* bank factors: acg_bank_degree, which the mapper's cost model counts too */
    uint32_t da = v->kdig ? bank_degree_at(sa, (uint64_t)(v->pa - x->buf[ma->buf]), in, ea)
                          : acg_bank_degree(sa, (uint64_t)(v->pa - x->buf[ma->buf]), v->acs, (uint32_t)K);
    uint32_t db = acg_bank_degree(sbf, (uint64_t)(v->pb - x->buf[mb->buf]), v->bcs, (uint32_t)N);
    /* wkeep: the PEs still hold this K x N block from the previous gemm. */
    uint64_t wl = v->wkeep ? 0 : (K > cdiv(K * N * eb, bwb) ? K : cdiv(K * N * eb, bwb));
    uint64_t st = M > cdiv(M * K * ea, bwa) ? M : cdiv(M * K * ea, bwa);
    uint64_t out = cdiv(M * N * eo, bwc);
    uint64_t body = st > out ? st : out;
    if (pre > body) body = pre;
    if (peak > body) body = peak;
    bank_extra = cyc_add(cyc_mul(wl, db - 1), cyc_mul(st, da - 1));
    uint64_t rest = cyc_add(body, cyc_mul(st, da - 1));
    if (acg_weights_overlap(x->g, un, ma->buf, mb->buf, acc ? mc->buf : bias ? mbias->buf : -1)) {
      timing_wload(x, (int)(x->g->n_edges + in->unit), r, nr, w, cyc_mul(wl, db), rest,
                   cap->latency, bank_extra);
      return;
    }
    occ = cyc_add(cyc_mul(wl, db), rest);
    wl_occ = cyc_mul(wl, db);
  } else {
    /* Output-stationary: K steps, each feeding one column of A (stored as a
     * row of A^T) and one row of B; then the accumulators drain. */
    /* a column of A: M elements at its rows' offsets (m digits: where the
     * digits put them) */
    uint32_t da = v->mdig ? acg_bank_degree2(sa, (uint64_t)(v->pa - x->buf[ma->buf]), v->ars, in->u.gemm.mrad,
                                             (int64_t)in->u.gemm.ma * (int64_t)ea, (uint32_t)M)
                          : acg_bank_degree(sa, (uint64_t)(v->pa - x->buf[ma->buf]), v->ars, (uint32_t)M);
    uint32_t db = acg_bank_degree(sbf, (uint64_t)(v->pb - x->buf[mb->buf]), v->bcs, (uint32_t)N);
    uint64_t fa = cdiv(K * M * ea, bwa), fb = cdiv(K * N * eb, bwb);
    int ea_edge = npu_find_edge(x->g, ma->buf, un), eb_edge = npu_find_edge(x->g, mb->buf, un);
    uint64_t feed = ea_edge == eb_edge ? cyc_add(fa, fb) : (fa > fb ? fa : fb);
    uint64_t st = K > feed ? K : feed;
    if (peak > st) st = peak;
    uint32_t dg = da > db ? da : db;
    bank_extra = cyc_mul(st, dg - 1);
    /* hold: the sums stay in the PEs for the next (chained) gemm, no drain. */
    occ = cyc_add(cyc_add(pre, cyc_mul(st, dg)), v->hold ? 0 : cdiv(M * N * eo, bwc));
  }
  timing(x, (int)(x->g->n_edges + in->unit), "gemm", r, nr, w, v->hold ? 0 : 1, occ, cap->latency,
         bank_extra, NULL);
  if (!v->os && !v->tiles) /* the stream began after the weight load */
    x->chain[in->unit].stream_start = x->unit_free[x->g->n_edges + in->unit] - (occ - wl_occ);
}

/* The GEMM's MACs, bytes and energy in the statistics. */
static void gemm_stats(ex *x, const npu_insn *in, const gemm_view *v) {
  const npu_mem *ma = v->ma, *mb = v->mb, *mc = v->mc;
  uint64_t M = v->M, K = v->K, N = v->N, ea = v->ea, eb = v->eb, eo = v->eo;
  bool acc = v->acc, bias = v->bias, chain = v->chain, hold = v->hold, wkeep = v->wkeep;
  int un = npu_node_of_compute(x->g, in->unit);
  uint64_t macs = M * K * N;
  npu_unit_stats *us = &x->st->unit[x->g->n_edges + in->unit];
  us->macs += macs;
  x->st->macs += macs;
  /* at the rate of the capability used (npu-32x32-os: f16 at 256/cycle,
   * int8 at 1024): utilisation is against the peak of what ran */
  x->st->ideal_cycles += (double)macs / (v->cap->throughput > 0 ? v->cap->throughput : 1);
  x->st->bytes_read[ma->buf] += M * K * ea;
  if (!wkeep) x->st->bytes_read[mb->buf] += K * N * eb;
  if (acc && !chain) x->st->bytes_read[mc->buf] += M * N * eo;
  if (bias) x->st->bytes_read[in->u.gemm.bias.buf] += N * eo;
  if (!hold) x->st->bytes_written[mc->buf] += M * N * eo;
  npu_energy_counts *en = &x->st->energy;
  npu_energy_ops(en, in->unit, in->u.gemm.cap, macs);
  npu_energy_move(en, x->g, ma->buf, un, M * K * ea);
  if (!wkeep) npu_energy_move(en, x->g, mb->buf, un, K * N * eb);
  if (acc && !chain) npu_energy_move(en, x->g, mc->buf, un, M * N * eo);
  if (bias) npu_energy_move(en, x->g, in->u.gemm.bias.buf, un, N * eo);
  if (!hold) npu_energy_move(en, x->g, un, mc->buf, M * N * eo);
}

static cov_status run_gemm(ex *x, const npu_insn *in) {
  gemm_view v;
  gemm_view_of(x, in, false, &v);
  range r[4], w;
  int nr = 0;
  COV_RETURN_IF_ERROR(gemm_range(x, in, 0, v.ea, &r[nr++]));
  COV_RETURN_IF_ERROR(gemm_range(x, in, 1, v.eb, &r[nr++]));
  COV_RETURN_IF_ERROR(gemm_range(x, in, 2, v.eo, &w));
  /* In a chain the partial sums stay in the PEs: a chained gemm reads no c
   * and a holding one writes none, so only the chain's first gemm (preload)
   * and its last (drain) touch c's bytes in the scoreboard, and the next
   * tile's accumulation overlaps the SIMD unit reading the drained one. */
  if (v.acc && !v.chain) r[nr++] = w;
  if (v.bias) COV_RETURN_IF_ERROR(mem_range(x, "gemm", "bias", &in->u.gemm.bias, 1, v.N, v.eo, &r[nr++]));
  COV_RETURN_IF_ERROR(chain_gemm(x, in, &r[0], &r[1], &w));
  if (x->dry) return NULL;
  gemm_view_of(x, in, true, &v);
  if (v.to == COV_F32) COV_RETURN_IF_ERROR(gemm_f32(x, in, &v));
  else gemm_i32(in, &v);
  gemm_timing(x, in, &v, r, nr, &w);
  gemm_stats(x, in, &v);
  return NULL;
}

/* ---- SIMD ---- */

static float vop_f(uint8_t op, float a, float b) { return common_op_eval_f32((cov_op)op, a, b); }
static int64_t vop_i(uint8_t op, int64_t a, int64_t b) {
  switch (op) {
    case COV_OP_ADD: return a + b;
    case COV_OP_SUB: return a - b;
    case COV_OP_MUL: return a * b;
    case COV_OP_MAX: return a > b ? a : b;
    case COV_OP_MIN: return a < b ? a : b;
    case COV_OP_NEG: return -a;
    case COV_OP_ABS: return a < 0 ? -a : a;
    case COV_OP_RELU: return a > 0 ? a : 0;
    case COV_OP_RELU_MIN: return a < 0 ? 0 : a < b ? a : b;
    default: return a;
  }
}

/* A vop's timing and statistics (ISA.md "Timing"), its operands at p1, p2
 * (NULL: not read), pd, its reads r and writes w for the scoreboard. */
static void vop_timing(ex *x, const npu_insn *in, const uint8_t *p1, const uint8_t *p2, const uint8_t *pd,
                       const range *r, int nr, const range *w, int nw) {
  const acg_capability *cap = &x->g->compute[in->unit].caps[in->u.vop.cap];
  uint8_t op = in->u.vop.vop;
  bool reduce = in->flags & NPU_VOP_REDUCE, rsum = in->flags & NPU_VOP_ROWRED;
  uint64_t ei = cov_dtype_size(in->u.vop.dtype_in), eo = cov_dtype_size(in->u.vop.dtype_out);
  uint64_t R = in->u.vop.rows, C = in->u.vop.cols;
  const npu_mem *md = &in->u.vop.dst, *m1 = &in->u.vop.src1, *m2 = &in->u.vop.src2;
  const npu_mem *ms = &in->u.vop.sum;
  /* Timing: `throughput` elements per cycle, slowed by the worst bank
   * conflict among the operands and by the edges' bandwidth. */
  int un = npu_node_of_compute(x->g, in->unit);
  uint64_t n = R * C;
  uint64_t base = cdiv(n, cap->throughput);
  uint32_t lanes = (uint32_t)(cap->throughput >= 1 ? cap->throughput : 1);
  if (lanes > C) lanes = (uint32_t)C;
  uint32_t deg = acg_bank_degree(&x->g->storage[m1->buf], (uint64_t)(p1 - x->buf[m1->buf]),
                             (int64_t)m1->col_stride * (int64_t)ei, lanes);
  if (p2) {
    uint32_t d2 = acg_bank_degree(&x->g->storage[m2->buf], (uint64_t)(p2 - x->buf[m2->buf]),
                              (int64_t)m2->col_stride * (int64_t)ei, lanes);
    if (d2 > deg) deg = d2;
  }
  if (!reduce) {
    uint32_t dd = acg_bank_degree(&x->g->storage[md->buf], (uint64_t)(pd - x->buf[md->buf]),
                              (int64_t)md->col_stride * (int64_t)eo, lanes);
    if (dd > deg) deg = dd;
  }
  /* A source whose col_stride is 0 holds one value per row (a row max, a
   * row's reciprocal, a bias along the row): the unit reads it once per row
   * into its broadcast register, not once per element (ISA.md "Timing"). */
  uint64_t in_bytes = (m1->col_stride == 0 ? R : n) * ei;
  if (p2) in_bytes += (m2->col_stride == 0 ? R : n) * ei;
  uint64_t feed = cdiv(in_bytes, edge_bw(x, m1->buf, un));
  /* a row sum is one more value per row over the edge to its buffer */
  uint64_t out_bytes = (reduce ? R : n) * eo + (rsum && ms->buf == md->buf ? R * eo : 0);
  uint64_t drain = cdiv(out_bytes, edge_bw(x, un, md->buf));
  if (rsum && ms->buf != md->buf) {
    uint64_t d2 = cdiv(R * eo, edge_bw(x, un, ms->buf));
    if (d2 > drain) drain = d2;
  }
  uint64_t occ = cyc_mul(base, deg);
  if (feed > occ) occ = feed;
  if (drain > occ) occ = drain;
  timing(x, (int)(x->g->n_edges + in->unit), common_op_name((cov_op)op), r, nr, w, nw, occ,
         cap->latency, cyc_mul(base, deg - 1), NULL);
  x->st->unit[x->g->n_edges + in->unit].elems += n;
  x->st->bytes_read[m1->buf] += (m1->col_stride == 0 ? R : n) * ei;
  if (p2) x->st->bytes_read[m2->buf] += (m2->col_stride == 0 ? R : n) * ei;
  x->st->bytes_written[md->buf] += (reduce ? R : n) * eo;
  if (rsum) x->st->bytes_written[ms->buf] += R * eo;
  npu_energy_counts *en = &x->st->energy;
  npu_energy_ops(en, in->unit, in->u.vop.cap, n);
  npu_energy_move(en, x->g, m1->buf, un, (m1->col_stride == 0 ? R : n) * ei);
  if (p2) npu_energy_move(en, x->g, m2->buf, un, (m2->col_stride == 0 ? R : n) * ei);
  npu_energy_move(en, x->g, un, md->buf, (reduce ? R : n) * eo);
  if (rsum) npu_energy_move(en, x->g, un, ms->buf, R * eo);
}

static cov_status run_vop(ex *x, const npu_insn *in) {
  uint8_t op = in->u.vop.vop;
  bool reduce = in->flags & NPU_VOP_REDUCE;
  /* the fused forms of a unary op (the verifier checked the capability
   * lists them): op(src1 + src2), and the sum of each row's results */
  bool bias = in->flags & NPU_VOP_BIAS, rsum = in->flags & NPU_VOP_ROWRED;
  bool rmax = in->flags & NPU_VOP_RMAX;
  bool src2 = npu_vop_reads_src2(in);
  cov_dtype ti = in->u.vop.dtype_in, tout = in->u.vop.dtype_out;
  uint64_t ei = cov_dtype_size(ti), eo = cov_dtype_size(tout);
  uint64_t R = in->u.vop.rows, C = in->u.vop.cols;
  range r[2], w[2];
  int nr = 0, nw = 1;
  COV_RETURN_IF_ERROR(mem_range(x, "vop", "src1", &in->u.vop.src1, R, C, ei, &r[nr++]));
  if (src2) COV_RETURN_IF_ERROR(mem_range(x, "vop", "src2", &in->u.vop.src2, R, C, ei, &r[nr++]));
  COV_RETURN_IF_ERROR(mem_range(x, "vop", "dst", &in->u.vop.dst, R, reduce ? 1 : C, eo, &w[0]));
  if (rsum) COV_RETURN_IF_ERROR(mem_range(x, "vop", "sum", &in->u.vop.sum, R, 1, eo, &w[nw++]));
  COV_RETURN_IF_ERROR(chain_touch(x, "vop", r, nr, w, nw));
  if (x->dry) return NULL;

  const npu_mem *md = &in->u.vop.dst, *m1 = &in->u.vop.src1, *m2 = &in->u.vop.src2;
  const npu_mem *ms = &in->u.vop.sum;
  uint8_t *pd = x->buf[md->buf] + x->reg[md->reg] + md->off;
  uint8_t *ps = rsum ? x->buf[ms->buf] + x->reg[ms->reg] + ms->off : NULL;
  const uint8_t *p1 = x->buf[m1->buf] + x->reg[m1->reg] + m1->off;
  const uint8_t *p2 = src2 ? x->buf[m2->buf] + x->reg[m2->reg] + m2->off : NULL;
  bool fl = cov_dtype_is_float(ti);
  for (uint64_t i = 0; i < R; i++) {
    float facc = 0;
    int64_t iacc = 0;
    for (uint64_t j = 0; j < C; j++) {
      const uint8_t *a = p1 + ((int64_t)i * m1->row_stride + (int64_t)j * m1->col_stride) * (int64_t)ei;
      const uint8_t *b = p2 ? p2 + ((int64_t)i * m2->row_stride + (int64_t)j * m2->col_stride) * (int64_t)ei : NULL;
      uint8_t *d = pd + ((int64_t)i * md->row_stride + (int64_t)j * md->col_stride) * (int64_t)eo;
      if (fl) {
        float va = ld_f(a, ti), vb = b ? ld_f(b, ti) : in->u.vop.imm;
        if (bias) {
          /* x + b rounded to f32, then the op: the bits of an add (or of
           * x - m with b = -m) followed by the unary op */
          va = va + vb;
          vb = 0;
        }
        if (reduce) facc = j == 0 ? va : vop_f(op, facc, va);
        else if (!cov_dtype_is_float(tout)) st_f_int(d, tout, vop_f(op, va, vb));
        else st_f(d, tout, vop_f(op, va, vb));
        if (rsum) { /* the stored results, reduced in column order as a reduce add (max) of them */
          float vd = ld_f(d, tout);
          facc = j == 0 ? vd : rmax ? vop_f(COV_OP_MAX, facc, vd) : facc + vd;
        }
      } else {
        int64_t va = ld_i(a, ti), vb = b ? ld_i(b, ti) : (int64_t)in->u.vop.imm;
        if (reduce) iacc = j == 0 ? va : vop_i(op, iacc, va);
        else if (cov_dtype_is_float(tout)) st_f(d, tout, (float)vop_i(op, va, vb));
        else st_i(d, tout, vop_i(op, va, vb));
      }
    }
    if (reduce) {
      uint8_t *d = pd + (int64_t)i * md->row_stride * (int64_t)eo;
      if (fl) st_f(d, tout, facc);
      else st_i(d, tout, iacc);
    }
    if (rsum) st_f(ps + (int64_t)i * ms->row_stride * (int64_t)eo, tout, facc);
  }

  vop_timing(x, in, p1, p2, pd, r, nr, w, nw);
  return NULL;
}

/* ---- driver ---- */

/* Core c's executor: its registers, loops, units, arrays' chains and
 * scoreboard (shared nodes' blocks from first), its memories. */
static cov_status core_init(ex *x, cov_npu_sim *sim, const npu_prog *p, const npu_exec_opts *o,
                            cov_npu_stats *stats, ex_shared *sh, uint32_t c, const ex *first) {
  memset(x, 0, sizeof *x);
  x->sim = sim;
  x->sh = sh;
  x->p = p;
  x->t = &sim->tgt;
  x->g = sim->acg;
  x->dry = o->dry;
  x->trace = o->dry ? NULL : o->trace;
  x->st = stats;
  x->core = c;
  npu_core_range(p, c, &x->lo, &x->hi);
  x->pc = x->lo;
  int n_units = x->g->n_edges + x->g->n_compute;
  x->tid0 = (int)c * NPU_TRACE_CORE_TIDS;
  x->buf = sim->cbuf ? sim->cbuf + (size_t)c * (size_t)x->g->n_storage : NULL;
  x->chain = calloc((size_t)x->g->n_compute + 1, sizeof *x->chain);
  if (!x->chain) return cov_error(COV_OUT_OF_MEMORY, NULL, "simulator state");
  if (x->dry) return NULL;
  x->unit_free = calloc((size_t)n_units, sizeof *x->unit_free);
  if (!x->unit_free) return cov_error(COV_OUT_OF_MEMORY, NULL, "simulator state");
  x->trace_offset = o->trace_offset;
  x->barrier = x->now = x->max_end = o->start; /* a run that starts later (npu_run_begin) */
  return sb_init(x, first);
}

static void core_free(ex *x) {
  free(x->chain);
  free(x->unit_free);
  sb_free(x);
}

/* Runs core x's control instructions up to and including its next unit
 * instruction or sync, or to its end (x->ended). */
static cov_status core_step(ex *x, uint64_t max_dyn) {
  const npu_prog *p = x->p;
  for (;;) {
    while (x->depth > 0 && x->pc == x->stack[x->depth - 1].end) {
      if (--x->stack[x->depth - 1].left > 0) {
        x->pc = x->stack[x->depth - 1].start;
        break;
      }
      x->depth--;
    }
    if (x->pc >= x->hi) {
      x->ended = true;
      return NULL;
    }
    if (++x->dyn > max_dyn)
      return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, p->acg_name),
                       "instruction %u: the program runs more than %llu instructions (loop counts "
                       "too large?)",
                       x->pc, (unsigned long long)max_dyn);
    const npu_insn *in = &p->insns[x->pc];
    cov_status st = NULL;
    bool unit = false;
    switch (in->op) {
      case NPU_OP_NOP: break;
      case NPU_OP_BARRIER: x->barrier = x->max_end; break;
      case NPU_OP_SYNC: x->at_sync = true; x->syncs++; break;
      case NPU_OP_SETR: x->reg[in->u.r.reg] = in->u.r.imm; break;
      case NPU_OP_ADDR: {
        /* Registers hold byte addresses; keep them inside +-2^62 so address
         * arithmetic cannot overflow. */
        int64_t v = x->reg[in->u.r.reg], d = in->u.r.imm;
        int64_t lim = (int64_t)1 << 62;
        if (d > lim || d < -lim || v + d > lim || v + d < -lim)
          return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, p->acg_name),
                           "instruction %u (addr): field imm: r%u overflows", x->pc, in->u.r.reg);
        x->reg[in->u.r.reg] = v + d;
        break;
      }
      case NPU_OP_LOOP:
        x->stack[x->depth++] = (loop_frame){x->pc + 1, x->pc + 1 + in->u.loop.body, in->u.loop.count};
        break;
      case NPU_OP_DMA: st = run_dma(x, in), unit = true; break;
      case NPU_OP_GEMM: st = run_gemm(x, in), unit = true; break;
      case NPU_OP_VOP: st = run_vop(x, in), unit = true; break;
      default:
        st = cov_error(COV_INVALID_INPUT, COV_AT(NULL, p->acg_name), "instruction %u: unknown opcode 0x%02x",
                       x->pc, in->op);
    }
    if (st) return st;
    x->pc++;
    if (unit || x->at_sync) return NULL;
  }
}

/* The cores of the program side by side: the core whose latest unit
 * instruction started earliest issues next (returned; NULL when every core
 * has ended), so DRAM's interface sees the cores' transfers about in the
 * order of time; a core at a sync waits until every core that has not
 * ended is at one, then all go on after everything before has finished. */
static ex *next_core(ex *xs, uint32_t n) {
  for (;;) {
    ex *next = NULL;
    uint32_t live = 0;
    for (uint32_t c = 0; c < n; c++) {
      if (xs[c].ended) continue;
      live++;
      if (!xs[c].at_sync && (!next || xs[c].now < next->now)) next = &xs[c];
    }
    if (next || !live) return next;
    uint64_t all = 0; /* every live core at a sync: release them */
    for (uint32_t c = 0; c < n; c++)
      if (xs[c].max_end > all) all = xs[c].max_end;
    for (uint32_t c = 0; c < n; c++)
      if (!xs[c].ended) xs[c].barrier = all, xs[c].at_sync = false;
  }
}

/* In a dry run each core runs alone (n 1). */
static cov_status run_cores(ex *xs, uint32_t n, uint64_t max_dyn) {
  for (ex *c; (c = next_core(xs, n));) COV_RETURN_IF_ERROR(core_step(c, max_dyn));
  return NULL;
}

/* After the run: no core may end holding a tile in its array, and the cores
 * must pass the same number of syncs (ISA.md "Cores"). */
static cov_status cores_check_end(const ex *xs, uint32_t n) {
  const npu_prog *p = xs[0].p;
  for (uint32_t c = 0; c < n; c++) {
    for (int u = 0; u < xs[c].g->n_compute; u++)
      if (xs[c].chain[u].held)
        return cov_error(COV_INVALID_INPUT, COV_AT(NULL, p->acg_name),
                         "instruction %u (gemm): field flags: the program ends while it holds its tile "
                         "in '%s' (flag hold): no gemm drains it",
                         xs[c].chain[u].held_pc, xs[c].g->compute[u].name);
    if (xs[c].syncs != xs[0].syncs)
      return cov_error(COV_INVALID_INPUT, COV_AT(NULL, p->acg_name),
                       "core %u passes %u sync instructions, core 0 %u: every core must reach each "
                       "sync",
                       c, xs[c].syncs, xs[0].syncs);
    if (xs[c].max_end >= NPU_CYCLE_CAP)
      return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, p->acg_name),
                       "the program takes 2^62 cycles or more on ACG '%s' (are its bandwidths and "
                       "throughputs in bytes and elements per cycle?)",
                       xs[c].g->name ? xs[c].g->name : "");
  }
  return NULL;
}

/* A run's cycles (from `start` to its last result) and instructions. */
static uint64_t stats_end(const ex *xs, uint32_t n, cov_npu_stats *stats, uint64_t start) {
  uint64_t end = start;
  stats->dyn_insns = 0;
  for (uint32_t c = 0; c < n; c++) {
    if (xs[c].max_end > end) end = xs[c].max_end;
    stats->dyn_insns += xs[c].dyn;
  }
  stats->cycles = end - start;
  stats->cores = xs[0].t->cores;
  return end;
}

cov_status npu_exec(cov_npu_sim *sim, const npu_prog *p, const npu_exec_opts *o,
                    cov_npu_stats *stats) {
  uint32_t n = npu_prog_cores(p);
  uint64_t max_dyn = o->max_dyn ? o->max_dyn : NPU_MAX_DYN_INSNS;
  ex_shared sh = {0};
  ex *xs = calloc(n, sizeof *xs);
  if (!xs) return cov_error(COV_OUT_OF_MEMORY, NULL, "simulator state");
  cov_status st = NULL;
  uint32_t made = 0;
  for (; made < n && !st; made++) st = core_init(&xs[made], sim, p, o, stats, &sh, made, made ? &xs[0] : NULL);
  int n_units = sim->acg->n_edges + sim->acg->n_compute;
  if (!st && !o->dry && xs[0].trace) {
    if (o->trace_fragment) sh.trace_any = true;
    else {
      npu_trace_header(xs[0].trace, sim->acg, stats);
      sh.trace_any = n_units > 0;
    }
  }
  if (!st && o->dry)
    for (uint32_t c = 0; c < n && !st; c++) st = run_cores(&xs[c], 1, max_dyn);
  else if (!st)
    st = run_cores(xs, n, max_dyn);
  if (!st) st = cores_check_end(xs, n);
  if (!st && !o->dry) {
    stats_end(xs, n, stats, 0);
    if (xs[0].trace && !o->trace_fragment) {
      fprintf(xs[0].trace, ",\n{\"name\":\"energy\",\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"ts\":%llu,"
              "\"args\":", (unsigned long long)stats->cycles);
      npu_energy_trace_args(xs[0].trace, stats);
      fprintf(xs[0].trace, "}\n]}\n");
    }
  }
  for (uint32_t c = 0; c < made; c++) core_free(&xs[c]);
  free(xs);
  return st;
}

/* ---- runs of several tenants on one DRAM interface (npu_internal.h) ---- */

struct npu_dram_if {
  ex_shared sh;
};

struct npu_run {
  ex *xs;
  uint32_t n, made;
  uint64_t max_dyn, start;
  cov_npu_stats *st;
};

cov_status npu_dram_if_create(npu_dram_if **out) {
  *out = calloc(1, sizeof **out);
  return *out ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "DRAM interface state");
}

void npu_dram_if_free(npu_dram_if *d) { free(d); }

void npu_run_free(npu_run *r) {
  if (!r) return;
  for (uint32_t c = 0; c < r->made; c++) core_free(&r->xs[c]);
  free(r->xs);
  free(r);
}

cov_status npu_run_begin(cov_npu_sim *sim, const npu_exec_opts *o, cov_npu_stats *stats, npu_dram_if *d,
                         npu_run **out) {
  *out = NULL;
  const npu_prog *p = sim->prog;
  if (!p || o->dry || o->trace || !stats)
    return cov_error(COV_INTERNAL, COV_AT_CALL("npu_run_begin"), "a loaded program, timed, untraced, with statistics");
  npu_run *r = calloc(1, sizeof *r);
  if (!r) return cov_error(COV_OUT_OF_MEMORY, NULL, "simulator state");
  r->n = npu_prog_cores(p);
  r->max_dyn = o->max_dyn ? o->max_dyn : NPU_MAX_DYN_INSNS;
  r->start = o->start;
  r->st = stats;
  r->xs = calloc(r->n, sizeof *r->xs);
  cov_status st = r->xs ? NULL : cov_error(COV_OUT_OF_MEMORY, NULL, "simulator state");
  for (; !st && r->made < r->n; r->made++)
    st = core_init(&r->xs[r->made], sim, p, o, stats, &d->sh, r->made, r->made ? &r->xs[0] : NULL);
  if (st) {
    npu_run_free(r);
    return st;
  }
  *out = r;
  return NULL;
}

uint64_t npu_run_next(npu_run *r) {
  ex *c = next_core(r->xs, r->n);
  return c ? c->now : UINT64_MAX;
}

cov_status npu_run_step(npu_run *r) {
  ex *c = next_core(r->xs, r->n);
  return c ? core_step(c, r->max_dyn) : NULL;
}

cov_status npu_run_finish(npu_run *r, uint64_t *end) {
  cov_status st = cores_check_end(r->xs, r->n);
  if (!st) *end = stats_end(r->xs, r->n, r->st, r->start);
  npu_run_free(r);
  return st;
}

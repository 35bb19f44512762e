/* mapper/map_internal.h: what the mapper's files share and nothing else
 * reads. The public API is include/covenant/mapper.h; the scheduled IR that
 * code generators read is mapper/map_ir.h. */
#ifndef MAP_INTERNAL_H
#define MAP_INTERNAL_H

#include "codelets/cdl_bind.h"
#include "codelets/cdl_ir.h"
#include "covenant/mapper.h"
#include "mapper/map_ir.h"

#define MAP_MAX_CALLS 8
#define MAP_MAX_ATTRS 16

/* One codelet call of a layer group. The first call's inputs are all layer
 * inputs; every later call takes the previous call's output as input 0,
 * viewed with shape view[] (relu works on a flat [L], softmax on rows), and
 * its other inputs are layer inputs (constants such as a bias). */
typedef struct map_call {
  const cov_codelet *c;
  cov_attr attrs[MAP_MAX_ATTRS];
  int n_attrs;
  int n_inputs;
  cov_tensor in[4];  /* dtype and shape only (data NULL) */
  int view_rank;     /* later calls: the view of input 0 */
  int64_t view[COV_MAX_RANK];
} map_call;

struct cov_layer {
  cov_arena *arena;
  const cov_codelet_lib *lib;
  cov_codelet_lib *owned_lib; /* lib when the layer loaded it, else NULL */
  const char *name;
  int n_calls;
  map_call calls[MAP_MAX_CALLS];
};

/* map_gemm.c: the share of load x's tile (an operand of the GEMMs) that
 * the first GEMM waits for: the pieces the code generator loads the tile
 * in (backends/npu-sim/npu_head.c: along its outermost dimension on chip,
 * at most 16) that hold what the first GEMM reads; 1 where it reads some of
 * every piece or the load is not split. */
double map_gemm_first_share(const map_schedule *s, const map_gemm_plan *gp, const map_xfer *x);
/* Cycles of the GEMMs of one chain (output-stationary: the run of leaves
 * that keeps its partial sums in the PEs), or of one leaf where they do not
 * chain. */
double map_gemm_chain_cycles(const map_schedule *s, const map_gemm_plan *gp);

/* map_layer.c: an empty layer (its arena and codelet library), and the
 * output shape of call i (binding it); map_model.c builds on both. */
cov_status map_layer_new(const char *name, const cov_codelet_lib *lib, cov_layer **out);
/* st, or out of memory where an allocation from l's arena failed. */
cov_status map_layer_done(cov_layer *l, cov_status st);
cov_status map_call_output(const cov_layer *l, int i, int *rank, int64_t *shape);

struct cov_schedule {
  cov_arena *arena;
  map_schedule s;
  int n_alts;
  map_schedule alts[MAP_MAX_ALTS + 1]; /* + room for a rectangle variant (map_rect.c) */
  int64_t evaluations;   /* cost-model evaluations the search made */
  int64_t candidates;    /* candidates enumerated (before pruning) */
};

/* map_problem.c: the main loop nest of call 0 into s->prob (and the
 * codelet's own scalar post ops into s->vops); *first_epi is the first call
 * the epilogue lowers (0 when call 0 is itself an epilogue codelet). */
cov_status map_extract(const cov_layer *layer, map_schedule *s, int *first_epi, cov_arena *arena);
/* map_epilogue.c: lowers calls first.. to vector ops on register 0. Adds
 * MAP_ROLE_VECTOR operands to s->prob. */
cov_status map_lower_epilogue(const cov_layer *layer, int first, map_schedule *s, cov_arena *arena);
/* Whether a codelet is lowered whole by the epilogue (softmax, relu, ...). */
int map_epilogue_whole(const char *codelet);
/* Binds every vop to a SIMD capability of acg. */
cov_status map_bind_epilogue(const cov_acg *acg, map_schedule *s);

/* A mapping decision, from which map_build derives a whole schedule. */
typedef struct map_choice {
  int64_t fac[MAP_MAX_LEVELS][MAP_MAX_LOOPS]; /* temporal trips per level and loop */
  int64_t sp[MAP_MAX_LOOPS];                  /* spatial trips (last level) */
  map_axis sp_axis[MAP_MAX_LOOPS];
  int order[MAP_MAX_LEVELS][MAP_MAX_LOOPS];   /* per level, loops outermost first */
  bool dbuf;                                  /* double buffer where allowed */
  int64_t wg[MAP_MAX_LOOPS];                  /* spatial trips over workgroups (level 0) */
  int64_t wave[MAP_MAX_LOOPS];                /* spatial trips over waves (level 1) */
  bool wg_outer;                              /* workgroups outermost at level 0 (map_level_sloops) */
} map_choice;

/* map_bind.c: the compute node and capability for the main statement, the
 * operands' storage paths, the number of levels. */
typedef struct map_target {
  const cov_acg *acg;
  int node, cap;
  cov_dtype mul_dtype, acc_dtype;
  bool narrowed;
  int n_levels;
  int path[MAP_MAX_OPERANDS][MAP_MAX_LEVELS]; /* storage node per level, -1 if none */
  int edge_in[MAP_MAX_OPERANDS][MAP_MAX_LEVELS]; /* edge into level l (from l-1), -1 */
  uint64_t dims[2];    /* array rows/cols, or {lanes, 1} */
  int simd_node;       /* for the epilogue, -1 if none */
  int64_t wg_max;      /* instances of the level-1 storage (LDS per CU): 1 if one */
  int64_t wave_max;    /* compute instances per level-1 instance (waves per CU): 1 if one */
  bool cores;          /* the workgroups are an NPU's cores (map_cores) */
  int epi_node;        /* storage of the epilogue's temporaries, -1 if no epilogue */
  bool epi_in_place;   /* register 0 is the output's level-1 tile */
  bool tiles;          /* a mac on a matrix, SIMD or scalar unit (map_mac_tiles) */
} map_target;
cov_status map_bind_target(const map_problem *prob, const cov_acg *acg, map_target *t);
/* The same, on compute node `only` alone (-1: any, the default rule). */
cov_status map_bind_target_on(const map_problem *prob, const cov_acg *acg, int only, map_target *t);
/* map_units.c: whether capability cap of compute node `node` runs a mac
 * as tiles (a matrix, SIMD or scalar unit; acg_mac_form_of) on an NPU
 * ACG; whether it runs a mac at all (else the reason); the compute nodes a
 * two-input mac problem binds to, one binding each (at most max), with
 * floor[i] (when not NULL) a lower bound of any schedule's cycles there. */
bool map_mac_tiles(const cov_acg *g, int node, int cap, acg_mac_form *f);
bool map_mac_runs(const cov_acg *g, int node, int cap, char *why, size_t nwhy);
int map_mac_units(const map_problem *p, const cov_acg *g, int *nodes, double *floor, int max);
/* Whether the instances of compute node `node` are an NPU's cores
 * (backends/npu-sim/ISA.md "Cores": each with its own units, buffers and
 * DMA engines, running its own slice as its own program): the node has as
 * many as the ACG's systolic array, or where it has none its matrix unit
 * whose on-chip storage nodes are each one per unit or one shared (a
 * GPU's matrix units are several per CU: waves, not cores). So a mac on
 * an NPU's SIMD unit, or a pooling, spreads over the cores too. */
bool map_cores(const cov_acg *g, int node);
/* Where the epilogue's temporaries live (sets t->epi_node, t->epi_in_place):
 * storage the SIMD unit both reads and writes and from which results reach
 * DRAM; the output's level-1 storage first (register 0 then stays in place). */
cov_status map_bind_epilogue_storage(const map_schedule *proto, map_target *t);
/* map_api.c: problem, epilogue and bindings of a layer on an ACG (what the
 * search starts from). */
cov_status map_prepare(const cov_layer *layer, const cov_acg *acg, map_schedule *proto,
                       map_target *t, cov_arena *arena);
/* The same with the main statement on compute node `only` (-1: any). */
cov_status map_prepare_on(const cov_layer *layer, const cov_acg *acg, int only, map_schedule *proto,
                          map_target *t, cov_arena *arena);

/* map_epilogue.c: the epilogue's temporaries for a level-1 output tile of
 * tile[] (per problem loop), in elements of the accumulator type: a slot of
 * npts (the tile's output points) per register not in place, row registers
 * of npts / (row loop's tile) each, then the pooled result. */
typedef struct map_epi_layout {
  int64_t npts;
  int64_t reg_off[MAP_MAX_VREGS]; /* -1: in place (register 0) or unused */
  int64_t row_off[2], row_elems;
  int64_t pool_off, pool_elems;   /* pool_off -1: no pooling */
  int64_t elems;                  /* the whole area */
} map_epi_layout;
void map_epi_plan(const map_schedule *s, bool in_place, const int64_t *tile,
                    map_epi_layout *out);
/* Bytes of that area (0 without an epilogue node). */
uint64_t map_epi_bytes(const map_target *t, const map_schedule *s, const int64_t *tile);

/* map_build.c: schedule from a choice; returns 0 and fills s, or -1 when the
 * tiles do not fit (why in *why when non-NULL). */
int map_build(const map_target *t, const map_schedule *proto, const map_choice *ch,
              map_schedule *s, const char **why);
/* The scheduled loops of level lv, outermost first, into out[max]; their
 * number, or -1 when more than max. */
int map_level_sloops(const map_target *t, const map_problem *p, const map_choice *ch, int lv,
                     map_sloop *out, int max);
/* A ReLU (or max with a scalar) of register 0 right after a max pool of
 * register 0 becomes the pool's starting value (map_vop.b, a scalar): max
 * over the window and that value is relu of the max, one SIMD pass fewer.
 * Run on the epilogue as bound, and again after a rewrite took the bias add
 * from between them (map_bias_rewrite). */
void map_fold_relu_into_pool(map_schedule *s);
/* Element type of operand o's place at level lv. */
cov_dtype map_place_dtype(const map_target *t, const map_problem *p, int o, int lv);
/* Bytes of one transfer of operand o at level lv for a tile of elems elements. */
uint64_t map_xfer_bytes(const map_target *t, const map_schedule *s, int o, int lv, int64_t elems);
/* Tile box of operand o for tile extents tile[] (per problem loop). */
void map_tile_box(const map_operand *op, int n_loops, const int64_t *tile, int64_t *shape);

/* map_dram.c: DRAM bytes of one execution of transfer x for the box `box`
 * (NULL: its place's) laid out with strides `lst` (NULL: the schedule's,
 * map_gemm_tile_strides); map_dram_cost_bytes with both NULL. */
double map_dram_cost_layout(const map_schedule *s, const map_xfer *x, const int64_t *box, const int64_t *lst);
/* The DRAM bytes one execution of transfer x reads or writes: its tile's
 * elements inside the tensor (no padding, no burst rounding), each
 * rectangle's box for a rectangle store. */
double map_dram_valid_bytes(const map_schedule *s, const map_xfer *x);
/* map_cost.c */
void map_cost_eval(map_schedule *s);
/* map_energy.c: the schedule's predicted energy into s->cost (energy_pj,
 * has_energy); issues: temporal steps of the innermost level in all. */
void map_energy_eval(map_schedule *s, double issues);
/* Bandwidth of a transfer on edge (or -1) between storage nodes src and dst:
 * the edge's, capped by the nodes' own. */
double map_edge_bw(const cov_acg *g, int edge, int src, int dst);
/* Cycles of one issue of capability cap_index on compute node `node`. */
double map_issue_cycles(const cov_acg *g, int node, int cap_index);
/* The epilogue's cycles when par instances share it. */
double map_epilogue_cycles(const map_schedule *s, double par);

/* map_verify.c */
cov_status map_verify(const map_schedule *s);

/* map_dump.c: the schedule (map_dump), and its parts for a schedule still
 * being made (tests/mapper/test_steps.c): the problem's loops and operands,
 * the epilogue's vector ops (their units once bound, else "?"). */
void map_dump(const map_schedule *s, FILE *out);
void map_dump_problem(const map_problem *p, FILE *out);
void map_dump_epilogue(const map_schedule *s, FILE *out);
void map_dump_cost(const map_schedule *s, FILE *out);
/* map_api.c: the schedule's loops on one line ("L0 k:4 | L1 c@16 ..."),
 * as --explain lists the chosen schedule and its alternatives. */
void map_schedule_line(const map_schedule *s, FILE *out);
const char *map_axis_name(map_axis a);

/* map_search.c: the divisors of n in increasing order, at most max of them
 * (tilings are divisor-based at every level; the search and its bound
 * enumerate the same candidates). */
int map_divisors(int64_t n, int64_t *out, int max);

/* map_bound.c: lower bounds of the cost over the completions of a partial
 * choice (the proof is in map_bound.c). */
typedef struct map_bound_xfer {
  bool present, dram, db_allowed;
  int edge;
  double bw, lat;
  double min_bytes; /* compulsory bytes of this operand at this level */
} map_bound_xfer;
typedef struct map_bound {
  const map_target *t;
  const map_schedule *proto;
  int L;
  double issue, latency, dram_bw;
  double ws_rows;    /* > 0: GEMMs on a weight-stationary array of these rows,
                        whose k may run over several reduction loops (k
                        digits, map_gemm.c) */
  double ws_trips;   /* their streamed rows at least: output trips x
                        ceil(reduction per instance / rows) */
  double gemm_floor; /* > 0: the main statement runs as GEMMs on an output-
                        stationary array, which take at least MACs /
                        throughput cycles (map_cost.c) */
  bool dep[MAP_MAX_OPERANDS][MAP_MAX_LOOPS];
  map_bound_xfer x[MAP_MAX_OPERANDS][MAP_MAX_LEVELS];
  /* per spatial binding, instances and double buffering (map_bound_config) */
  double trips, epilogue, inst_below[MAP_MAX_LEVELS];
  double par; /* instances working at once (workgroups x waves) */
  double engines[MAP_MAX_LEVELS]; /* the most DMA engines moving a level's copies at once */
} map_bound;
void map_bound_init(map_bound *B, const map_target *t, const map_schedule *proto);
/* After ch's sp, sp_axis, wg, wave and dbuf are set. */
void map_bound_config(map_bound *B, const map_choice *ch);
/* Whether every schedule that keeps ch's factors of levels >= F (F == 0:
 * all, level 0 holding the rest) and orders of levels < K (K > 0 only with
 * F == 0) costs more than limit cycles, by a lower bound of the cost. */
bool map_bound_cuts(const map_bound *B, const map_choice *ch, int F, int K, double limit);

/* map_search.c */
/* map_cost.c: how many times one SIMD issue's lanes serialise on the banks
 * of the deepest tiles they read and write (the lanes loop's stride through
 * each, as the simulator times it); 1 without a lanes loop. */
double map_lane_bank_factor(const map_schedule *s);
/* map_depthwise.c: a depthwise contraction (weights and output share no
 * loop the input lacks) rewritten so that a window of J neighbouring outputs
 * fills the array's columns and their input window its rows (a banded weight
 * block); false when the problem is not one or no J >= 2 fits the array. */
bool map_dw_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out);
/* map_pad.c: loops whose divisors leave most of the array idle (58
 * channels on 16 rows: 2) padded to a multiple of the array's size, where
 * the added values are reads of padding 0 (reductions) or outputs outside
 * the tensor that no store keeps; false when no loop is. */
bool map_pad_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out);
/* map_bias.c: the epilogue's first op, an add of a per-channel vector to
 * the accumulator, moved onto the array (the bias preloaded into its
 * accumulators: map_problem.bias_init), where the ACG has a path for the
 * vector to the array besides the operands'; false when not. */
bool map_bias_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out);
/* Whether schedule s can preload its bias: on a systolic array, one GEMM's
 * streamed rows must share their bias (a row vector over the columns). */
bool map_bias_fits(const map_schedule *s);
/* The output dimension whose access equals vector operand v's only
 * dimension (so the output's index there is the vector's); -1 if none. */
int map_bias_out_dim(const map_problem *p, int v);
/* A rewrite of the search's problem and epilogue (the three above); out
 * starts as a copy of proto. */
typedef bool (*map_rewrite_fn)(const map_schedule *proto, const map_target *t, map_schedule *out);
/* The padded and the depthwise problem with their bias preloaded. */
bool map_pad_bias_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out);
bool map_dw_bias_rewrite(const map_schedule *proto, const map_target *t, map_schedule *out);
/* Searches the rewritten problem too, when there is one, and keeps the
 * cheapest schedules of both in cs (the cost model decides). */
cov_status map_rewrite_search(const map_schedule *proto, const map_target *t,
                              const cov_map_options *opt, cov_schedule *cs, map_rewrite_fn rewrite);
cov_status map_search(const map_target *t, const map_schedule *proto,
                      const cov_map_options *opt, cov_schedule *out);
/* map_rect.c: rectangular pixel tiles (map_ir.h): the variant of each of
 * cs's schedules that streams two output loops through an output-
 * stationary array's rows, where fewer rectangles than its tiles cover
 * them (proto: the unpadded problem); the cheapest one that the cost model
 * ranks below its source is added to cs's schedules by cost (none
 * dropped: cs->alts has room for it). */
cov_status map_rect_search(const map_schedule *proto, cov_schedule *cs);

/* map_interp.c: runs a schedule on the CPU through buffers of the ACG's
 * capacities. inputs: the layer inputs in layer order (f32). */
cov_status map_interp(const map_schedule *s, const cov_tensor *inputs, int n_inputs,
                      cov_tensor *out);

#endif

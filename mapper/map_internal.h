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
  cov_codelet_lib *lib;
  const char *name;
  int n_calls;
  map_call calls[MAP_MAX_CALLS];
};

/* map_layer.c: an empty layer (its arena and codelet library), and the
 * output shape of call i (binding it); map_model.c builds on both. */
cov_status map_layer_new(const char *name, cov_layer **out);
cov_status map_call_output(const cov_layer *l, int i, int *rank, int64_t *shape);

struct cov_schedule {
  cov_arena *arena;
  map_schedule s;
  int n_alts;
  map_schedule alts[MAP_MAX_ALTS];
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
} map_target;
cov_status map_bind_target(const map_problem *prob, const cov_acg *acg, map_target *t);

/* map_build.c: schedule from a choice; returns 0 and fills s, or -1 when the
 * tiles do not fit (why in *why when non-NULL). */
int map_build(const map_target *t, const map_schedule *proto, const map_choice *ch,
              map_schedule *s, const char **why);
/* Tile box of operand o for tile extents tile[] (per problem loop). */
void map_tile_box(const map_operand *op, int n_loops, const int64_t *tile, int64_t *shape);

/* map_cost.c */
void map_cost_eval(map_schedule *s);

/* map_verify.c */
cov_status map_verify(const map_schedule *s);

/* map_dump.c */
void map_dump(const map_schedule *s, FILE *out);
void map_dump_cost(const map_schedule *s, FILE *out);
const char *map_axis_name(map_axis a);

/* map_search.c */
cov_status map_search(const map_target *t, const map_schedule *proto,
                      const cov_map_options *opt, cov_schedule *out);

/* map_interp.c: runs a schedule on the CPU through buffers of the ACG's
 * capacities. inputs: the layer inputs in layer order (f32). */
cov_status map_interp(const map_schedule *s, const cov_tensor *inputs, int n_inputs,
                      cov_tensor *out);

#endif

/* mapper/map_walk.h: the one walk over a schedule (its loop nest and the
 * transfers placed between its loops) that every consumer of a schedule
 * follows: the schedule interpreter (map_interp.c), which checks a schedule
 * on the CPU, and the NPU code generator (backends/npu-sim/npu_codegen.c),
 * which emits the program the simulator runs. Both see the same loop values,
 * the same transfer order and the same double-buffer halves, so what the
 * interpreter checks is what the program does; only what happens at each
 * transfer and at the innermost point differs (ops below).
 *
 * Order: the transfers placed after loop `pos` run at the top of each of its
 * iterations (loads and fresh output tiles, outer level first) and at the
 * bottom (stores, inner level first); pos -1 is around the whole nest. */
#ifndef MAP_WALK_H
#define MAP_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "covenant/status.h"
#include "mapper/map_ir.h"

typedef struct map_walk map_walk;

typedef struct map_walk_ops {
  /* operand o's level-lv tile is filled from level lv-1 (DRAM for lv 1) */
  void (*load)(map_walk *w, int o, int lv);
  /* the output's level-lv tile starts afresh: no partial sums come back
   * (NULL: nothing to do beyond the buffer half switch) */
  void (*fresh)(map_walk *w, int o, int lv);
  /* operand o's level-lv tile goes back to level lv-1 (DRAM for lv 1) */
  void (*store)(map_walk *w, int o, int lv);
  /* the innermost point, or the nest below the last unfolded loop */
  void (*leaf)(map_walk *w);
  /* loop i is covered whole by each leaf (a GEMM's m/k/n loops): walked
   * once with iteration 0 and no transfers of its own (NULL: none) */
  bool (*folded)(const map_walk *w, int i);
} map_walk_ops;

struct map_walk {
  const map_schedule *s;
  const map_walk_ops *ops;
  void *ctx;                    /* the consumer's state */
  const cov_status *err;        /* the walk stops once *err is set */
  int64_t iter[MAP_MAX_SLOOPS]; /* current iteration of each scheduled loop */
  /* tiles filled per operand and level: selects a double-buffered tile's half */
  int64_t parity[MAP_MAX_OPERANDS][MAP_MAX_LEVELS];
  /* One core's share (map_walk_set_core): each workgroup loop runs only
   * iteration core_iter[i] */
  bool one_core;
  int64_t core_iter[MAP_MAX_SLOOPS];
};

/* Initialises w (iterations and parities zero). */
void map_walk_init(map_walk *w, const map_schedule *s, const map_walk_ops *ops, void *ctx,
                   const cov_status *err);
/* The cores a schedule's workgroup loops spread it over (MAP_AX_WORKGROUP:
 * one level-1 tile per instance of the level-1 storage, each instance a
 * core of an NPU): the product of their trips, 1 without any. */
int64_t map_walk_cores(const map_schedule *s);
/* Restricts the walk to core `core` (< map_walk_cores) of them: each
 * workgroup loop runs one iteration, the digits of `core` in the loops'
 * trips (the outermost loop the most significant); parities then count
 * that core's tiles only, as its own buffers alternate. */
void map_walk_set_core(map_walk *w, int64_t core);
/* Walks the whole schedule, calling ops. */
void map_walk_run(map_walk *w);

/* Trips scheduled loop i runs now: its own, or inside a schedule's
 * rect_sloop the current rectangle's extent (map_ir.h "Rectangular pixel
 * tiles"). */
int64_t map_walk_trips(const map_walk *w, int i);
/* The box of operand o's level-lv tile now: its place's shape, or inside
 * rect_sloop the current rectangle's (whose dense row-major layout the
 * tile then has). */
void map_walk_box(const map_walk *w, int o, int lv, int64_t *shape);
/* Whether operand o's level-lv tile is one of the rectangles. */
bool map_walk_in_rect(const map_schedule *s, int o, int lv);
/* Problem-loop values of the scheduled loops above below_level. */
void map_walk_values(const map_walk *w, int below_level, int64_t *v);
/* Operand o's tensor index at problem-loop values v. */
void map_walk_index_of(const map_operand *o, const int64_t *v, int n_loops, int64_t *idx);
/* Tensor coordinates of the first element of o's level-lv tile now. */
void map_walk_tile_base(const map_walk *w, int o, int lv, int64_t *base);
/* Byte address of o's level-lv tile in its buffer (the current half when
 * double-buffered). */
uint64_t map_walk_place_addr(const map_walk *w, int o, int lv);
/* The deepest level holding operand o. */
int map_walk_deepest(const map_schedule *s, int o);

#endif

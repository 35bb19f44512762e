/* backends/gpu/gpu_cdl.h: any codelet as a GPU kernel, lowered from its
 * loop nest (gpu_cdl_plan.c: which loops become the grid; gpu_lower_cdl.c:
 * the LLVM IR; gpu_cdl_math.c: the float functions in IR).
 *
 * A call (the codelet, its attribute values, its inputs' dtypes and
 * shapes) is bound as the reference interpreter binds it (cdl_bind.c).
 * When the body is one loop nest whose outer loops write disjoint
 * elements (every write and every read of a written tensor indexes the
 * same injective combination of those loops' variables, and every scalar
 * local is assigned before it is read in an iteration; a shaped local
 * that no grid loop indexes is private to an iteration when each of its
 * reads follows a write of the same element in the iteration, or a loop
 * nest that wrote all of it), those loops are
 * the grid: one thread per iteration, the rest of the nest (reductions
 * included) a loop per thread; otherwise one thread runs the whole body
 * in program order. Locals with a shape live in global workspaces.
 * Statements follow codelets/README.md "Semantics of a statement": float
 * destinations compute in f32 (f64 for f64 destinations; their
 * transcendental functions in f32), integer ones in i64 with wrap-around,
 * float-to-integer conversions saturate; a read out of bounds gives the
 * access's `else` value, a write out of bounds is skipped (the
 * interpreter reports it) and an integer division by zero gives 0 (the
 * interpreter reports it).
 *
 * A work item is one thread, or a team of GPU_CDL_LANES lanes of one warp
 * (gpu_cdl_team.c says when): the lanes share the item's loop nests,
 * iteration i of a nest run by lane i mod GPU_CDL_LANES, and a scalar
 * accumulated in a nest (s = add / mac / max / min(s, ...)) is combined
 * across the lanes by butterfly exchanges in a fixed order.
 *
 * Kernel ABI: one global pointer per input, output and shaped local, in
 * that order; GPU_EW_THREADS threads per workgroup, a 1-D grid. */
#ifndef COV_GPU_CDL_H
#define COV_GPU_CDL_H

#include <stdint.h>

#include "backends/gpu/gpu_target.h"
#include "codelets/cdl_bind.h"
#include "codelets/cdl_iexpr.h"
#include "covenant/codelet.h"

enum { GPU_CDL_MAX_ATTRS = 24, GPU_CDL_MAX_IO = 16, GPU_CDL_MAX_ARGS = 48 };
/* lanes of a team; the shortest loop nest worth a team (its iterations);
 * from how many work items a team needs a nest of GPU_CDL_TEAM_LONG
 * iterations (so many items fill the GPU as single threads, neighbouring
 * ones reading neighbouring elements) */
enum { GPU_CDL_LANES = 32, GPU_CDL_TEAM_MIN = 32, GPU_CDL_TEAM_ITEMS = 16384, GPU_CDL_TEAM_LONG = 256 };

/* One codelet call, self-contained apart from the codelet (borrowed from
 * the model's library). Zero-initialise before filling: calls are
 * compared bytewise (equal calls share one kernel). */
typedef struct gpu_cdl_call {
  const cov_codelet *c;
  int n_attrs;
  cov_attr attrs[GPU_CDL_MAX_ATTRS]; /* names point into the codelet */
  int n_in;
  cov_dtype in_dtype[GPU_CDL_MAX_IO];
  int in_rank[GPU_CDL_MAX_IO];
  int64_t in_shape[GPU_CDL_MAX_IO][COV_MAX_RANK];
} gpu_cdl_call;

/* What the launch of a call needs. */
typedef struct gpu_cdl_info {
  int n_out, n_ws;                        /* outputs, shaped locals (workspaces) */
  int n_args;                             /* n_in + n_out + n_ws */
  cov_dtype dtype[GPU_CDL_MAX_ARGS];      /* per argument */
  int rank[GPU_CDL_MAX_ARGS];
  int64_t shape[GPU_CDL_MAX_ARGS][COV_MAX_RANK];
  int64_t numel[GPU_CDL_MAX_ARGS];
  int zero[GPU_CDL_MAX_ARGS];             /* outputs / workspaces to zero before the launch */
  int n_par;                              /* loops on the grid (0: one work item) */
  int64_t items;                          /* work items */
  int lanes;                              /* threads per work item: 1 or GPU_CDL_LANES */
  int64_t threads;                        /* items * lanes */
  int64_t serial;                         /* statements one thread runs (the longest item's bound) */
} gpu_cdl_info;

/* Binds the call, picks the grid loops and says what the launch needs.
 * Errors are located at the codelet's declarations (a require that
 * fails) or name the call. */
cov_status gpu_cdl_analyse(const gpu_cdl_call *k, gpu_cdl_info *out);

/* A bound call: what gpu_cdl_analyse found, kept for the lowering. */
typedef struct gpu_cdl_bound {
  cov_arena *arena;
  const cdl_codelet *c;
  cdl_binding b;
  cdl_env env;             /* dims, attributes, lets of the call */
  int64_t *extent;         /* per loop id */
  int par[CDL_MAX_LOOP_DEPTH]; /* loop ids on the grid, outermost first */
  const cdl_block *body;   /* what one work item runs */
  /* per operand: a shaped local each work item writes before it reads it
   * (a row's scratch): one copy per work item, at item * its size */
  unsigned char priv[CDL_MAX_OPERANDS * 3];
  gpu_cdl_info info;
} gpu_cdl_bound;
cov_status gpu_cdl_bind(const gpu_cdl_call *k, gpu_cdl_bound *out);
void gpu_cdl_unbind(gpu_cdl_bound *k);

/* One index of an access under the call's values: constant c0 plus
 * coef[t] * loop[t] (terms of loops that never move dropped). */
typedef struct gpu_cdl_form {
  int64_t c0;
  int n;
  int loop[CDL_MAX_LOOP_DEPTH];
  int64_t coef[CDL_MAX_LOOP_DEPTH];
} gpu_cdl_form;
/* Index d of access a as a form; 0 when it cannot be evaluated. */
int gpu_cdl_form_of(const gpu_cdl_bound *k, const cdl_access *a, int d, gpu_cdl_form *f);

/* Teams (gpu_cdl_team.c): sets k->info.lanes and .serial once the grid is
 * chosen. gpu_cdl_nest: the perfect nest of loops starting at loop
 * statement s (outermost first), its depth returned. gpu_cdl_team_acc:
 * how scalar local `op` combines across lanes in the nest whose outermost
 * loop is `outer` (COV_OP_ADD, MAX or MIN; 0: it is no accumulator). */
void gpu_cdl_plan_team(gpu_cdl_bound *k);
int gpu_cdl_nest(const cdl_stmt *s, const cdl_loop **chain);
int gpu_cdl_team_acc(const gpu_cdl_bound *k, const cdl_loop *outer, int op);

/* The call as kernel `name` in mod (gpu_cdl_analyse's grid). */
cov_status gpu_lower_cdl(const gpu_cdl_call *k, const gpu_target_ops *target, LLVMModuleRef mod, const char *name);

/* Float functions the op table names, in f32, from the target's exp2 and
 * arithmetic (gpu_cdl_math.c): op is a cov_op; a holds its arguments. */
LLVMValueRef gpu_cdl_float_op(gpu_gen *g, int op, LLVMValueRef *a);

#endif

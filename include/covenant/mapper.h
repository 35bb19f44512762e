/* covenant/mapper.h: from a layer group and an ACG to a verified schedule.
 *
 * A layer is a chain of codelet calls (a main operation such as conv2d or
 * gemm, then elementwise / pool / softmax codelets applied to its output).
 * The mapper binds the main statement to an ACG compute node whose
 * capability fits, places every operand along the ACG's storage, tiles and
 * orders the loops, inserts transfers, predicts the cost and searches for
 * the cheapest schedule. The mapper knows no target by name. */
#ifndef COVENANT_MAPPER_H
#define COVENANT_MAPPER_H

#include <stdint.h>
#include <stdio.h>

#include "covenant/api.h"
#include "covenant/acg.h"
#include "covenant/codelet.h"
#include "covenant/model.h"
#include "covenant/status.h"
#include "covenant/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cov_layer cov_layer;
typedef struct cov_schedule cov_schedule;

/* A layer of the suite file (bench/suite/layers.json) by name; suite_path
 * NULL is the shipped suite (cov_suite_find). scale >= 1 divides channel,
 * spatial and matrix sizes (kernels, strides and pads are kept, spatial
 * sizes stay at least the kernel) for reduced-size tests. */
COV_API cov_status cov_layer_from_suite(const char *suite_path, const char *name, int scale,
                                        cov_layer **out);
/* The shipped layer suite: $COVENANT_SUITE when set, else suite/layers.json
 * under share/covenant beside the installed library or program, under the
 * configured install data dir, or the source tree's bench/suite/layers.json.
 * Writes its path into out (size bytes); COV_NOT_FOUND naming where it
 * looked. */
COV_API cov_status cov_suite_find(char *out, size_t size);
/* $COVENANT_SUITE, else the source tree's bench/suite/layers.json (a build
 * tree's default; an installed tree needs cov_suite_find). */
COV_API const char *cov_suite_default_path(void);
/* Names of the suite's layers, in file order; suite_path NULL is the shipped
 * suite (arena strings of *names_arena
 * are not needed: the array and strings are malloc'ed; free with free()). */
COV_API cov_status cov_suite_layer_names(const char *suite_path, char ***names, int *count);
/* A single codelet call: the codelet's inputs given as shapes (dtype f32). */
COV_API cov_status cov_layer_from_codelet(const char *codelet, const cov_attr *attrs, size_t n_attrs,
                                          const int64_t (*shapes)[COV_MAX_RANK], const int *ranks,
                                          size_t n_inputs, cov_layer **out);
/* A single codelet call with its inputs' dtypes and shapes (data unused):
 * integer layers (i8 multiplicands, i32 accumulators) as well as float ones. */
COV_API cov_status cov_layer_from_call(const char *codelet, const cov_attr *attrs, size_t n_attrs,
                                       const cov_tensor *inputs, size_t n_inputs, cov_layer **out);
/* A layer from an ONNX model's layer group (cov_model_group_describe or a
 * cov_model_run_groups offer): its calls as they are, provided they form a
 * layer's chain (call 0 reads only group inputs and constants; every later
 * call reads the previous result first, then constants or group inputs) of
 * f32 values. COV_UNSUPPORTED otherwise, naming the group, call and node;
 * cov_map then says whether it can fuse the chain. The layer's inputs are
 * the calls' arguments in order, each later call's first one skipped;
 * cov_layer_model_input gives the argument behind layer input i (a group
 * input or a constant with its data). The layer uses the model's constants
 * and codelet library (cov_model_group_codelets): free it before the
 * model. */
COV_API cov_status cov_layer_from_model_group(const cov_model_group *grp, cov_layer **out);
/* The layer of the group's first n calls (a group that does not fuse whole
 * may fuse all but its last call, which then runs as a layer of its own). */
COV_API cov_status cov_layer_from_model_group_prefix(const cov_model_group *grp, size_t n,
                                                     cov_layer **out);
COV_API cov_status cov_layer_model_input(const cov_model_group *grp, int i, const cov_model_arg **arg);
COV_API void cov_layer_free(cov_layer *layer);
COV_API const char *cov_layer_name(const cov_layer *layer);
/* Number of layer inputs (main operands first, then epilogue constants) and
 * the shape of each (dtype f32). */
COV_API int cov_layer_num_inputs(const cov_layer *layer);
COV_API cov_status cov_layer_input(const cov_layer *layer, int i, cov_tensor *shape_only);
/* The layer's result by the reference interpreter, call after call. */
COV_API cov_status cov_layer_reference(const cov_layer *layer, const cov_tensor *inputs, cov_tensor *out);
/* The multiply-accumulates of the layer's main statement (its loop nest's
 * size where that is a mac; 0 for a layer without one); -1 where the
 * problem cannot be extracted (what cov_map would refuse first). */
COV_API int64_t cov_layer_macs(const cov_layer *layer);

typedef struct cov_map_options {
  int exhaustive;  /* 1: enumerate every candidate (the optimum under the cost model) */
  int64_t budget;  /* most cost-model evaluations; 0: no limit */
  int beam;        /* pruned mode: candidates kept per stage; 0: default */
} cov_map_options;

COV_API cov_status cov_map(const cov_layer *layer, const cov_acg *acg, const cov_map_options *opt,
                           cov_schedule **out);
COV_API void cov_schedule_free(cov_schedule *s);
COV_API double cov_schedule_cycles(const cov_schedule *s);
COV_API int64_t cov_schedule_evaluations(const cov_schedule *s);
/* The next best candidates the search kept (verified like the schedule),
 * and the main statement's operation count (MACs for a mac statement). */
COV_API int cov_schedule_num_alternatives(const cov_schedule *s);
COV_API double cov_schedule_ops(const cov_schedule *s);
/* Swaps alternative i (0-based) with the schedule: a backend that measures
 * the candidates (cov_npu_select_by_simulation) makes the fastest the one
 * it compiles; the cost model's prediction stays each candidate's own. */
COV_API cov_status cov_schedule_select_alternative(cov_schedule *s, int i);
/* The textual scheduled IR (--dump=schedule). */
COV_API cov_status cov_schedule_dump(const cov_schedule *s, FILE *out);
/* Schedule, cost breakdown and the next best alternatives. */
COV_API cov_status cov_schedule_explain(const cov_schedule *s, FILE *out);
/* Runs the schedule on the CPU through capacity-sized buffers. */
COV_API cov_status cov_schedule_interpret(const cov_schedule *s, const cov_tensor *inputs, int n_inputs,
                                          cov_tensor *out);
/* The predicted cost's parts: the compute node the main statement runs on
 * and its utilisation (useful ops / peak, 0..1); bytes crossing the DRAM
 * interface (into and out of the first on-chip level) and moved between
 * deeper on-chip levels. */
COV_API const char *cov_schedule_compute_node(const cov_schedule *s);
COV_API double cov_schedule_utilization(const cov_schedule *s);
COV_API double cov_schedule_dram_bytes(const cov_schedule *s);
COV_API double cov_schedule_onchip_bytes(const cov_schedule *s);
/* The predicted energy in pJ (mapper/map_energy.c: the simulator's
 * accounting on predicted counts); -1 when the ACG gives no energies. */
COV_API double cov_schedule_energy_pj(const cov_schedule *s);
/* Whether the schedule computes with multiplicands narrower than the model's. */
COV_API int cov_schedule_narrowed(const cov_schedule *s);
/* The dtype the schedule keeps the layer's input `input` in on chip (its
 * level-1 tiles: the multiplicand dtype of the capability the main statement
 * is bound to, e.g. f16 or bf16, where it narrows the operand), or the
 * input's own dtype where nothing narrows it; COV_F32 for an input the
 * schedule does not read. Round a reference's inputs to it
 * (cov_f32_round_to) to give it the operands the program computes with. */
COV_API cov_dtype cov_schedule_input_dtype(const cov_schedule *s, int input);

/* The schedule as one JSON document (what cov_schedule_explain prints, as
 * data): layer, acg, ops, evaluations, candidates; "schedule": its compute
 * node, one-line form ("line"), scheduled loops (level, loop, trips,
 * spatial), transfers (direction, operand, level, from, to, bytes, count,
 * cycles, overlapped), cost (cycles, time_us, compute_cycles,
 * epilogue_cycles, exposed_transfer_cycles, bytes_per_level from level 1,
 * utilization per compute node, energy_pj or null), multiply and accumulate
 * dtypes; "dump": the textual scheduled IR; "alternatives": the next best
 * candidates in the form of "schedule". Deterministic. *out is malloc'ed
 * (release with cov_free); *size (may be NULL) is its length. */
COV_API cov_status cov_schedule_json(const cov_schedule *s, char **out, size_t *size);

/* A representative layer of one call of `codelet` (a shipped codelet):
 * every input dim `size` (1 to 64) except extents the codelet fixes, type
 * parameters f32 (i8 where it takes integers only), attributes without a
 * default 1. For asking whether a
 * backend takes a codelet at all (`covenant ops`), not for measurements.
 * COV_NOT_FOUND for an unknown codelet; the codelet's own errors when its
 * rules refuse the example. */
COV_API cov_status cov_layer_example(const char *codelet, int64_t size, cov_layer **out);

#ifdef __cplusplus
}
#endif
#endif

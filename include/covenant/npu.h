/* covenant/npu.h: NPU programs and the ACG-driven NPU simulator (npu-sim).
 *
 * A program is the binary form of backends/npu-sim/ISA.md: instructions, a
 * table of DRAM tensors and initial DRAM contents, and the name and digest of
 * the ACG it was compiled for. A simulator is built from an ACG; it refuses
 * programs compiled for another ACG, verifies them before running, then
 * computes results (bit-exact to the ISA's arithmetic) and cycle timing.
 * Every size and speed comes from the ACG. */
#ifndef COVENANT_NPU_H
#define COVENANT_NPU_H

#include <stdint.h>
#include <stdio.h>

#include "covenant/api.h"
#include "covenant/acg.h"
#include "covenant/status.h"
#include "covenant/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cov_npu_program cov_npu_program;
typedef struct cov_npu_sim cov_npu_sim;
typedef struct cov_npu_stats cov_npu_stats;

/* Decodes a program; errors name the byte offset, instruction and field.
 * `name` labels diagnostics (a file name). */
COV_API cov_status cov_npu_program_decode(const void *data, size_t size, const char *name,
                                          cov_npu_program **out);
COV_API cov_status cov_npu_program_load(const char *path, cov_npu_program **out);
COV_API cov_status cov_npu_program_save(const cov_npu_program *p, const char *path);
/* The program's bytes, as cov_npu_program_save writes them (*out malloc'ed;
 * the caller frees it). */
COV_API cov_status cov_npu_program_encode(const cov_npu_program *p, void **out, size_t *size);
COV_API void cov_npu_program_free(cov_npu_program *p);
/* Human-readable listing: header, tensors, one line per instruction. With an
 * ACG, buffers and units are printed by name. */
COV_API cov_status cov_npu_program_disasm(const cov_npu_program *p, const cov_acg *acg, FILE *out);
/* Checks the program against the ACG (digest, fields, loop nesting, every
 * address it will touch) without running it. */
COV_API cov_status cov_npu_program_verify(const cov_npu_program *p, const cov_acg *acg);
COV_API const char *cov_npu_program_acg_name(const cov_npu_program *p);
COV_API int cov_npu_program_tensor_count(const cov_npu_program *p);
/* Name, role ("input", "output", "weight", "scratch"), dtype and shape of
 * tensor i; shape must hold COV_MAX_RANK values. Returns the rank. */
COV_API int cov_npu_program_tensor(const cov_npu_program *p, int i, const char **name,
                                   const char **role, cov_dtype *dtype, int64_t *shape);

/* True when the program's initial DRAM contents (segments) cover tensor i
 * entirely (weights compiled into the program). */
COV_API int cov_npu_program_tensor_has_data(const cov_npu_program *p, int i);

/* Code generation: a schedule from cov_map (covenant/mapper.h) to a
 * program for the schedule's ACG. The program's DRAM tensors are named in0,
 * in1, ... after the layer's inputs (in the dtype of their on-chip tiles, f16
 * when the schedule narrows; cov_npu_sim_write converts f32 data) and out
 * (f32). COV_UNSUPPORTED names what the code generator cannot yet lower. */
typedef struct cov_schedule cov_schedule;
COV_API cov_status cov_npu_compile(const cov_schedule *s, cov_npu_program **out);
/* Re-ranks the mapper's candidates by simulating them: when the layer has
 * at most max_ops operations (cov_schedule_ops), the schedule and its
 * alternatives are compiled and timed (zero inputs: timing does not depend
 * on values) and the fastest becomes the schedule (ties keep the cost
 * model's order). *chosen (may be NULL): -1 when the schedule stayed, else
 * the alternative that replaced it. Larger layers keep the cost model's
 * choice. */
#define COV_NPU_SELECT_MAX_OPS 6.4e7
COV_API cov_status cov_npu_select_by_simulation(cov_schedule *s, const cov_acg *acg,
                                                double max_ops, int *chosen);

/* The simulator keeps a pointer to acg, which must outlive it. */
COV_API cov_status cov_npu_sim_create(const cov_acg *acg, cov_npu_sim **out);
COV_API void cov_npu_sim_free(cov_npu_sim *sim);
/* The dynamic instructions a loaded program may run (0: the default,
 * 2^24). Checked arithmetically from the loop nest when a program is loaded,
 * before anything runs: a program over the limit is refused at once. */
COV_API void cov_npu_sim_set_max_insns(cov_npu_sim *sim, uint64_t max_insns);
/* Likewise the element work (a gemm's m x n x k multiply-adds, a dma's or
 * vop's elements, over the dynamic instructions; 0: the default, 2^34). */
COV_API void cov_npu_sim_set_max_work(cov_npu_sim *sim, uint64_t max_work);
/* Verifies p as cov_npu_sim_load does (the ACG, the limits above, the dry
 * run) without allocating or loading anything. */
COV_API cov_status cov_npu_sim_verify(cov_npu_sim *sim, const cov_npu_program *p);
/* Verifies p, (re)allocates DRAM and on-chip memories, zeroes them and writes
 * the program's initial DRAM contents. p must outlive the runs. */
COV_API cov_status cov_npu_sim_load(cov_npu_sim *sim, const cov_npu_program *p);
/* Copies a tensor into / out of the DRAM image by its name in the program;
 * dtype and shape must match the program's tensor table. */
COV_API cov_status cov_npu_sim_write(cov_npu_sim *sim, const char *name, const cov_tensor *t);
COV_API cov_status cov_npu_sim_read(cov_npu_sim *sim, const char *name, cov_tensor *out);
/* Runs the loaded program. trace: NULL or a stream for a Chrome/Perfetto
 * trace (JSON, one track per unit). *out_stats is owned by the caller. */
COV_API cov_status cov_npu_sim_run(cov_npu_sim *sim, FILE *trace, cov_npu_stats **out_stats);

COV_API void cov_npu_stats_free(cov_npu_stats *s);
COV_API uint64_t cov_npu_stats_cycles(const cov_npu_stats *s);
COV_API uint64_t cov_npu_stats_macs(const cov_npu_stats *s);
/* MACs / (cycles x the peak MACs per cycle of the capability each gemm
 * used): npu-32x32-os f16 programs against 256, int8 ones against 1024. */
COV_API double cov_npu_stats_array_utilization(const cov_npu_stats *s);
/* Busy cycles / total cycles of the unit named (an ACG compute node, or
 * "dma:FROM->TO"); -1 when no such unit ran. */
COV_API double cov_npu_stats_unit_utilization(const cov_npu_stats *s, const char *unit);
/* Bytes read plus written at a storage node; 0 for an unknown name. */
COV_API uint64_t cov_npu_stats_storage_bytes(const cov_npu_stats *s, const char *storage);
/* Stall cycles summed over units, by cause: "dependency", "bank", "bandwidth". */
COV_API uint64_t cov_npu_stats_stalls(const cov_npu_stats *s, const char *cause);
/* Table: cycles, time, per-unit instructions/busy/utilisation/stalls, bytes
 * per storage level, energy. */
COV_API void cov_npu_stats_print(const cov_npu_stats *s, FILE *out);

/* The run's energy in pJ from the ACG's energies and the run's counts
 * (backends/npu-sim/README.md, "Energy"): compute = ops (MACs, vector
 * elements) x each capability's energy_pj_per_op; storage = bytes read and
 * written at each storage node x its read / write pJ per byte; edges =
 * bytes over each edge x its pJ per byte. known: the ACG gives at least one
 * energy (else every figure is 0). */
typedef struct cov_npu_energy {
  double total_pj, compute_pj, storage_pj, edge_pj;
  bool known;
} cov_npu_energy;
COV_API cov_npu_energy cov_npu_stats_energy(const cov_npu_stats *s);
/* One node's share: a compute or storage node by name, or an edge as
 * "FROM->TO"; -1 for an unknown name. */
COV_API double cov_npu_stats_node_energy_pj(const cov_npu_stats *s, const char *node);
/* The energy lines of cov_npu_stats_print: total, its parts, per node. */
COV_API void cov_npu_stats_print_energy(const cov_npu_stats *s, FILE *out);

/* ---- traces of several programs ----
 * One Chrome/Perfetto trace for programs run one after another (a whole
 * model): the unit tracks of a single program's trace, each program's events
 * shifted to start where the previous one ended, a "layers" track with one
 * span per program (its label) and a "cpu" track with instants for work done
 * on the CPU in between. begin writes the opening to f; end writes the
 * closing (f stays the caller's to close) and frees the trace. */
typedef struct cov_npu_trace cov_npu_trace;
COV_API cov_status cov_npu_trace_begin(FILE *f, const cov_acg *acg, cov_npu_trace **out);
/* cov_npu_sim_run, traced into t under `label`. */
COV_API cov_status cov_npu_sim_run_traced(cov_npu_sim *sim, cov_npu_trace *t, const char *label,
                                          cov_npu_stats **out_stats);
COV_API void cov_npu_trace_note(cov_npu_trace *t, const char *label);
COV_API cov_status cov_npu_trace_end(cov_npu_trace *t);

/* Gives tensor `name` of the program initial contents (weights compiled into
 * it), converted like cov_npu_sim_write (f32 data into an f16 tensor
 * rounds); cov_npu_program_tensor_has_data then says so. */
COV_API cov_status cov_npu_program_set_data(cov_npu_program *p, const char *name, const cov_tensor *t);

/* ---- whole models ----
 * Runs an ONNX model (covenant/model.h) on the NPU the ACG describes. Each
 * compute layer group is offered whole (cov_model_run_groups): described by
 * the frontend, built into one mapper layer (the main loop nest, the rest as
 * an epilogue on the output tile), mapped, compiled to one program and
 * simulated, so intermediates stay on chip. A group that cannot be fused
 * runs call by call, each call as its own program; a call the NPU path
 * cannot take runs on the CPU reference interpreter. The report lists each
 * with the reason. Layout operations run in the frontend. */
typedef struct cov_model cov_model;
typedef struct cov_npu_report cov_npu_report;
typedef struct cov_npu_run_options {
  int per_call;         /* do not fuse: every call its own program (comparisons) */
  cov_npu_trace *trace; /* NULL, or a trace every program run is added to */
} cov_npu_run_options;
COV_API cov_status cov_npu_run_model(const cov_model *m, const cov_acg *acg, const cov_tensor *inputs,
                                     size_t n_inputs, cov_tensor *outputs, size_t n_outputs,
                                     cov_npu_report **out_report);
/* The same with options (NULL: the defaults of cov_npu_run_model). */
COV_API cov_status cov_npu_run_model_with(const cov_model *m, const cov_acg *acg,
                                          const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                          size_t n_outputs, const cov_npu_run_options *opts,
                                          cov_npu_report **out_report);
/* One row per fused group, per call of a group run call by call, per call
 * on the CPU: group, node, codelets, simulated cycles, the mapper's
 * estimate and its error against the simulation, array and SIMD
 * utilisation, DRAM and on-chip bytes, where it ran (and why not fused);
 * then totals and a line on the estimate. Columns are as wide as their
 * longest entry. Deterministic (no wall times). */
COV_API void cov_npu_report_print(const cov_npu_report *r, FILE *out);
COV_API uint64_t cov_npu_report_cycles(const cov_npu_report *r);
COV_API int cov_npu_report_cpu_calls(const cov_npu_report *r);
/* Rows that are a whole group fused into one program. */
COV_API int cov_npu_report_fused_groups(const cov_npu_report *r);
/* Rows that are one call of a group run call by call on the NPU. */
COV_API int cov_npu_report_calls(const cov_npu_report *r);
/* Wall time of the run in seconds: mapping + code generation, simulation. */
COV_API void cov_npu_report_times(const cov_npu_report *r, double *compile_s, double *sim_s);
COV_API void cov_npu_report_free(cov_npu_report *r);
/* The largest error of an NPU program's output against the reference
 * interpreter on the same inputs rounded to the dtypes the schedule keeps
 * them in (f16, bf16, e4m3, e5m2: the bound capability's multiplicands)
 * where it narrows them (npu_report.h), over every row run on the NPU; -1
 * when no row was. */
COV_API double cov_npu_report_narrowed_error(const cov_npu_report *r);
/* Those dtypes' names, comma-separated in dtype order ("bf16", "f16"), into
 * buf (NUL-terminated, truncated to n bytes); "none" where no row rounded. */
COV_API void cov_npu_report_narrowed_dtypes(const cov_npu_report *r, char *buf, size_t n);
/* The fewest significand bits (cov_dtype_precision_bits) among those
 * dtypes: 11 for f16, 8 bf16, 4 e4m3, 3 e5m2; 0 where no row rounded. */
COV_API int cov_npu_report_narrowed_bits(const cov_npu_report *r);
/* The share of the model's multiply-accumulates (the frontend's count over
 * its layer groups, useful MACs: no padding) that ran on the NPU, 0..1; the
 * rest are those of the calls the CPU ran. npu_macs and model_macs (either
 * may be NULL) receive the counts. -1 where the model's count is unknown
 * or 0. */
COV_API double cov_npu_report_npu_mac_fraction(const cov_npu_report *r, int64_t *npu_macs, int64_t *model_macs);
/* The tolerance of that check: f32 accumulation in another order only. */
#define COV_NPU_NARROWED_TOLERANCE 1e-4

/* The report as one JSON document (the rows of cov_npu_report_print as
 * data): cycles, fused_groups, calls, cpu_calls, and "rows" in execution
 * order, each with kind ("group": a whole layer group in one program,
 * "call": one call of a group run call by call, "cpu": a call run by the
 * reference interpreter), group, node, codelets, cycles, mapper_estimate,
 * estimate_error_pct ((estimate - cycles) / cycles, in %),
 * array_utilization and simd_utilization (0..1), macs, dram_bytes,
 * onchip_bytes, narrowed_error and where (where it ran, and why not
 * fused); figures a CPU row does not have are null. No wall times, so the
 * text is deterministic. *out is malloc'ed (release with cov_free); *size
 * (may be NULL) is its length. */
COV_API cov_status cov_npu_report_json(const cov_npu_report *r, char **out, size_t *size);

/* Co-scheduled models (backends/npu-sim/README.md "Co-scheduled models"):
 * n models (2 .. the cores) on one NPU of several cores, each on cores of
 * its own, run at once sharing DRAM's interface. Each model first runs
 * alone on all the cores (the one-after-the-other baseline), which also
 * gives the mapper's estimate of it on every smaller core count; the cores
 * are divided so that the largest estimate is least; each model then runs
 * on its cores' design, checked against the reference as
 * cov_npu_run_model checks it (cov_npu_corun_report), and the programs of
 * all run concurrently in the simulator. Every compute node and on-chip
 * buffer of the ACG must have one instance per core. io[i]: model i's
 * inputs and its outputs (allocated here, from its run on its cores);
 * names[i] labels it (NULL: "model"). */
typedef struct cov_npu_corun cov_npu_corun;
typedef struct cov_npu_corun_io {
  const cov_tensor *inputs;
  size_t n_inputs;
  cov_tensor *outputs;
  size_t n_outputs;
} cov_npu_corun_io;
COV_API cov_status cov_npu_corun_models(const cov_model *const *models, const char *const *names, size_t n,
                                        const cov_acg *acg, const cov_npu_corun_io *io, cov_npu_corun **out);
COV_API size_t cov_npu_corun_num_models(const cov_npu_corun *r);
/* The ACG's name; model i's label. */
COV_API const char *cov_npu_corun_target(const cov_npu_corun *r);
COV_API const char *cov_npu_corun_name(const cov_npu_corun *r, size_t i);
/* Model i's cores, its cycles alone on them, concurrently with the others
 * (its latency: from the start to its last result), alone on all cores;
 * the mapper's estimate of it on k cores (-1: not estimated). */
COV_API uint32_t cov_npu_corun_cores(const cov_npu_corun *r, size_t i);
COV_API uint64_t cov_npu_corun_alone_cycles(const cov_npu_corun *r, size_t i);
COV_API uint64_t cov_npu_corun_latency(const cov_npu_corun *r, size_t i);
COV_API uint64_t cov_npu_corun_all_cores_cycles(const cov_npu_corun *r, size_t i);
COV_API double cov_npu_corun_estimate(const cov_npu_corun *r, size_t i, uint32_t k);
/* Model i's run on its cores (its per-group table and own check). */
COV_API const cov_npu_report *cov_npu_corun_report(const cov_npu_corun *r, size_t i);
/* The concurrent run's cycles (the largest latency) and the models' cycles
 * one after the other, each on all cores; inferences per million cycles
 * of each. */
COV_API uint64_t cov_npu_corun_makespan(const cov_npu_corun *r);
COV_API uint64_t cov_npu_corun_sequential_cycles(const cov_npu_corun *r);
COV_API double cov_npu_corun_throughput(const cov_npu_corun *r);
COV_API double cov_npu_corun_sequential_throughput(const cov_npu_corun *r);
/* The sum over the models of (cycles alone on all cores / latency here):
 * the work done per cycle where every model serves a stream of its own
 * inputs on its cores, against one model at a time on all of them (1);
 * the weighted speed-up of multi-program studies. */
COV_API double cov_npu_corun_weighted_speedup(const cov_npu_corun *r);
/* The table of the figures above, and the same as one JSON document
 * (*out malloc'ed, release with cov_free): target, cores, models (name,
 * cores, estimates per core count, alone_cycles, latency_cycles,
 * all_cores_cycles, programs), makespan_cycles, throughput_per_mcycle,
 * sequential_cycles, sequential_throughput_per_mcycle, speedup (of the
 * throughput), weighted_speedup. */
COV_API void cov_npu_corun_print(const cov_npu_corun *r, FILE *out);
COV_API cov_status cov_npu_corun_json(const cov_npu_corun *r, char **out, size_t *size);
COV_API void cov_npu_corun_free(cov_npu_corun *r);

/* Layer pipelining (backends/npu-sim/README.md "Layer pipelining"): one
 * model's programs cut into stages of consecutive programs, one core each,
 * for a stream of n_stream inputs (1 .. COV_NPU_PIPELINE_MAX_STREAM; the input in io, that many
 * times), against the model layer by layer with every layer on all cores.
 * io->outputs: from its run on one core (checked as cov_npu_run_model
 * checks it: cov_npu_pipeline_report). */
typedef struct cov_npu_pipeline cov_npu_pipeline;
#define COV_NPU_PIPELINE_MAX_STREAM 1024
COV_API cov_status cov_npu_pipeline_model(const cov_model *m, const cov_acg *acg, const cov_npu_corun_io *io,
                                          uint32_t n_stream, cov_npu_pipeline **out);
COV_API const cov_npu_report *cov_npu_pipeline_report(const cov_npu_pipeline *r);
/* The stream's cycles pipelined; one input's layer by layer on all cores;
 * inferences per million cycles of each. */
COV_API uint64_t cov_npu_pipeline_makespan(const cov_npu_pipeline *r);
COV_API uint64_t cov_npu_pipeline_layer_by_layer(const cov_npu_pipeline *r);
COV_API double cov_npu_pipeline_throughput(const cov_npu_pipeline *r);
COV_API double cov_npu_pipeline_layer_by_layer_throughput(const cov_npu_pipeline *r);
/* The stages, the stream's cycles and the first input's latency, the
 * throughputs and their ratio. */
COV_API void cov_npu_pipeline_print(const cov_npu_pipeline *r, FILE *out);
COV_API void cov_npu_pipeline_free(cov_npu_pipeline *r);

#ifdef __cplusplus
}
#endif
#endif

/* backends/gpu/gpu_tune.h: measured tuning (`covenant tune`).
 *
 * The mapper ranks GPU schedules by a cost model; the device decides. The
 * device has no LLVM, so tuning is three steps (backends/gpu/README.md,
 * "Measured tuning"):
 *   1. here, gpu_tune_prepare: the mapper's top N schedules of every
 *      distinct matrix or depthwise kernel (suite layers, or a model's
 *      matrix and depthwise steps), keyed by gpu_tune_key, compiled into
 *      one tuning artifact: a directory
 *      with the kernels, manifest.json (as `covenant gpu compile` writes it)
 *      and tune.json (the groups: key, the mapper's pick, the candidates);
 *   2. there, `covenant-run DIR --tune -o times.json` (runtime/crt_tune.c)
 *      checks every candidate against the pick's output on the same random
 *      inputs and times it;
 *   3. here, gpu_tune_record: the fastest passing schedule per key into a
 *      tuning file, which compiles read (cov_gpu_options.tuning): the one
 *      hook is gpu_plan_pick, where every GPU compile picks a matrix or
 *      depthwise kernel's plan. Deterministic given the file.
 * Tuning file (JSON): {"covenant_tuning": 1, "target": T, "entries":
 * [{"key": K, "schedule": S, ...}]}, S "BMxBNxBK:WMxWN:STAGES[:wgD]" for a
 * matrix key, "dwP" for a depthwise key; other members of an entry (times,
 * the mapper's pick) are information only. */
#ifndef COV_GPU_TUNE_H
#define COV_GPU_TUNE_H

#include <stdio.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_plan.h"
#include "backends/gpu/gpu_vendor.h"
#include "covenant/gpu.h"

enum { GPU_TUNE_KEY_MAX = 256, GPU_TUNE_MAX_ENTRIES = 4096 };

/* Which kernel a schedule is for: the tiled matrix kernel, or the
 * depthwise kernel on channels-last tensors (gpu_is_dw). */
typedef enum gpu_sched_kind { GPU_SCHED_MATRIX, GPU_SCHED_DW } gpu_sched_kind;

/* A hand-fixed schedule. MATRIX: bm, bn, bk, wm, wn, stages, wgmma (0/1),
 * inflight (-1 default, 0, 1), out_f16 (0): gpu_compile_layer's
 * `schedule`. DW: s[0] the output pixels per thread (map_gpu_dw_plan's pw),
 * the rest 0. */
typedef struct gpu_sched {
  gpu_sched_kind kind;
  /* bm bn bk wm wn stages; [6] 0, 1 warpgroup MMA (:wg), 2 / 3 the
   * warp-specialised kernel without / with setmaxnreg (:ws0 / :ws), 4 with
   * ping-pong consumer warpgroups (:wsp); [7]
   * batches in flight (-1 default); [8] out_f16, 0 (f32 outputs only) */
  int s[9];
} gpu_sched;

/* The canonical key of a matrix problem on `target`: kind, dims, dtype,
 * epilogue (e.g. "nvptx-sm90:matmul:b1:m1024:n1024:k1024:f16:none"; a
 * depthwise problem (gpu_is_dw) is kind "dwconv"). Problems with equal
 * keys compile to the same kernel. */
void gpu_tune_key(const gpu_problem *q, const char *target, char *out, size_t size);

/* The kind of kernel a key names (its second field), in `out`: "matmul",
 * "conv2d", "dwconv", "maxpool", or "?" for a key not of this form. */
void gpu_tune_key_kind(const char *key, char *out, size_t size);

/* Parses "BMxBNxBK:WMxWN:STAGES[:wg|:wg0|:wg1|:ws|:ws0|:wsp]" (MATRIX) or
 * "dwP" (DW, P from 1 to 8); errors at `where`. */
cov_status gpu_sched_parse(const char *text, const cov_loc *where, gpu_sched *out);
/* The same text back (what gpu_sched_parse reads). */
void gpu_sched_format(const gpu_sched *s, char *out, size_t size);

typedef struct gpu_tune_entry {
  char key[GPU_TUNE_KEY_MAX];
  char schedule[64];
  gpu_sched sched;
  int index;           /* in the file's "entries", for messages */
  unsigned line, col;  /* of its schedule */
} gpu_tune_entry;

typedef struct gpu_tuning {
  char file[1024];
  char target[64];
  int n;
  gpu_tune_entry *e; /* sorted by key */
} gpu_tuning;

/* Reads the tuning file `path` for target `target`: every error names the
 * file, the JSON path and line:col (a file for another target is one). */
cov_status gpu_tuning_load(const char *path, const char *target, gpu_tuning **out);
void gpu_tuning_free(gpu_tuning *t);
const gpu_tune_entry *gpu_tuning_find(const gpu_tuning *t, const char *key);
/* Loads opts->tuning (when set) into t->tuning; gpu_target_close frees it. */
cov_status gpu_tuning_attach(gpu_target *t, const cov_gpu_options *opts);

/* Prints to notes (when not NULL) one line per matrix or depthwise kernel
 * of the compiled model whose schedule came from t's tuning file. */
struct gpu_model_plan;
void gpu_tune_note_model(const gpu_target *t, const struct gpu_model_plan *mp, FILE *notes);

/* The plan of problem q with the hand-fixed schedule s (a DW schedule for
 * a problem gpu_is_dw takes, a MATRIX one for any other). */
cov_status gpu_plan_scheduled(const gpu_target *t, const gpu_problem *q, const gpu_sched *s, gpu_plan *plan);

/* THE point where a GPU compile picks a matrix or depthwise kernel's plan: the tuning
 * file's schedule for q's key when t has one (*tuned = its entry), the
 * compiler's own choice otherwise (*tuned = NULL). */
cov_status gpu_plan_pick(const gpu_target *t, const gpu_problem *q, gpu_plan *plan, const gpu_tune_entry **tuned);

/* The mapper's ranked schedules of q that the lowering takes, best first,
 * at most `top` (distinct as hand-fixed schedules): each with its rank in
 * the mapper's list and predicted cycles (map_gpu_search's for a matrix
 * problem, map_gpu_dw_plan's for a depthwise one). */
typedef struct gpu_tune_cand {
  gpu_sched sched;
  int rank;
  double cycles;
} gpu_tune_cand;
cov_status gpu_tune_candidates(const gpu_target *t, const gpu_problem *q, int top, gpu_tune_cand *out, int *n);

/* Step 1: the tuning artifact DIR for `specs` (suite layers, gemm_MxNxK, or
 * one MODEL.onnx: its matrix and depthwise kernels), the top `top`
 * candidates of each distinct key; prints one line per key to log. */
cov_status gpu_tune_prepare(gpu_vendors vendors, const cov_gpu_options *opts, const char *const *specs, int n_specs,
                            int top, const char *out_dir, FILE *log);

/* Step 3: reads covenant-run's times.json, writes the tuning file and
 * prints per key the mapper's pick vs the best passing candidate, the
 * Spearman rank correlation of predicted cycles vs measured times per key,
 * per kind of kernel (gpu_tune_key_kind) and pooled. */
cov_status gpu_tune_record(const char *times_path, const char *out_path, FILE *report);

#endif

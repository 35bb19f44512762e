/* covenant/explore.h: architecture exploration studies.
 *
 * A study derives designs from a base ACG by sweeping parameters (JSON paths
 * with lists of values), evaluates a list of layers on every design and
 * writes one folder: results.csv (one row per design x layer), summary.csv
 * (one row per design, with Pareto flags), designs/<id>.json (each derived
 * ACG) and study.txt (what the study is, checked on resume and merge).
 * The output is byte-identical for the same inputs however the work was
 * split (-j, shards) or interrupted. See explore/README.md. */
#ifndef COVENANT_EXPLORE_H
#define COVENANT_EXPLORE_H

#include "covenant/api.h"
#include "covenant/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a study reports while it runs; the library prints nothing, the
 * caller renders these (the CLI: on stderr, progress as a live line on a
 * TTY). */
typedef enum cov_explore_event_kind {
  COV_EXPLORE_NOTE,     /* what the study does: the evaluator it chose, resuming (text) */
  COV_EXPLORE_WARNING,  /* a design that failed, how many did (text), or a worker's error (status) */
  COV_EXPLORE_PROGRESS, /* designs done of total, elapsed and estimated seconds left */
} cov_explore_event_kind;
typedef struct cov_explore_event {
  cov_explore_event_kind kind;
  const char *text;         /* NOTE, WARNING: one line without newline; NULL when status is set */
  cov_status status;        /* WARNING: a worker's error, owned by the library */
  int done, total;          /* PROGRESS */
  double elapsed_s, left_s; /* PROGRESS; left_s is NAN while unknown */
  int final;                /* PROGRESS: the last report of the run */
} cov_explore_event;
typedef void (*cov_explore_event_fn)(void *user, const cov_explore_event *ev);

typedef struct cov_explore_options {
  const char *base;          /* base ACG: path or shipped target name */
  const char **vary;         /* "PATH=V1,V2,..." specs */
  int n_vary;
  const char *suite;         /* suite file (bench/suite/layers.json layout) */
  const char *suite_names;   /* comma-separated suite layers; NULL = all; */
  int use_suite;             /* evaluate suite layers */
  const char **models;       /* ONNX files whose compute layer groups are evaluated */
  int n_models;
  const char *evaluator;     /* NULL: the best available */
  const char *dtype;         /* multiplicand dtype, NULL = "f16" */
  const char *acc_dtype;     /* accumulator dtype, NULL = "f32" */
  const char *out_dir;
  int jobs;                  /* worker processes; <= 0: the machine's cores */
  int shard, n_shards;       /* run designs with index % n_shards == shard */
  cov_explore_event_fn on_event; /* NULL: nothing is reported (errors still return) */
  void *event_user;
  int stop_after;            /* testing: stop after this many designs (0 = all) */
} cov_explore_options;

/* Runs (or resumes) a study. Designs whose derived ACG is invalid are
 * reported to on_event and in summary.csv, and the others still run; such a
 * study returns NULL. Errors: bad options or sweep specs (naming the
 * parameter and value), unreadable inputs, an output folder holding a
 * different study. Numbers are read and written with '.' whatever
 * LC_NUMERIC the caller set: the call runs in the "C" locale on the calling
 * thread (on_event included) and restores the caller's on return. Only the
 * study's own worker processes are waited for; the caller's children are
 * left to it. */
COV_API cov_status cov_explore_run(const cov_explore_options *opts);

/* Combines shard folders into out_dir; refuses folders of different studies,
 * designs present in two shards, and designs missing from all of them.
 * Failed designs are reported to on_event (may be NULL). */
COV_API cov_status cov_explore_merge(const char *const *dirs, int n_dirs, const char *out_dir,
                                     cov_explore_event_fn on_event, void *event_user);

/* Renders the plots of a study folder (python3 + matplotlib, headless) into
 * <dir>/plots/. `script` NULL finds the shipped explore_plot.py. */
COV_API cov_status cov_explore_plot(const char *dir, const char *script);

/* Derives one design from an ACG document (JSON text of `size` bytes;
 * `name` labels diagnostics) as a study derives it: each of the n_assign
 * "PATH=VALUE" assignments (the --vary syntax with one value:
 * "pe_array.dims=8x8", "ibuf.capacity=64KiB") applied in order with the
 * derived-parameter rules of explore/README.md. The design is validated
 * like any ACG file (errors located in `name`) and *out receives its
 * canonical JSON (cov_acg_to_json); *notes (may be NULL) what the rules
 * changed ("" when nothing). Both malloc'ed: release with cov_free. */
COV_API cov_status cov_explore_derive(const char *base_json, size_t size, const char *name,
                                      const char *const *assign, int n_assign, char **out, char **notes);

#ifdef __cplusplus
}
#endif
#endif

/* explore/explore_study.h: an opened study (explore_study.c) and the
 * writers of its outputs (explore_output.c). */
#ifndef COV_EXPLORE_STUDY_H
#define COV_EXPLORE_STUDY_H

#include <stdio.h>

#include "common/search_path.h"
#include "explore/explore.h"

typedef struct explore_study {
  cov_arena *arena;
  const cov_explore_options *opts;
  const char *base_path;
  char *base_text; /* malloc'd */
  size_t base_size;
  json_t *base_doc;
  cov_acg *base_acg;
  explore_vary vary[EXPLORE_MAX_VARY];
  int n_vary;
  explore_layers layers;
  explore_evaluator ev;
  explore_eval_ctx ctx;
  int n_designs;
  char *key; /* study.txt (malloc'd by open_memstream, freed with the study) */
} explore_study;

/* Checks options, loads the base, parses the sweep and the layers. */
cov_status explore_study_open(const cov_explore_options *o, explore_study **out);
void explore_study_free(explore_study *s);

/* "d007": zero-padded so ids sort as indices do. */
void explore_design_id(int n_designs, int index, char *buf, size_t size);
/* Design index -> value index per parameter (the last changes fastest). */
void explore_design_values(const int *n_values, int n_vary, int index, int *which);
void explore_csv_num(FILE *f, double v, int integer);

/* Rebuilds results.csv and summary.csv of a study folder from study.txt (its
 * text is `key`) and rows/<id>.txt, in design order. Failed designs are named
 * on `diag`. */
/* Writes results.csv and summary.csv; failed designs go to on_event (may be NULL). */
cov_status explore_output_write(const char *dir, const char *key, cov_explore_event_fn on_event, void *user);
/* Reports a NOTE or WARNING line (printf format) to on_event, if any. */
void explore_notify(cov_explore_event_fn on_event, void *user, cov_explore_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif

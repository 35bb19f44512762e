/* explore/explore.h: the internals of `covenant explore`, shared by its files.
 *
 * A study is a base ACG, a list of sweep parameters (explore_vary), a list of
 * layers and one evaluator. Designs are the cartesian product of the
 * parameters' values, numbered in a fixed order (the first --vary changes
 * slowest), so a design's index, id and output never depend on how the work
 * was split, run or interrupted. */
#ifndef COV_EXPLORE_H
#define COV_EXPLORE_H

#include <jansson.h>
#include <stdint.h>

#include "covenant/acg.h"
#include "covenant/arena.h"
#include "covenant/explore.h"
#include "covenant/types.h"
#include "common/fileio.h"
#include "common/loc.h"

/* A diagnostic location; a macro so that it can sit inside cov_error()'s
 * arguments (a bare compound literal's commas would split them). */
#define EXPLORE_AT(...) (&(cov_loc){__VA_ARGS__})

#define EXPLORE_MAX_VARY 16
#define EXPLORE_MAX_VALUES 256
#define EXPLORE_MAX_DESIGNS 100000
#define EXPLORE_MAX_STORAGE 64 /* storage nodes with a bytes column */
#define EXPLORE_MAX_FILE_BYTES (64u << 20) /* one file of a study folder */

/* ---- design derivation (explore_vary.c, explore_derive.c) ---- */

typedef enum explore_path_kind {
  EXPLORE_PATH_NODE,    /* "<node>.<field>", a storage or compute node */
  EXPLORE_PATH_EDGE,    /* "<from>-><to>.<field>" */
  EXPLORE_PATH_POINTER, /* "/storage/1/capacity", an RFC 6901 JSON pointer */
} explore_path_kind;

typedef struct explore_vary {
  const char *spec;  /* as the user wrote it: "pe_array.dims=8x8,16x16" */
  const char *param; /* the part before '=' (CSV column name) */
  explore_path_kind kind;
  const char *node, *node2, *field; /* NODE: node.field; EDGE: node->node2.field */
  const char *pointer;              /* POINTER */
  const char **text;                /* values as written, n_values of them */
  json_t **value;                   /* parsed values (owned; explore_vary_release) */
  int n_values;
} explore_vary;

/* Parses "PATH=V1,V2,..." and checks the path against the base document and
 * each value's syntax. Errors name the parameter and the value. */
cov_status explore_vary_parse(cov_arena *a, const char *spec, const json_t *base,
                              explore_vary *out);
void explore_vary_release(explore_vary *v);

/* Sets v's value `which` in doc (a deep copy of the base document), then
 * applies the derived-parameter rules (explore/README.md). `note` receives
 * a short description of what the rules changed (may be empty). */
cov_status explore_vary_apply(const explore_vary *v, int which, json_t *doc, char *note,
                              size_t note_size);

/* Resolves an RFC 6901 pointer in doc; NULL when it does not exist. */
json_t *explore_json_pointer(json_t *doc, const char *pointer);

/* ---- layers (explore_layers.c) ---- */

typedef struct explore_layer {
  const char *name; /* suite name, or "<model stem>#<group>:<kind>" */
  const char *op;   /* conv2d, gemm, batch_matmul, maxpool, or the group's kind */
  const char *suite_file, *suite_name; /* where a suite layer came from; NULL for models */
  double macs;      /* multiply-accumulates */
  double in_elems;  /* activations read (every non-constant operand) */
  double w_elems;   /* constants read (weights, bias) */
  double out_elems; /* results written back */
} explore_layer;

typedef struct explore_layers {
  explore_layer *items;
  int n, cap;
} explore_layers;

/* Appends the suite layers named in `names` (comma-separated; NULL or "" for
 * all) from the suite file (bench/suite/layers.json layout). */
cov_status explore_layers_add_suite(cov_arena *a, const char *suite_path, const char *names,
                                    explore_layers *out);
/* Appends every compute layer group of an ONNX model (layout groups run in
 * the frontend and are not accelerator work). */
cov_status explore_layers_add_model(cov_arena *a, const char *model_path, explore_layers *out);

/* ---- evaluators (explore_eval.c, explore_roofline.c) ---- */

/* What evaluating one layer on one design gives. Unknown figures are NaN and
 * are written as empty CSV cells, never as zero. */
typedef struct explore_result {
  double cycles;
  double utilisation;                  /* of the MAC units: MACs / (cycles x peak) */
  double bytes[EXPLORE_MAX_STORAGE];   /* per storage node, ACG order */
  double energy_pj;
} explore_result;

typedef struct explore_eval_ctx {
  cov_dtype in_dtype, acc_dtype; /* datapath precision layers are evaluated at */
} explore_eval_ctx;

typedef struct explore_evaluator explore_evaluator;
struct explore_evaluator {
  const char *name;  /* written in every CSV row */
  const char *about; /* one line for --help and the summary */
  cov_status (*eval)(const explore_evaluator *self, const cov_acg *acg, const explore_layer *layer,
                     const explore_eval_ctx *ctx, explore_result *out);
  int suite_only; /* evaluates suite layers only (not ONNX layer groups) */
  /* a backend's layer simulator (explore_simulate.c); NULL for the others */
  const struct backend_simulator *simulator;
};

/* NULL name: the best evaluator this build has that can evaluate every
 * layer (has_models: some layers come from ONNX models). Unknown or
 * unavailable names give an error listing the available ones. */
cov_status explore_evaluator_find(const char *name, int has_models, explore_evaluator *out);
extern const explore_evaluator explore_roofline, explore_mapper;
/* The evaluators of the backends' layer simulators, registry order, into
 * out (at most max); returns how many. */
int explore_simulators(explore_evaluator *out, int max);

/* Sum of area_mm2 over nodes (NaN when no node gives one). */
double explore_area_mm2(const cov_acg *acg);

/* ---- Pareto fronts (explore_pareto.c) ---- */

/* flags[i] = 1 when point i is not dominated (both coordinates minimised;
 * a point is dominated by one at most as large in both and smaller in one).
 * Points with a NaN coordinate are never on the front. */
void explore_pareto(const double *x, const double *y, int n, int *flags);

/* ---- files (explore_files.c) ---- */

/* Reads a whole file of a study folder (NUL-terminated, malloc'd); *out
 * NULL when missing. Refuses a symbolic link, anything but a regular file
 * and files over EXPLORE_MAX_FILE_BYTES, naming the file. */
cov_status explore_read_file(const char *path, char **out, size_t *size);
/* Refuses a study subfolder that is a symbolic link or not a folder. */
cov_status explore_check_folder(const char *path);
/* A study's entry at path, not followed if it is a link: missing (*exists
 * 0), or a real folder (folder) or a regular file (*exists 1); a link or
 * anything else is refused, naming it. exists may be NULL. */
cov_status explore_check_entry(const char *path, bool folder, int *exists);
cov_status explore_mkdir_p(const char *path);
/* Removes the temporaries (common_is_temporary) a killed run left in a study
 * folder: in the folder itself (call with its lock held) and in rows/ and
 * designs/ for the designs no run holds now. */
cov_status explore_remove_temporaries(const char *dir);

#endif

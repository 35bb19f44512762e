/* backends/gpu/gpu_mcapture.h: a model's compute groups (their codelet
 * calls, as the frontend describes them) and where each group input and
 * model output comes from, element by element (gpu_mcapture.c). */
#ifndef COV_GPU_MCAPTURE_H
#define COV_GPU_MCAPTURE_H

#include <stdint.h>

#include "covenant/model.h"

enum { GPU_CAP_MAX_IO = 16 };
/* pass 2's flip: an element index (< 2^30) with it differs from pass 1 */
#define GPU_CAP_FLIP 0x40000000u
/* no element: the word of an i64 whose high word is not its check word */
#define GPU_CAP_BAD 0xFFFFFFFFu

/* dst[d0 .. d0+n) = buffer src [s0 .. s0+n) */
typedef struct gpu_cap_run {
  int src;
  int64_t d0, s0, n;
} gpu_cap_run;

typedef struct gpu_cap_value {
  int ok;
  char why[200];
  int64_t numel;
  gpu_cap_run *runs;
  int n_runs;
} gpu_cap_value;

typedef struct gpu_cap_arg {
  cov_model_arg_kind kind;
  int input;
  char *value;
  cov_tensor t; /* CONST: data (owned copy) */
} gpu_cap_arg;

typedef struct gpu_cap_call {
  char *node, *codelet;
  const cov_codelet *cdl; /* the codelet (the model's library's) */
  cov_attr *attrs;
  size_t n_attrs;
  gpu_cap_arg *args;
  size_t n_args;
  cov_tensor out;
} gpu_cap_call;

/* a value's decoder while its passes arrive (gpu_mcapdec.c) */
typedef struct gpu_cap_dec gpu_cap_dec;

typedef struct gpu_cap_input {
  char name[128];
  cov_tensor t; /* dtype and shape */
  uint32_t *ids, *idx, *flp; /* a bool or 8-bit input's passes 0, 1 and 2, until decoded in pass 3 */
  uint32_t *hsh;             /* its pass 3, assembled lane by lane */
  gpu_cap_dec *dec;          /* any other input's decoder, passes 0 to 2 */
  gpu_cap_value v;
} gpu_cap_input;

typedef struct gpu_cap_group {
  int group;
  char kind[64], node[128];
  int described; /* else why says what stops it */
  int constant;  /* integer work on integers: computed at compile time (no kernel) */
  char why[512];
  gpu_cap_call *calls;
  size_t n_calls;
  gpu_cap_input *in;
  size_t n_in;
  cov_tensor out;
  char out_name[128];
  int buf_id; /* its result's buffer id (model inputs are 0 .. n_inputs-1) */
} gpu_cap_group;

typedef struct gpu_capture {
  int n_inputs, n_outputs;
  cov_tensor in_shape[GPU_CAP_MAX_IO], out_shape[GPU_CAP_MAX_IO];
  gpu_cap_value outputs[GPU_CAP_MAX_IO];
  gpu_cap_group *groups; /* compute groups in execution order */
  int n_groups, cap_groups;
  int64_t *id_numel; /* buffer id -> elements */
  float **id_const;  /* buffer id -> its values, for the constants layout operations mix in (else NULL) */
  int n_ids, cap_ids, cap_const;
  const char *path; /* the model file, for diagnostics (borrowed) */
  int has_bool;     /* a described group's result is bool or 8-bit (its patterns take lanes) */
} gpu_capture;

/* The values of a constant buffer id (NULL: a model input or group result). */
static inline const float *gpu_cap_const(const gpu_capture *c, int id) {
  return id >= 0 && id < c->cap_const ? c->id_const[id] : NULL;
}

/* The capture's passes: the 32-bit pattern element ix of buffer id holds
 * in pass 0 .. GPU_CAP_PASSES-1 (the last one is the hash every decoded
 * element must reproduce). */
enum { GPU_CAP_PASSES = 4 };
uint32_t gpu_cap_pattern(int pass, uint32_t id, uint32_t ix);
/* The same for an i64 element: the pattern in the low word, a check word
 * derived from it in the high one. */
uint64_t gpu_cap_pattern64(int pass, uint32_t id, uint32_t ix);
/* The 32-bit patterns of t's elements (what gpu_cap_decode takes for
 * passes 0-2): f32 and i32 bits as they are, an i64 element's low word
 * when its high word is its check word, else 0xFFFFFFFF (no element). */
void gpu_cap_words(const cov_tensor *t, uint32_t *w);

/* The layout groups that change run-time values rather than move them
 * (the frontend's cov_model_group_info.alters), each an error located at
 * its node; NULL when there are none. Such a group cannot be compiled as
 * copies of elements; the gathers and casts c was offered are kernels
 * (or refused with their own reason, among c's groups). */
cov_status gpu_capture_altering(const cov_model *m, const char *path, const gpu_capture *c);

/* Symbolic input dims are taken as 1; `path` names the model in diagnostics. */
cov_status gpu_capture_model(const cov_model *m, const char *path, gpu_capture *c);
void gpu_capture_free(gpu_capture *c);
/* A group's calls, inputs (names, dtypes and shapes) and result as the
 * frontend describes them (constants copied); freed by gpu_cap_group_free. */
cov_status gpu_cap_describe(gpu_cap_group *g, const cov_model_group *d);
void gpu_cap_group_free(gpu_cap_group *g);
/* Decodes a value received in pass 3 (hashes) with its pass-0 ids, pass-1
 * indices and pass-2 flipped indices; every decoded (id, index) must
 * reproduce the hash; elements equal in all four passes are constants (a
 * new constant buffer id of c). */
void gpu_cap_decode(gpu_capture *c, const cov_tensor *t, const uint32_t *ids, const uint32_t *idx, const uint32_t *flip,
                    gpu_cap_value *v);
/* The same, one pass at a time: pass `pass` (0 .. GPU_CAP_PASSES-1) of
 * value t fed to its decoder *dp, made in pass 0 and freed after the last
 * pass or at the first failure (then v->why says what failed); after the
 * last pass v holds the runs. Only runs are kept between passes, never a
 * pass's words. */
void gpu_cap_dec_pass(gpu_capture *c, gpu_cap_dec **dp, int pass, const cov_tensor *t, gpu_cap_value *v);
void gpu_cap_dec_free(gpu_cap_dec *d);
/* The 32-bit pattern an i64 element carries (its low word, where the high
 * word is the check word gpu_cap_pattern64 writes; else 0xFFFFFFFF). */
uint32_t gpu_cap_word64(uint64_t p);
/* The check word an i64 pattern with low word lo carries in its high word. */
uint32_t gpu_cap_high(uint32_t lo);
/* Whether values of dtype d are 8 bits wide (i8, u8: quantized tensors);
 * like bool values they carry their patterns in lanes. */
int gpu_cap_is8(cov_dtype d);
/* A bool or 8-bit element's byte in lane `lane` of its 32-bit pattern w:
 * the marker bit (no bool the frontend computes from shapes has it) and
 * 7 bits of w. */
uint8_t gpu_cap_lane_byte(uint32_t w, int lane);
/* Lane `lane` of a bool or 8-bit value's bytes into its words (cleared in
 * lane 0; CAP_BAD, 0xFFFFFFFF, where a byte lacks the marker: not a copy
 * of a value a group computed). */
void gpu_cap_add_lane(const cov_tensor *t, int lane, uint32_t *w);
/* The same on an integer value's words of passes 0-3 (a bool value's,
 * assembled from its lanes: CAP_BAD, 0xFFFFFFFF, for no element). */
void gpu_cap_decode_words(gpu_capture *c, int64_t n, const uint32_t *ids, const uint32_t *idx, const uint32_t *flip,
                          const uint32_t *hash, gpu_cap_value *v);

#endif

/* backends/npu-sim/compile/npu_control.h: a model's program into an NPU
 * artifact's host steps and control (npu_control.c). */
#ifndef COV_NPU_CONTROL_H
#define COV_NPU_CONTROL_H

#include <stdio.h>

#include "covenant/model.h"
#include "runtime/crt.h"

/* Model values and the buffers that hold them. */
typedef struct npu_values {
  char **names;
  int *buffers;
  size_t n, cap;
} npu_values;

int npu_value_find(const npu_values *v, const char *name);
cov_status npu_value_add(npu_values *v, const char *name, int buffer);
void npu_values_free(npu_values *v);

/* Loops and ifs open at once (the frontend nests subgraphs at most 8 deep). */
#define NPU_CTL_MAX_DEPTH 16

typedef struct npu_ctl {
  const char *path; /* the model, for errors */
  crt_builder *b;
  const cov_model_program *prog;
  npu_values *vals;
  int open[NPU_CTL_MAX_DEPTH]; /* loop and if steps (an if's jump once its else began) awaiting their end */
  int depth;
  const char *codelets[256]; /* the codelets host steps call (names owned by the model's library) */
  size_t n_codelets;
  FILE *text;                /* their source, printed */
  char *text_buf;
  size_t text_len;
  cov_status st;
} npu_ctl;

/* The buffer holding value `name` (a new weight or intermediate at the
 * program's shape, else at `fallback`'s); -1 and c->st on an error. */
int npu_value_buffer(npu_ctl *c, const char *name, const cov_tensor *fallback);
/* A compute group as host steps, one per codelet call. */
void npu_group_on_host(npu_ctl *c, const cov_model_group *d, int group);
/* A copy, loop, next, if, else or end marker of the program as steps. */
void npu_control_step(npu_ctl *c, const cov_model_pstep *p);
/* The PART step (crt_add_model_part): from its inputs' buffers to its
 * outputs' (the model outputs add_ios made, at their capacities). */
void npu_part_step(npu_ctl *c, const cov_model_pstep *p);
/* The codelets' source into the artifact; then npu_ctl_free. */
cov_status npu_ctl_finish(npu_ctl *c);
void npu_ctl_free(npu_ctl *c);

#endif

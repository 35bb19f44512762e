/* backends/registry/backend_rows.h: the entries of the shipped backends'
 * rows, defined by their glue files (backend_ref.c, backend_npu.c and
 * backend_npu_program.c, backend_npu_simulate.c, backend_gpu.c) and listed in backend_registry.c's table. */
#ifndef COV_BACKEND_ROWS_H
#define COV_BACKEND_ROWS_H

#include "backends/registry/backend_registry.h"

/* ref: the CPU reference interpreter */
cov_status backend_ref_run_model(const backend_target *t, const backend_options *o, const cov_model *m,
                                 const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                 size_t n_outputs, backend_report **report);

/* npu-sim */
cov_status backend_npu_compile_layers(const backend_target *t, const backend_options *o, const char *const *layers,
                                      int n, const char *out_dir, FILE *out);
cov_status backend_npu_compile_model(const backend_target *t, const backend_options *o, const char *model,
                                     const char *out_path, FILE *out);
cov_status backend_npu_run_model(const backend_target *t, const backend_options *o, const cov_model *m,
                                 const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                 size_t n_outputs, backend_report **report);
cov_status backend_npu_run_models(const backend_target *t, const backend_model_io *io, size_t n, unsigned stream,
                                  backend_report **each, backend_report **joint);
void backend_npu_report_summary(const backend_report *r, const backend_target *t, size_t n_compute, FILE *out);
int backend_npu_report_check(const backend_report *r, FILE *out);
int backend_npu_report_narrowed_bits(const backend_report *r);
void backend_npu_report_details(const backend_report *r, const backend_target *t, FILE *out);
void backend_npu_report_times(const backend_report *r, double run_s, FILE *out);
void backend_npu_report_free(backend_report *r);
cov_status backend_npu_op_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                                  size_t size);
cov_status backend_npu_report_json(const backend_report *r, char **json);
cov_status backend_npu_open_layer(const backend_target *t, const backend_options *o, const char *name,
                                  backend_layer *out);
cov_status backend_npu_run_layer(backend_layer *l, const cov_tensor *inputs, int n_inputs, cov_tensor *output,
                                 backend_layer_stats *stats);
void backend_npu_close_layer(backend_layer *l);
cov_status backend_npu_program_open(const char *path, backend_program **out);
cov_status backend_npu_program_acg(backend_program *p, const char *target);
cov_status backend_npu_program_disasm(const backend_program *p, FILE *out);
cov_status backend_npu_program_sim(backend_program *p, const backend_sim_options *o);
cov_status backend_npu_program_sim_report(const backend_program *p, FILE *out);
void backend_npu_program_close(backend_program *p);
extern const backend_simulator backend_npu_simulator;

#ifdef COV_HAVE_GPU_BACKENDS
/* amdgpu and nvptx: the shared GPU code with the table's vendors */
cov_status backend_gpu_compile_layers(const backend_target *t, const backend_options *o, const char *const *layers,
                                      int n, const char *out_dir, FILE *out);
cov_status backend_gpu_compile_model(const backend_target *t, const backend_options *o, const char *model,
                                     const char *out_path, FILE *out);
cov_status backend_gpu_run_model(const backend_target *t, const backend_options *o, const cov_model *m,
                                 const char *name, const cov_tensor *inputs, size_t n_inputs, cov_tensor *outputs,
                                 size_t n_outputs, backend_report **report);
cov_status backend_gpu_run_layers(const backend_target *t, const backend_options *o, const char *const *layers,
                                  int n, FILE *out);
cov_status backend_gpu_check_model(const backend_target *t, const backend_options *o, const char *path,
                                   double tolerance, backend_inputs_fn inputs, void *user, FILE *out);
cov_status backend_gpu_map_layer(const backend_target *t, const cov_layer *layer, int explain, FILE *out);
cov_status backend_gpu_map_candidates(const backend_target *t, const backend_options *o, const char *const *layers,
                                      int n, int top, FILE *out);
cov_status backend_gpu_op_support(const backend_target *t, const cov_onnx_op *op, backend_op_where *where, char *why,
                                  size_t size);
cov_status backend_gpu_tune_prepare(const backend_target *t, const backend_options *o, const char *const *specs,
                                    int n, int top, const char *out_dir, FILE *out);
#endif

#endif

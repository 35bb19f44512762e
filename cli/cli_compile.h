/* cli/cli_compile.h: what `covenant compile` (cmd_npu.c) calls once the
 * backend registry has said which kind of backend serves the target. */
#ifndef COV_CLI_COMPILE_H
#define COV_CLI_COMPILE_H

#include "covenant/gpu.h"

/* One artifact OUT (runtime/README.md) with one NPU program per compute
 * group that fuses; returns the exit code (cli.h). */
int cli_compile_model(const char *path, const char *target, const char *out);

/* covenant compile for a GPU target (the registry's backend has a GPU
 * vendor): a model whole into one artifact OUT (cmd_compile_model.c), or
 * layers of the suite one code object each into out_dir (cmd_gpu.c, as
 * `covenant gpu compile`; `report`: per-kernel resources on stdout), and
 * `covenant gpu run`'s layers on the device. Each returns the exit code. */
int cli_gpu_compile_model(const cov_gpu_options *o, const char *model, const char *out);
int cli_gpu_compile_layers(const cov_gpu_options *o, char **specs, int n, const char *out_dir, int report);
int cli_gpu_run_layers(const cov_gpu_options *o, char **specs, int n);

#endif

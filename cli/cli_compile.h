/* cli/cli_compile.h: `covenant compile` on an ONNX model for an NPU target
 * (cmd_compile_model.c), called by cmd_npu.c when LAYER is a .onnx file. */
#ifndef COV_CLI_COMPILE_H
#define COV_CLI_COMPILE_H

/* One artifact OUT (runtime/README.md) with one NPU program per compute
 * group that fuses; returns the exit code (cli.h). */
int cli_compile_model(const char *path, const char *target, const char *out);

/* covenant compile MODEL.onnx for a GPU target: one artifact; returns 1
 * when argv is that command, its exit code in *rc. */
int cli_compile_gpu_model(int argc, char **argv, int *rc);

#endif

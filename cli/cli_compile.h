/* cli/cli_compile.h: `covenant compile` on an ONNX model for an NPU target
 * (cmd_compile_model.c), called by cmd_npu.c when LAYER is a .onnx file. */
#ifndef COV_CLI_COMPILE_H
#define COV_CLI_COMPILE_H

/* One program per compute group that fuses, DIR/group_<i>.npu, and
 * DIR/manifest.json; returns the exit code (cli.h). */
int cli_compile_model(const char *path, const char *target, const char *dir);

#endif

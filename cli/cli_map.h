/* cli/cli_map.h: `covenant map` on an ONNX model (cmd_map_model.c), called
 * by cmd_map.c when LAYER is a .onnx file. */
#ifndef COV_CLI_MAP_H
#define COV_CLI_MAP_H

#include "covenant/mapper.h"

typedef struct cli_map_model_opts {
  long long group;  /* --group N, or -1 */
  const char *node; /* --node NAME, or NULL */
  int explain, dump;
  cov_map_options map;
} cli_map_model_opts;

/* Maps every compute group of the model at `path` (or the one asked for)
 * onto `target` and prints each group's schedule cost; returns the exit
 * code (cli.h). */
int cli_map_model(const char *path, const char *target, const cli_map_model_opts *o,
                  const char *outp);

#endif

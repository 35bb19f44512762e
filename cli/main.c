/* cli/main.c: `covenant`, one tool with subcommands. */
#include <stdio.h>
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"

static const cli_command k_commands[] = {
    {"acg", "check, show, draw and format accelerator descriptions (ACG files)", cli_cmd_acg},
    {"codelet", "check, print, list and run codelets (DNN operations as loop nests)",
     cli_cmd_codelet},
    {"inspect", "read an ONNX model: shapes, parameters, layer groups, codelets, MACs",
     cli_cmd_inspect},
    {"run", "run an ONNX model on a target (default " BACKEND_DEFAULT_TARGET "; ref; GPU targets via gpu run)", cli_cmd_run},
    {"map", "map a layer onto a target: schedule, cost, search (--explain)", cli_cmd_map},
    {"disasm", "print an NPU program (its ISA: backends/npu-sim/ISA.md) as text", cli_cmd_disasm},
    {"sim", "verify and run an NPU program in the ACG-driven cycle simulator", cli_cmd_sim},
    {"compile", "compile a layer for a target: NPU program + manifest, or GPU code objects", cli_cmd_compile},
    {"verify", "check NPU programs against the reference on random inputs", cli_cmd_verify},
    {"explore", "architecture studies: sweep ACG parameters, evaluate layers, compare designs",
     cli_cmd_explore},
    {"gpu", "compile layers for GPU targets (AMDGPU, NVPTX) and run them (CUDA, HIP)", cli_cmd_gpu},
    {"tune", "measure the mapper's top GPU schedules on the device; a tuning file for compile", cli_cmd_tune},
    {"targets", "list the targets --target accepts by name", cli_cmd_targets},
    {"ops", "the ONNX operators covenant reads and where each runs on each target", cli_cmd_ops},
    {"layers", "list the layer suite's layers (the LAYER names map, verify, gpu accept)",
     cli_cmd_layers},
};
#define N_COMMANDS (sizeof k_commands / sizeof *k_commands)

static void usage(FILE *out) {
  fprintf(out,
          "usage: covenant <command> [options] [args]\n"
          "\n"
          "covenant compiles DNN layers for accelerators described as data (ACG files).\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(out, "  %-10s %s\n", k_commands[i].name, k_commands[i].summary);
  fprintf(out,
          "\n"
          "Run 'covenant help <command>' (or 'covenant <command> --help') for a command's\n"
          "options; 'covenant targets' and 'covenant layers' list the names they accept.\n"
          "Targets are named by path or by the name of a shipped target (e.g. npu-16x16);\n"
          "COVENANT_TARGET_PATH adds ':'-separated directories to search first.\n");
}

static const cli_command *find_command(const char *name) {
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(name, k_commands[i].name) == 0) return &k_commands[i];
  return NULL;
}

static int unknown_command(const char *cmd) {
  const char *names[N_COMMANDS + 2];
  for (size_t i = 0; i < N_COMMANDS; i++) names[i] = k_commands[i].name;
  names[N_COMMANDS] = "help";
  names[N_COMMANDS + 1] = NULL;
  const char *near = cli_closest(cmd, names, -1);
  if (near) fprintf(stderr, "covenant: unknown command '%s'; did you mean '%s'?\n", cmd, near);
  else fprintf(stderr, "covenant: unknown command '%s'\n", cmd);
  fprintf(stderr, "Try 'covenant --help' for the list of commands.\n");
  return CLI_EXIT_USAGE;
}

/* covenant help [CMD [SUB]]: the command's own --help. */
static int help(int argc, char **argv) {
  if (argc < 2) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  const cli_command *c = find_command(argv[1]);
  if (!c) return unknown_command(argv[1]);
  char *av[4] = {argv[1], argc > 2 ? argv[2] : (char *)"--help", (char *)"--help", NULL};
  return c->run(argc > 2 ? 3 : 2, av);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(cmd, "help") == 0) return help(argc - 1, argv + 1);
  if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("covenant %s\n", COV_VERSION);
    return CLI_EXIT_OK;
  }
  const cli_command *c = find_command(cmd);
  if (c) return c->run(argc - 1, argv + 1);
  if (cmd[0] == '-') {
    static const char *const names[] = {"--help", "--version", NULL};
    const char *near = cli_closest(cmd, names, -1);
    fprintf(stderr, "covenant: unknown option '%s'%s%s%s\n", cmd, near ? "; did you mean '" : "",
            near ? near : "", near ? "'?" : "");
    fprintf(stderr, "Try 'covenant --help' for the list of commands.\n");
    return CLI_EXIT_USAGE;
  }
  return unknown_command(cmd);
}

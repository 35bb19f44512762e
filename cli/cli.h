/* cli/cli.h: conventions shared by the `covenant` subcommands.
 *
 * Exit codes: 0 success, 1 the input was rejected (errors printed, located),
 * 2 usage error. Results go to stdout (or -o FILE), diagnostics to stderr. */
#ifndef COV_CLI_H
#define COV_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "common/fileio.h"
#include "covenant/model.h"
#include "covenant/status.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_INPUT 1
#define CLI_EXIT_USAGE 2

typedef struct cli_command {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} cli_command;

/* Prints "covenant CMD: message" and a hint to use --help; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* --seed N (an unsigned decimal) and --tolerance X (a number >= 0) for
 * command cmd: stores the value and returns 0, or prints the usage error and
 * returns 2. */
int cli_parse_seed(const char *cmd, const char *arg, unsigned long long *out);
int cli_parse_tolerance(const char *cmd, const char *arg, double *out);
/* --max-memory SIZE: bytes, or a number with KiB, MiB or GiB; 1 KiB to 4 GiB
 * (COV_TENSOR_MAX_BYTES). Returns 0, or prints a usage error and returns 2. */
int cli_parse_memory(const char *cmd, const char *arg, uint64_t *out);
/* The name in names[0..n) (NULL-terminated when n < 0) closest to s by
 * edit distance, when near enough to be a likely typo; else NULL. */
const char *cli_closest(const char *s, const char *const *names, int n);
/* The usage error for getopt_long's '?' (opterr = 0; optind and optopt as
 * it left them): which option is unknown (with the closest long option of
 * opts as a hint), or which lacks its argument (shorts: the short option
 * string). Returns 2. */
int cli_bad_option(const char *cmd, char **argv, const char *shorts, const struct option *opts);
/* "unknown option ARG", with the closest of names (NULL-terminated long
 * option names, without "--") as a hint. Returns 2. */
int cli_unknown_option(const char *cmd, const char *arg, const char *const *names);
/* Progress of a long step on stderr: shown when stderr is a terminal (one
 * line, rewritten in place) or when forced (--progress: a line each time),
 * at most twice a second unless `now` is set. Results stay on stdout. */
typedef struct cli_progress {
  int on, tty, shown;
  double last;
} cli_progress;
void cli_progress_init(cli_progress *p, int forced);
void cli_progress_note(cli_progress *p, int now, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clears the terminal line (before results are printed on stdout). */
void cli_progress_clear(cli_progress *p);
/* Prints every diagnostic of st to stderr, frees it, returns 1 (0 if st is NULL). */
int cli_report(cov_status st);
/* --shape NAME=DIMS (arg is edited in place) into shapes[*n] (max of them):
 * 0, or the usage error's exit code naming cmd and the option. */
int cli_parse_shape(const char *cmd, char *arg, cov_model_shape *shapes, size_t *n, size_t max);
/* Opens -o FILE (or stdout for NULL / "-") into *o and returns the stream
 * to write; NULL after printing an error. A file is written atomically
 * (common_out): the previous one stays until cli_close_output succeeds. */
FILE *cli_open_output(const char *path, common_out *o);
/* Finishes what cli_open_output opened (renames a file into place, flushes
 * stdout); reports a write error; returns 0/1. */
int cli_close_output(common_out *o);
/* Flushes stdout; reports a write error; returns 0/1. */
int cli_close_stdout(void);
/* True when argv holds -h/--help before any "--". */
int cli_wants_help(int argc, char **argv);
/* When argv's -t/--target names a GPU target (ACG backend amdgpu or nvptx),
 * runs `covenant gpu <sub> ARGS...` instead, stores its exit code in *rc and
 * returns 1; otherwise returns 0 and the caller goes on. */
/* Deterministic pseudo-random values in [-1, 1) (xorshift64, 1e-6 steps) for
 * generated inputs (run, sim, verify): the same on every machine for a seed.
 * The state must not be 0. */
float cli_rand_pm1(uint64_t *state);
/* Input i of `m` as `covenant run` makes one it is not given: f32 values in
 * [-1, 1) from cli_rand_pm1, seeded with (seed + i); printed as such on
 * stdout. An input without a fixed f32 shape is COV_INVALID_ARGUMENT,
 * saying to pass it with --input. */
cov_status cli_random_input(const cov_model *m, size_t i, unsigned long long seed, cov_tensor *t);
/* Whether a command-line argument names an ONNX model (ends in .onnx). */
int cli_is_onnx(const char *arg);

/* Command groups (one file each). */
int cli_cmd_acg(int argc, char **argv);
int cli_cmd_codelet(int argc, char **argv);
int cli_cmd_inspect(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
/* `covenant run A.onnx B.onnx ...`: models co-scheduled (cmd_run_models.c). */
#define CLI_MAX_CORUN 16
typedef struct cli_corun_opts {
  const char *target;
  unsigned long long seed;
  uint64_t max_memory;
  double tol;
  const char *models[CLI_MAX_CORUN];
  int n_models;
  unsigned pipeline; /* one model, pipelined for a stream of this many inputs */
} cli_corun_opts;
int cli_run_models(const cli_corun_opts *o);
/* cmd_run.c's: max|got - want| / max|want| (infinity when the shapes
 * differ); one output's line. */
double cli_rel_err(const cov_tensor *got, const cov_tensor *want);
void cli_print_output(const char *name, const cov_tensor *t);
/* run_sequence.c: sequence and optional inputs and outputs of `covenant run`
 * (a SequenceProto / OptionalProto .pb, or a folder of 0.npy, 1.npy, ...). */
cov_status cli_read_sequence(const cov_model *m, size_t i, const char *path, cov_sequence **out);
cov_status cli_write_sequence(const char *dir, const cov_sequence *seq);
void cli_print_sequence(const char *name, const cov_sequence *seq);
int cli_cmd_map(int argc, char **argv);
int cli_cmd_disasm(int argc, char **argv);
int cli_cmd_sim(int argc, char **argv);
int cli_cmd_compile(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_explore(int argc, char **argv);
int cli_cmd_gpu(int argc, char **argv);
int cli_cmd_tune(int argc, char **argv);
int cli_cmd_targets(int argc, char **argv);
int cli_cmd_layers(int argc, char **argv);
int cli_cmd_ops(int argc, char **argv);

#endif

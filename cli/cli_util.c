/* cli/cli_util.c: usage errors, diagnostics and output files for commands. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <getopt.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/c_locale.h"
#include "common/edit_distance.h"
#include "covenant/acg.h"

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "covenant %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'covenant %s --help' for more information.\n", cmd);
  va_end(ap);
  return CLI_EXIT_USAGE;
}

const char *cli_closest(const char *s, const char *const *names, int n) {
  const char *best = NULL;
  size_t best_d = COV_EDIT_FAR, len = strlen(s);
  for (int i = 0; n < 0 ? names[i] != NULL : i < n; i++) {
    size_t d = common_edit_distance(s, names[i]);
    if (d < best_d) {
      best_d = d;
      best = names[i];
    }
  }
  return best && common_is_near_miss(len, best_d) ? best : NULL;
}

int cli_unknown_option(const char *cmd, const char *arg, const char *const *names) {
  char name[64];
  const char *p = arg;
  while (*p == '-') p++;
  size_t n = strcspn(p, "=");
  snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
  const char *near = cli_closest(name, names, -1);
  if (near) return cli_usage_error(cmd, "unknown option '%s'; did you mean '--%s'?", arg, near);
  return cli_usage_error(cmd, "unknown option '%s'", arg);
}

int cli_bad_option(const char *cmd, char **argv, const char *shorts, const struct option *opts) {
  const char *arg = optind > 0 ? argv[optind - 1] : "";
  const char *names[64];
  int n = 0;
  for (; opts[n].name && n < 63; n++) names[n] = opts[n].name;
  names[n] = NULL;
  if (strncmp(arg, "--", 2) == 0) {
    size_t len = strcspn(arg + 2, "=");
    for (int i = 0; i < n; i++)
      if (strlen(names[i]) == len && strncmp(names[i], arg + 2, len) == 0)
        return cli_usage_error(cmd, "option '--%s' needs an argument", names[i]);
    return cli_unknown_option(cmd, arg, names);
  }
  if (optopt > 0 && optopt < 128) {
    const char *p = strchr(shorts, optopt);
    if (p && p[1] == ':') {
      for (int i = 0; i < n; i++)
        if (opts[i].val == optopt)
          return cli_usage_error(cmd, "option '-%c' (--%s) needs an argument", optopt, names[i]);
      return cli_usage_error(cmd, "option '-%c' needs an argument", optopt);
    }
    return cli_usage_error(cmd, "unknown option '-%c'", optopt);
  }
  return cli_usage_error(cmd, "unknown option '%s'", arg);
}

int cli_report(cov_status st) {
  if (!st) return CLI_EXIT_OK;
  cov_status_print(stderr, st, 0);
  cov_status_free(st);
  return CLI_EXIT_INPUT;
}

FILE *cli_open_output(const char *path, common_out *o) {
  memset(o, 0, sizeof *o);
  if (!path || strcmp(path, "-") == 0) return o->f = stdout;
  cov_status st = common_out_open(path, o);
  if (st) {
    cli_report(st);
    return NULL;
  }
  return o->f;
}

int cli_close_stdout(void) {
  if (ferror(stdout) || fflush(stdout) != 0) {
    fprintf(stderr, "<stdout>: error: write failed: %s\n", strerror(errno));
    return CLI_EXIT_INPUT;
  }
  return CLI_EXIT_OK;
}

int cli_close_output(common_out *o) {
  if (o->f == stdout) {
    o->f = NULL;
    return cli_close_stdout();
  }
  return cli_report(common_out_commit(o));
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return 0;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
  }
  return 0;
}

int cli_is_onnx(const char *arg) {
  size_t n = strlen(arg);
  return arg[0] != '-' && n > 5 && !strcmp(arg + n - 5, ".onnx");
}

int cli_parse_seed(const char *cmd, const char *arg, unsigned long long *out) {
  /* digits only: strtoull accepts "-1" (and " 1", "+1") and wraps a minus
   * sign to 2^64 - 1, a seed nobody asked for */
  if (!*arg || strspn(arg, "0123456789") != strlen(arg))
    return cli_usage_error(cmd, "--seed: '%s' is not a non-negative integer (0 to %llu)", arg, ULLONG_MAX);
  errno = 0;
  unsigned long long v = strtoull(arg, NULL, 10);
  if (errno == ERANGE) return cli_usage_error(cmd, "--seed: '%s' is larger than %llu", arg, ULLONG_MAX);
  *out = v;
  return 0;
}

int cli_parse_tolerance(const char *cmd, const char *arg, double *out) {
  char *end = NULL;
  double v = common_strtod(arg, &end);
  if (!*arg || *end || !(v >= 0)) return cli_usage_error(cmd, "--tolerance: '%s' is not a number >= 0", arg);
  *out = v;
  return 0;
}

int cli_parse_memory(const char *cmd, const char *arg, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  uint64_t unit = 1;
  if (end && !strcmp(end, "KiB")) unit = 1ull << 10;
  else if (end && !strcmp(end, "MiB")) unit = 1ull << 20;
  else if (end && !strcmp(end, "GiB")) unit = 1ull << 30;
  else if (end && *end) unit = 0;
  uint64_t bytes;
  if (!*arg || *arg == '-' || errno || !unit || __builtin_mul_overflow((uint64_t)v, unit, &bytes) ||
      bytes < 1024 || bytes > COV_TENSOR_MAX_BYTES)
    return cli_usage_error(cmd,
                           "--max-memory: '%s' is not a size from 1KiB to 4GiB (bytes, or a "
                           "number with KiB, MiB or GiB)",
                           arg);
  *out = bytes;
  return 0;
}

float cli_rand_pm1(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return (float)((*state >> 11) % 2000000) / 1000000.0f - 1.0f;
}

/* An integer uniform in [lo, hi] from the state (hi - lo < 2^62). */
static int64_t rand_in(uint64_t *r, int64_t lo, int64_t hi) {
  *r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
  return lo + (int64_t)((*r >> 2) % (uint64_t)(hi - lo + 1));
}

cov_status cli_random_input(const cov_model *m, size_t i, unsigned long long seed, cov_tensor *t) {
  cov_dtype dt;
  int rank;
  int64_t shape[COV_MAX_RANK];
  COV_RETURN_IF_ERROR(cov_model_input_info(m, i, &dt, &rank, shape));
  int64_t lo = 0, hi = 0;
  int ints = cov_model_input_range(m, i, &lo, &hi);
  bool fixed = dt == COV_F32 || dt == COV_F16 || dt == COV_BF16 || ints;
  for (int d = 0; d < rank; d++) fixed &= shape[d] >= 0;
  const char *name = cov_model_input_name(m, i);
  if (!fixed)
    return cov_error(COV_INVALID_ARGUMENT, NULL, "input '%s' (%s, rank %d) is not given and has no fixed shape; use "
                     "--input %s=FILE or --shape %s=DIMS", name, cov_dtype_name(dt), rank, name, name);
  COV_RETURN_IF_ERROR(cov_tensor_alloc(t, dt, rank, shape));
  /* Deterministic random values from the seed (printed). */
  uint64_t r = (seed + i) * 0x9e3779b97f4a7c15ull + 1;
  int64_t n = cov_tensor_numel(t);
  for (int64_t k = 0; k < n; k++) {
    if (ints) {
      int64_t v = rand_in(&r, lo, hi);
      switch (dt) {
        case COV_I64: ((int64_t *)t->data)[k] = v; break;
        case COV_I32: ((int32_t *)t->data)[k] = (int32_t)v; break;
        case COV_I8: ((int8_t *)t->data)[k] = (int8_t)v; break;
        default: ((uint8_t *)t->data)[k] = (uint8_t)v; break; /* u8, bool */
      }
      continue;
    }
    float v = cli_rand_pm1(&r);
    if (dt == COV_F32) ((float *)t->data)[k] = v;
    else ((uint16_t *)t->data)[k] = dt == COV_F16 ? cov_f32_to_f16(v) : cov_f32_to_bf16(v);
  }
  if (!ints)
    printf("input '%s': random values in [-1, 1), seed %llu\n", name, seed);
  else
    printf("input '%s': random %s in [%lld, %lld]%s, seed %llu\n", name, cov_dtype_name(dt), (long long)lo,
           (long long)hi, ints == 2 ? " (the model does not say its range: a mask's; --input to give others)"
           : hi > 1 && (dt == COV_I64 || dt == COV_I32) ? " (the rows of the table it indexes)" : "", seed);
  return NULL;
}

void cli_progress_init(cli_progress *p, int forced) {
  p->tty = isatty(STDERR_FILENO);
  p->on = forced || p->tty;
  p->shown = 0;
  p->last = 0;
}

void cli_progress_note(cli_progress *p, int now, const char *fmt, ...) {
  if (!p->on) return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  if (!now && p->shown && t - p->last < 0.5) return;
  p->last = t;
  p->shown = 1;
  va_list ap;
  va_start(ap, fmt);
  if (p->tty) fputs("\r\033[K", stderr);
  vfprintf(stderr, fmt, ap);
  if (!p->tty) fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
}

void cli_progress_clear(cli_progress *p) {
  if (p->on && p->tty && p->shown) fputs("\r\033[K", stderr);
  p->shown = 0;
  fflush(stderr);
}

int cli_parse_shape(const char *cmd, char *arg, cov_model_shape *shapes, size_t *n, size_t max) {
  if (*n == max) return cli_usage_error(cmd, "--shape: at most %zu of them", max);
  cov_status st = cov_model_shape_parse(arg, "--shape", &shapes[*n]);
  if (st) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", cov_status_message(st));
    cov_status_free(st);
    return cli_usage_error(cmd, "--shape %s", msg);
  }
  for (size_t k = 0; k < *n; k++)
    if (!strcmp(shapes[k].name, shapes[*n].name))
      return cli_usage_error(cmd, "--shape: two shapes for input '%s'", shapes[*n].name);
  (*n)++;
  return 0;
}

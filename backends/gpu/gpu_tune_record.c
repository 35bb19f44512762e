/* backends/gpu/gpu_tune_record.c: step 3 of measured tuning (gpu_tune.h):
 * covenant-run's times.json -> the tuning file, and how the mapper's cost
 * ranks the measured times.
 *
 * times.json: {"covenant_tune_times": 1, "target": T, "device": D,
 *   "groups": [{"key": K, "pick": {"kernel", "ms"}, "candidates":
 *   [{"schedule", "kernel", "rank", "cycles", "ms", "ok", "err"}]}]}
 * A candidate whose output did not match the pick's ("ok": false) is never
 * chosen. A key is recorded only where its fastest passing candidate beats
 * the pick by more than 1% (measurement noise): elsewhere the compiler's
 * own pick stays, as it does for keys the file lacks. Spearman's rho of
 * the mapper's predicted cycles vs the measured times is reported per key,
 * per kind of kernel (the key's second field: matmul, conv2d, dwconv; each
 * kind has its own cost model) and pooled. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_tune.h"
#include "backends/gpu/gpu_tune_json.h"
#include "common/json_write.h"

enum { REC_MAX_CANDS = 4096 };

/* Average ranks (ties share the mean rank). */
static void ranks(const double *x, int n, double *r) {
  for (int i = 0; i < n; i++) {
    int less = 0, equal = 0;
    for (int j = 0; j < n; j++) less += x[j] < x[i], equal += x[j] == x[i];
    r[i] = less + (equal + 1) / 2.0;
  }
}

/* Spearman's rho: Pearson's correlation of the ranks; NAN below 3 points. */
static double spearman(const double *x, const double *y, int n) {
  if (n < 3) return NAN;
  double *rx = malloc(sizeof *rx * (size_t)n * 2);
  if (!rx) return NAN;
  /* average ranks sum to n(n+1)/2: the mean is exact, so all-tied
   * predictions give sxx == 0 (no correlation defined), not rounding noise */
  double *ry = rx + n, mx = (n + 1) / 2.0, my = mx, sxy = 0, sxx = 0, syy = 0;
  ranks(x, n, rx), ranks(y, n, ry);
  for (int i = 0; i < n; i++)
    sxy += (rx[i] - mx) * (ry[i] - my), sxx += (rx[i] - mx) * (rx[i] - mx), syy += (ry[i] - my) * (ry[i] - my);
  free(rx);
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

static cov_status num(gpu_tdoc *d, json_t *obj, const char *at, const char *key, double *out) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
    return gpu_tdoc_fail(d, v ? gpu_tdoc_key(d, at, key) : at, "expected \"%s\": a number >= 0", key);
  *out = json_number_value(v);
  return NULL;
}

static cov_status str(gpu_tdoc *d, json_t *obj, const char *at, const char *key, size_t max, const char **out) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_string(v) || json_string_length(v) >= max)
    return gpu_tdoc_fail(d, v ? gpu_tdoc_key(d, at, key) : at, "expected \"%s\": a string under %zu bytes", key, max);
  *out = json_string_value(v);
  return NULL;
}

enum { REC_MAX_KINDS = 8 };

typedef struct rec_stats {
  double *cyc, *ms; /* every passing candidate, for the pooled rho */
  int *kind;        /* ... and the kind of its key: an index in kinds */
  int n;
  double log_gain;
  int keys;
  char kinds[REC_MAX_KINDS][32]; /* gpu_tune_key_kind, in order of appearance */
  int n_kinds;
} rec_stats;

/* The index of key's kind in rs->kinds (the last one, "other", when there
 * are more kinds than REC_MAX_KINDS). */
static int kind_index(rec_stats *rs, const char *key) {
  char k[32];
  gpu_tune_key_kind(key, k, sizeof k);
  for (int i = 0; i < rs->n_kinds; i++)
    if (!strcmp(rs->kinds[i], k)) return i;
  if (rs->n_kinds == REC_MAX_KINDS) return REC_MAX_KINDS - 1;
  if (rs->n_kinds == REC_MAX_KINDS - 1) snprintf(k, sizeof k, "other");
  snprintf(rs->kinds[rs->n_kinds], sizeof rs->kinds[0], "%s", k);
  return rs->n_kinds++;
}

/* Spearman's rho over the passing candidates of kind `kind`; their number
 * in *n. */
static double kind_rho(const rec_stats *rs, int kind, int *n) {
  double *x = malloc(sizeof *x * (size_t)(rs->n + 1) * 2);
  *n = 0;
  if (!x) return NAN;
  double *y = x + rs->n + 1;
  for (int i = 0; i < rs->n; i++)
    if (rs->kind[i] == kind) x[*n] = rs->cyc[i], y[(*n)++] = rs->ms[i];
  double rho = spearman(x, y, *n);
  free(x);
  return rho;
}

/* One group: its tuning entry (or none) and its report line. */
static cov_status record_group(gpu_tdoc *d, json_t *g, const char *at, json_t *entries, rec_stats *rs, FILE *report) {
  const char *key = NULL, *pick_kernel = NULL;
  double pick_ms = 0;
  if (!json_is_object(g)) return gpu_tdoc_fail(d, at, "a group is an object {\"key\", \"pick\", \"candidates\"}");
  COV_RETURN_IF_ERROR(str(d, g, at, "key", GPU_TUNE_KEY_MAX, &key));
  if (json_object_get(g, "error")) { /* the device could not run the pick: nothing measured */
    if (report) fprintf(report, "%s  not measured: %s  -> the compiler's pick\n", key, json_string_value(json_object_get(g, "error")));
    return NULL;
  }
  json_t *pick = json_object_get(g, "pick"), *cands = json_object_get(g, "candidates");
  const char *pat = gpu_tdoc_key(d, at, "pick"), *cat = gpu_tdoc_key(d, at, "candidates");
  if (!json_is_object(pick)) return gpu_tdoc_fail(d, pick ? pat : at, "expected \"pick\": {\"kernel\", \"ms\"}");
  COV_RETURN_IF_ERROR(str(d, pick, pat, "kernel", 256, &pick_kernel));
  COV_RETURN_IF_ERROR(num(d, pick, pat, "ms", &pick_ms));
  if (!json_is_array(cands) || json_array_size(cands) > REC_MAX_CANDS)
    return gpu_tdoc_fail(d, cands ? cat : at, "expected \"candidates\": an array (at most %d)", REC_MAX_CANDS);
  size_t n = json_array_size(cands);
  double *cyc = malloc(sizeof *cyc * (n + 1) * 2);
  if (!cyc) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  double *ms = cyc + n + 1, best = INFINITY;
  int m = 0, failed = 0;
  const char *best_sched = NULL, *best_kernel = NULL;
  cov_status st = NULL;
  for (size_t i = 0; !st && i < n; i++) {
    json_t *c = json_array_get(cands, i);
    const char *ci = gpu_tdoc_index(d, cat, i), *sched = NULL, *kernel = NULL;
    double cy = 0, t = 0;
    gpu_sched s;
    json_t *ok = json_object_get(c, "ok");
    if (!json_is_object(c)) st = gpu_tdoc_fail(d, ci, "a candidate is an object");
    if (!st) st = str(d, c, ci, "schedule", 64, &sched);
    if (!st) st = gpu_sched_parse(sched, &(cov_loc){.file = d->file, .path = gpu_tdoc_key(d, ci, "schedule")}, &s);
    if (!st) st = str(d, c, ci, "kernel", 256, &kernel);
    if (!st && !json_is_boolean(ok)) st = gpu_tdoc_fail(d, ok ? gpu_tdoc_key(d, ci, "ok") : ci, "expected \"ok\": true or false");
    if (st || !json_is_true(ok)) {
      failed += !st;
      continue;
    }
    st = num(d, c, ci, "cycles", &cy);
    if (!st) st = num(d, c, ci, "ms", &t);
    if (st) break;
    cyc[m] = cy, ms[m] = t, m++;
    if (t < best) best = t, best_sched = sched, best_kernel = kernel;
  }
  double rho = st ? NAN : spearman(cyc, ms, m);
  int kind = st ? 0 : kind_index(rs, key);
  for (int i = 0; !st && i < m && rs->n < REC_MAX_CANDS * 4; i++)
    rs->cyc[rs->n] = cyc[i], rs->ms[rs->n] = ms[i], rs->kind[rs->n++] = kind;
  free(cyc);
  if (st) return st;
  int take = best_sched && best < pick_ms * 0.99;
  if (take) {
    json_t *e = json_object();
    json_object_set_new(e, "key", json_string(key));
    json_object_set_new(e, "schedule", json_string(best_sched));
    json_object_set_new(e, "kernel", json_string(best_kernel));
    json_object_set_new(e, "ms", json_real(best));
    json_object_set_new(e, "pick_ms", json_real(pick_ms));
    json_array_append_new(entries, e);
  }
  if (pick_ms > 0 && isfinite(best)) rs->log_gain += log(pick_ms / (take ? best : pick_ms)), rs->keys++;
  if (report)
  {
    char r[16] = "n/a";
    if (!isnan(rho)) snprintf(r, sizeof r, "%.3f", rho);
    fprintf(report, "%s  pick %.4f ms  best %s %.4f ms  pick/best %.3f  rho %s  %d ok, %d failed  -> %s\n", key,
            pick_ms, best_sched ? best_sched : "-", best, pick_ms / best, r, m, failed,
            take ? best_sched : "the compiler's pick");
  }
  return NULL;
}

cov_status gpu_tune_record(const char *times_path, const char *out_path, FILE *report) {
  gpu_tdoc d;
  cov_status st = gpu_tdoc_open(times_path, &d);
  json_t *r = d.root, *groups = json_object_get(r, "groups"), *tgt = json_object_get(r, "target");
  if (!st && !json_is_object(r)) st = gpu_tdoc_fail(&d, "$", "times.json is a JSON object");
  json_t *ver = json_object_get(r, "covenant_tune_times");
  if (!st && (!json_is_integer(ver) || json_integer_value(ver) != 1))
    st = gpu_tdoc_fail(&d, ver ? "$.covenant_tune_times" : "$", "expected \"covenant_tune_times\": 1 (covenant-run --tune's output)");
  if (!st && !json_is_string(tgt)) st = gpu_tdoc_fail(&d, tgt ? "$.target" : "$", "expected \"target\": a string");
  if (!st && (!json_is_array(groups) || json_array_size(groups) > GPU_TUNE_MAX_ENTRIES))
    st = gpu_tdoc_fail(&d, groups ? "$.groups" : "$", "expected \"groups\": an array (at most %d)", GPU_TUNE_MAX_ENTRIES);
  rec_stats rs = {0};
  if (!st) {
    rs.cyc = malloc(sizeof *rs.cyc * REC_MAX_CANDS * 8);
    rs.ms = rs.cyc ? rs.cyc + REC_MAX_CANDS * 4 : NULL;
    rs.kind = malloc(sizeof *rs.kind * REC_MAX_CANDS * 4);
    if (!rs.cyc || !rs.kind) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  json_t *out = json_object(), *entries = json_array();
  json_object_set_new(out, "covenant_tuning", json_integer(1));
  json_object_set_new(out, "target", json_string(st ? "" : json_string_value(tgt)));
  json_object_set_new(out, "from", json_string(times_path));
  json_t *dev = json_object_get(r, "device");
  if (json_is_string(dev)) json_object_set_new(out, "device", json_string(json_string_value(dev)));
  json_object_set_new(out, "entries", entries);
  for (size_t i = 0; !st && i < json_array_size(groups); i++)
    st = record_group(&d, json_array_get(groups, i), gpu_tdoc_index(&d, "$.groups", i), entries, &rs, report);
  if (!st) {
    double rho = spearman(rs.cyc, rs.ms, rs.n), gain = rs.keys ? exp(rs.log_gain / rs.keys) : 1.0;
    json_object_set_new(out, "spearman_pooled", isnan(rho) ? json_null() : json_real(rho));
    /* per kind of kernel: each kind's cost model ranks its own candidates */
    json_t *by = json_object();
    for (int k = 0; k < rs.n_kinds; k++) {
      int m = 0;
      double kr = kind_rho(&rs, k, &m);
      json_object_set_new(by, rs.kinds[k], isnan(kr) ? json_null() : json_real(kr));
      if (report) fprintf(report, "%s: Spearman (mapper cycles vs measured ms, %d kernels) %.3f\n", rs.kinds[k], m, kr);
    }
    json_object_set_new(out, "spearman_by_kind", by);
    json_object_set_new(out, "geomean_pick_over_tuned", json_real(gain));
    if (report)
      fprintf(report, "%zu of %zu keys tuned; pooled Spearman (mapper cycles vs measured ms, %d kernels) %.3f; "
              "geomean pick/tuned %.3f\n", json_array_size(entries), json_array_size(groups), rs.n, rho, gain);
    st = common_write_json(out_path, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  }
  json_decref(out);
  free(rs.cyc);
  free(rs.kind);
  gpu_tdoc_close(&d);
  return st;
}

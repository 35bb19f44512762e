/* explore/explore_output.c: results.csv and summary.csv from the per-design
 * row files, and `explore merge`.
 *
 * Both CSVs are rebuilt whole, in design-index order, from rows/<id>.txt and
 * study.txt alone, and written atomically. So a run, a resumed run, a run
 * with any -j and a merge of shards all produce the same bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/c_locale.h"
#include "common/text.h"
#include "explore/explore_study.h"

#define MAX_DESIGN_FIELDS 128

typedef struct study_desc {
  const char *param[EXPLORE_MAX_VARY];
  const char *values[EXPLORE_MAX_VARY][EXPLORE_MAX_VALUES];
  int n_values[EXPLORE_MAX_VARY];
  int n_vary;
  const char *storage[EXPLORE_MAX_STORAGE];
  int n_storage;
  const char **layer; /* n_layers names, in study order (malloc'd array) */
  int n_layers;
  int n_designs;
} study_desc;

/* "layer NAME OP macs=..." -> NAME (split in place; names may hold spaces,
 * so the op is the word before " macs=" and the name what precedes it). */
static const char *key_layer_name(char *rest) {
  char *macs = strstr(rest, " macs=");
  if (!macs) return NULL;
  *macs = 0;
  char *sp = strrchr(rest, ' ');
  if (!sp) return NULL;
  *sp = 0;
  return rest;
}

/* study.txt -> the parts the writers need. Splits `text` in place. */
static cov_status parse_key(char *text, const char *file, study_desc *d) {
  memset(d, 0, sizeof *d);
  d->n_designs = -1;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "vary ", 5) == 0 && d->n_vary < EXPLORE_MAX_VARY) {
      char *eq = strchr(line + 5, '=');
      if (!eq) break;
      *eq = 0;
      int v = d->n_vary++;
      d->param[v] = line + 5;
      char *p = eq + 1;
      for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        if (d->n_values[v] < EXPLORE_MAX_VALUES) d->values[v][d->n_values[v]++] = p;
        if (!comma) break;
        p = comma + 1;
      }
    } else if (strncmp(line, "storage ", 8) == 0 && d->n_storage < EXPLORE_MAX_STORAGE) {
      d->storage[d->n_storage++] = line + 8;
    } else if (strncmp(line, "layer ", 6) == 0) {
      const char *name = key_layer_name(line + 6);
      const char **grown = realloc(d->layer, (size_t)(d->n_layers + 1) * sizeof *grown);
      if (!grown) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
      d->layer = grown;
      if (!name) return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = file), "malformed layer line");
      d->layer[d->n_layers++] = name;
    } else if (strncmp(line, "designs ", 8) == 0) {
      d->n_designs = atoi(line + 8);
    }
  }
  if (d->n_designs < 1 || d->n_designs > EXPLORE_MAX_DESIGNS || d->n_layers < 1)
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = file), "not a study description");
  return NULL;
}

typedef struct design_sum {
  int present, ok;
  char *note, *error;
  const char *evaluator;
  int layers;
  double cycles, time_us, log_cycles, util_cycles, energy, area;
} design_sum;

static void csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* Splits a row (no quoting inside: names and values never hold commas). */
static int split(char *s, char **out, int max) {
  int n = 0;
  for (;;) {
    if (n == max) return n;
    out[n++] = s;
    char *c = strchr(s, ',');
    if (!c) return n;
    *c = 0;
    s = c + 1;
  }
}

/* A figure cell: empty (unknown: NaN) or a finite number, nothing else. */
static int cell(const char *s, double *out) {
  *out = NAN;
  if (!*s) return 1;
  char *end = NULL;
  double v = common_strtod(s, &end);
  if (end == s || *end || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

static const char *const k_figure[] = {"cycles", "time_us", "macs", "utilisation"};

/* Checks one row of design `id` (row k of its file, at path:line) against
 * the study and adds it to ds. Rows come from shard folders, which are
 * input: a duplicated or foreign row, a value that is not a finite number
 * (NaN, inf, text) would silently change the study's figures. */
static cov_status add_row(const study_desc *d, const char *id, const int *which, char *row, int k,
                          const char *path, unsigned line, design_sum *ds) {
  char *f[MAX_DESIGN_FIELDS], shown[96];
  int n = split(row, f, MAX_DESIGN_FIELDS);
  int base = 1 + d->n_vary; /* layer */
  if (n != base + 7 + d->n_storage + 2)
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path, .line = line), "malformed row (%d fields, expected %d)",
                     n, base + 7 + d->n_storage + 2);
  if (strcmp(f[0], id) != 0)
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path, .line = line), "a row of design '%s' in %s's file",
                     common_escape(f[0], shown, sizeof shown), id);
  for (int v = 0; v < d->n_vary; v++)
    if (strcmp(f[1 + v], d->values[v][which[v]]) != 0)
      return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path, .line = line), "%s is '%s', but design %s has '%s'",
                       d->param[v], common_escape(f[1 + v], shown, sizeof shown), id, d->values[v][which[v]]);
  if (k >= d->n_layers || strcmp(f[base], d->layer[k]) != 0) {
    for (int j = 0; j < k && j < d->n_layers; j++)
      if (strcmp(f[base], d->layer[j]) == 0)
        return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path, .line = line),
                         "layer '%s' a second time (duplicated row); refusing it", d->layer[j]);
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path, .line = line), "layer '%s' where the study has %s",
                     common_escape(f[base], shown, sizeof shown), k < d->n_layers ? d->layer[k] : "no more layers");
  }
  double v[MAX_DESIGN_FIELDS];
  for (int c = base + 3; c < n; c++)
    if (!cell(f[c], &v[c])) {
      int fig = c - base - 3;
      char col[80];
      if (fig < 4) snprintf(col, sizeof col, "%s", k_figure[fig]);
      else if (fig < 4 + d->n_storage) snprintf(col, sizeof col, "bytes_%s", d->storage[fig - 4]);
      else snprintf(col, sizeof col, "%s", fig == 4 + d->n_storage ? "energy_pj" : "area_mm2");
      return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path, .line = line),
                       "%s is '%s': expected a finite number or nothing", col, common_escape(f[c], shown, sizeof shown));
    }
  double cyc = v[base + 3];
  if (!ds->evaluator && !(ds->evaluator = strdup(f[base + 2])))
    return cov_error(COV_OUT_OF_MEMORY, EXPLORE_AT(.file = path), "out of memory");
  ds->layers++;
  ds->cycles += cyc;
  ds->time_us += v[base + 4];
  ds->log_cycles += log(cyc);
  ds->util_cycles += v[base + 6] * cyc;
  ds->energy += v[base + 7 + d->n_storage]; /* NaN if any layer lacks it */
  ds->area = v[base + 8 + d->n_storage];
  return NULL;
}

/* rows/<id>.txt of design i -> ds, its rows appended to rf (if not NULL). */
static cov_status read_design(const study_desc *d, int i, const char *path, char *text, design_sum *ds, FILE *rf) {
  char id[32];
  explore_design_id(d->n_designs, i, id, sizeof id);
  int which[EXPLORE_MAX_VARY];
  explore_design_values(d->n_values, d->n_vary, i, which);
  ds->present = 1;
  int rows = 0;
  unsigned line = 0;
  for (char *p = text, *next; p && *p; p = next) {
    line++;
    next = strchr(p, '\n');
    if (next) *next++ = 0;
    if (strncmp(p, "note ", 5) == 0) {
      free(ds->note);
      if (!(ds->note = strdup(p + 5))) return cov_error(COV_OUT_OF_MEMORY, EXPLORE_AT(.file = path), "out of memory");
    } else if (strcmp(p, "status ok") == 0) {
      ds->ok = 1;
    } else if (strncmp(p, "error ", 6) == 0 && !ds->error) {
      if (!(ds->error = strdup(p + 6))) return cov_error(COV_OUT_OF_MEMORY, EXPLORE_AT(.file = path), "out of memory");
    } else if (strncmp(p, "row ", 4) == 0) {
      if (rf) fprintf(rf, "%s\n", p + 4);
      COV_RETURN_IF_ERROR(add_row(d, id, which, p + 4, rows++, path, line, ds));
    }
  }
  if (rows != (ds->ok ? d->n_layers : 0))
    return cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path), "%d row(s) for a %s design of %d layer(s)", rows,
                     ds->ok ? "complete" : "failed", ds->ok ? d->n_layers : 0);
  return NULL;
}

void explore_notify(cov_explore_event_fn on_event, void *user, cov_explore_event_kind kind, const char *fmt, ...) {
  if (!on_event) return;
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cov_explore_event ev = {.kind = kind, .text = text};
  on_event(user, &ev);
}

/* A failed design's warning: its id, values and message. */
static void warn_failed(const study_desc *d, int i, const char *id, const design_sum *ds,
                        cov_explore_event_fn on_event, void *user) {
  char vals[512] = "";
  int which[EXPLORE_MAX_VARY];
  explore_design_values(d->n_values, d->n_vary, i, which);
  for (int v = 0; v < d->n_vary; v++)
    snprintf(vals + strlen(vals), sizeof vals - strlen(vals), "%s%s=%s", v ? ", " : "", d->param[v],
             d->values[v][which[v]]);
  explore_notify(on_event, user, COV_EXPLORE_WARNING, "design %s (%s) failed: %s", id, vals,
                 ds->error ? ds->error : "(no message)");
}

/* results.csv into rf: its header, then every design's rows (those in this
 * folder) in index order, each design's figures into sum[i]. */
static cov_status read_designs(const char *dir, const study_desc *d, design_sum *sum, FILE *rf,
                               int *n_failed, cov_explore_event_fn on_event, void *user) {
  char path[4200];
  fprintf(rf, "design");
  for (int v = 0; v < d->n_vary; v++) fprintf(rf, ","), csv_field(rf, d->param[v]);
  fprintf(rf, ",layer,op,evaluator,cycles,time_us,macs,utilisation");
  for (int i = 0; i < d->n_storage; i++) fprintf(rf, ",bytes_%s", d->storage[i]);
  fprintf(rf, ",energy_pj,area_mm2\n");
  for (int i = 0; i < d->n_designs; i++) {
    char id[32];
    explore_design_id(d->n_designs, i, id, sizeof id);
    snprintf(path, sizeof path, "%s/rows/%s.txt", dir, id);
    char *text = NULL;
    COV_RETURN_IF_ERROR(explore_read_file(path, &text, NULL));
    if (!text) continue; /* another shard's design, or not run yet */
    design_sum *ds = &sum[i];
    cov_status st = read_design(d, i, path, text, ds, rf);
    free(text);
    if (st) return st;
    if (!ds->ok) {
      (*n_failed)++;
      if (on_event) warn_failed(d, i, id, ds, on_event, user);
    }
  }
  return NULL;
}

/* Design i's line of summary.csv; pa, pe: the Pareto flags. */
static void summary_row(FILE *sf, const study_desc *d, int i, const design_sum *ds, const int *pa,
                        const int *pe) {
  char id[32];
  explore_design_id(d->n_designs, i, id, sizeof id);
  int which[EXPLORE_MAX_VARY];
  explore_design_values(d->n_values, d->n_vary, i, which);
  fprintf(sf, "%s", id);
  for (int v = 0; v < d->n_vary; v++) fprintf(sf, ","), csv_field(sf, d->values[v][which[v]]);
  fprintf(sf, ",%s,%s,%d,", ds->ok ? "ok" : "failed", ds->evaluator ? ds->evaluator : "", ds->layers);
  if (ds->ok && ds->layers) {
    explore_csv_num(sf, ds->cycles, 1);
    fprintf(sf, ",%.6g,%.6g,%.6f,", ds->time_us, exp(ds->log_cycles / ds->layers),
            ds->util_cycles / ds->cycles);
    explore_csv_num(sf, ds->energy, 0);
    fprintf(sf, ",");
    explore_csv_num(sf, ds->area, 0);
    fprintf(sf, ",%d,%d,", pa[i], pe[i]);
  } else {
    /* the 8 empty figures, total_cycles to pareto_cycles_energy */
    fprintf(sf, ",,,,,,,,");
  }
  csv_field(sf, ds->note ? ds->note : "");
  fprintf(sf, ",");
  csv_field(sf, ds->error ? ds->error : "");
  fprintf(sf, "\n");
}

/* summary.csv into sf: the Pareto fronts over the designs that ran (in
 * this folder), then a line per design. */
static cov_status write_summary(FILE *sf, const study_desc *d, const design_sum *sum) {
  cov_status st = NULL;
  double *cyc = calloc((size_t)d->n_designs, sizeof *cyc);
  double *area = calloc((size_t)d->n_designs, sizeof *area);
  double *en = calloc((size_t)d->n_designs, sizeof *en);
  int *pa = calloc((size_t)d->n_designs, sizeof *pa), *pe = calloc((size_t)d->n_designs, sizeof *pe);
  if (!cyc || !area || !en || !pa || !pe) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  } else {
    for (int i = 0; i < d->n_designs; i++) {
      int use = sum[i].present && sum[i].ok;
      cyc[i] = use ? sum[i].cycles : NAN;
      area[i] = use ? sum[i].area : NAN;
      en[i] = use ? sum[i].energy : NAN;
    }
    explore_pareto(cyc, area, d->n_designs, pa);
    explore_pareto(cyc, en, d->n_designs, pe);
    fprintf(sf, "design");
    for (int v = 0; v < d->n_vary; v++) fprintf(sf, ","), csv_field(sf, d->param[v]);
    fprintf(sf, ",status,evaluator,layers,total_cycles,total_time_us,geomean_cycles,utilisation,"
                "energy_pj,area_mm2,pareto_cycles_area,pareto_cycles_energy,derived,error\n");
    for (int i = 0; i < d->n_designs; i++)
      if (sum[i].present) summary_row(sf, d, i, &sum[i], pa, pe);
  }
  free(cyc), free(area), free(en), free(pa), free(pe);
  return st;
}

cov_status explore_output_write(const char *dir, const char *key, cov_explore_event_fn on_event, void *user) {
  char path[4200];
  snprintf(path, sizeof path, "%s/study.txt", dir);
  char *keycopy = strdup(key);
  if (!keycopy) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  study_desc d;
  cov_status st = parse_key(keycopy, path, &d);
  if (st) {
    free(d.layer);
    free(keycopy);
    return st;
  }
  design_sum *sum = calloc((size_t)d.n_designs, sizeof *sum);
  char *res = NULL, *smy = NULL;
  size_t res_size = 0, smy_size = 0;
  FILE *rf = open_memstream(&res, &res_size);
  FILE *sf = open_memstream(&smy, &smy_size);
  int n_failed = 0;
  if (!sum || !rf || !sf) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = read_designs(dir, &d, sum, rf, &n_failed, on_event, user);
  if (!st) st = write_summary(sf, &d, sum);
  if (!st && n_failed)
    explore_notify(on_event, user, COV_EXPLORE_WARNING, "%d design(s) failed; the others ran (see summary.csv)",
                   n_failed);
  if (rf) fclose(rf);
  if (sf) fclose(sf);
  if (!st) {
    snprintf(path, sizeof path, "%s/results.csv", dir);
    st = common_write_file(path, res, res_size);
  }
  if (!st) {
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    st = common_write_file(path, smy, smy_size);
  }
  if (sum)
    for (int i = 0; i < d.n_designs; i++) {
      free(sum[i].note);
      free(sum[i].error);
      free((char *)sum[i].evaluator);
    }
  free(sum);
  free(res);
  free(smy);
  free(d.layer);
  free(keycopy);
  return st;
}

static cov_status copy_file(const char *from, const char *to) {
  char *text = NULL;
  size_t n = 0;
  COV_RETURN_IF_ERROR(explore_read_file(from, &text, &n));
  if (!text) return NULL;
  cov_status st = common_write_file(to, text, n);
  free(text);
  return st;
}

/* Checks a shard's rows/<id>.txt before anything is written, so that an
 * error names the shard's file and the merged folder is not begun. */
static cov_status check_shard_rows(const study_desc *d, int i, const char *path) {
  char *text = NULL;
  COV_RETURN_IF_ERROR(explore_read_file(path, &text, NULL));
  if (!text) return cov_error(COV_NOT_FOUND, EXPLORE_AT(.file = path), "vanished while merging");
  design_sum ds = {0};
  cov_status st = read_design(d, i, path, text, &ds, NULL);
  free(ds.note), free(ds.error), free((char *)ds.evaluator), free(text);
  return st;
}

/* Whether a shard holds `path`: a regular file (a link or anything else is
 * refused, naming it; explore_read_file refuses the same when it is read). */
static cov_status shard_has(const char *path, int *has) { return explore_check_entry(path, false, has); }

static cov_status merge(const char *const *dirs, int n_dirs, const char *out_dir, cov_explore_event_fn on_event,
                        void *event_user) {
  if (n_dirs < 1 || !out_dir)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_explore_merge"), "explore merge: no shard folders or no -o");
  char path[4200];
  char *key = NULL;
  cov_status st = NULL;
  for (int i = 0; i < n_dirs && !st; i++) {
    snprintf(path, sizeof path, "%s/study.txt", dirs[i]);
    char *k = NULL;
    if ((st = explore_read_file(path, &k, NULL))) break;
    if (!k) st = cov_error(COV_NOT_FOUND, EXPLORE_AT(.file = path), "not a study folder (no study.txt)");
    else if (key && strcmp(k, key) != 0)
      st = cov_error(COV_INVALID_INPUT, EXPLORE_AT(.file = path),
                     "a different study from %s/study.txt (base ACG, --vary, layers, evaluator or "
                     "dtype differ); refusing to merge",
                     dirs[0]);
    if (!key) key = k;
    else free(k);
  }
  for (int i = 0; i < n_dirs && !st; i++) {
    snprintf(path, sizeof path, "%s/rows", dirs[i]);
    st = explore_check_folder(path);
    snprintf(path, sizeof path, "%s/designs", dirs[i]);
    if (!st) st = explore_check_folder(path);
  }
  study_desc d = {0};
  char *kc = key ? strdup(key) : NULL;
  if (!st && !kc) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  if (!st) st = parse_key(kc, path, &d);
  int missing = 0;
  char missing_ids[256] = "";
  for (int i = 0; !st && i < d.n_designs; i++) {
    char id[32];
    explore_design_id(d.n_designs, i, id, sizeof id);
    int owner = -1;
    for (int k = 0; k < n_dirs && !st; k++) {
      snprintf(path, sizeof path, "%s/rows/%s.txt", dirs[k], id);
      int has = 0;
      if ((st = shard_has(path, &has)) || !has) continue;
      if (owner >= 0)
        st = cov_error(COV_INVALID_INPUT, COV_AT(dirs[k], id),
                       "design %s is in both %s and %s; refusing to merge duplicated rows", id,
                       dirs[owner], dirs[k]);
      owner = k;
    }
    if (owner >= 0 && !st) {
      snprintf(path, sizeof path, "%s/rows/%s.txt", dirs[owner], id);
      st = check_shard_rows(&d, i, path);
      int has = 0;
      snprintf(path, sizeof path, "%s/designs/%s.json", dirs[owner], id);
      if (!st) st = shard_has(path, &has);
    }
    if (owner < 0) {
      if (missing++ < 8) {
        size_t u = strlen(missing_ids);
        snprintf(missing_ids + u, sizeof missing_ids - u, "%s%s", u ? " " : "", id);
      }
    }
  }
  if (!st && missing)
    st = cov_error(COV_INVALID_INPUT, COV_AT_FILE(out_dir),
                   "%d design(s) are in none of the shard folders (%s%s); run the missing shards "
                   "first",
                   missing, missing_ids, missing > 8 ? " ..." : "");
  char sub[4200];
  if (!st) st = explore_mkdir_p(out_dir);
  snprintf(sub, sizeof sub, "%s/rows", out_dir);
  if (!st) st = explore_mkdir_p(sub);
  snprintf(sub, sizeof sub, "%s/designs", out_dir);
  if (!st) st = explore_mkdir_p(sub);
  for (int i = 0; !st && i < d.n_designs; i++) {
    char id[32], to[4200];
    explore_design_id(d.n_designs, i, id, sizeof id);
    for (int k = 0; k < n_dirs && !st; k++) {
      snprintf(path, sizeof path, "%s/rows/%s.txt", dirs[k], id);
      int has = 0;
      if ((st = shard_has(path, &has)) || !has) continue;
      snprintf(to, sizeof to, "%s/rows/%s.txt", out_dir, id);
      if (strcmp(path, to) != 0) st = copy_file(path, to);
      snprintf(path, sizeof path, "%s/designs/%s.json", dirs[k], id);
      snprintf(to, sizeof to, "%s/designs/%s.json", out_dir, id);
      if (!st && strcmp(path, to) != 0) st = copy_file(path, to);
    }
  }
  if (!st) {
    snprintf(path, sizeof path, "%s/study.txt", out_dir);
    st = common_write_file(path, key, strlen(key));
  }
  if (!st) st = explore_output_write(out_dir, key, on_event, event_user);
  free(d.layer);
  free(kc);
  free(key);
  return st;
}

/* In the "C" locale, like cov_explore_run: figures are read and written with
 * '.' whatever the calling program's LC_NUMERIC. */
cov_status cov_explore_merge(const char *const *dirs, int n_dirs, const char *out_dir,
                             cov_explore_event_fn on_event, void *event_user) {
  common_c_locale scope;
  common_c_locale_enter(&scope);
  cov_status st = merge(dirs, n_dirs, out_dir, on_event, event_user);
  common_c_locale_leave(&scope);
  return st;
}

/* explore/explore_study.c: running a study — derive, validate, evaluate each
 * design in worker processes, resume what an earlier run left, report
 * progress.
 *
 * Each design is done by one forked worker that writes one file,
 * rows/<id>.txt, atomically (common_write_file): it exists only when the
 * design is complete, so resuming skips exactly the designs that exist and
 * redoes the rest, and a kill at any moment loses at most work in progress.
 * results.csv and summary.csv are then rebuilt from the row files in design
 * order (explore_output.c), which is what makes the output independent of
 * -j, shards and interruptions. Workers are processes rather than threads so
 * that an evaluator that crashes or leaks takes only its own design down.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acg/acg_ir.h"
#include "backends/registry/backend_registry.h"
#include "common/c_locale.h"
#include "covenant/mapper.h"
#include "explore/explore.h"
#include "explore/explore_study.h"

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

void explore_study_free(explore_study *s) {
  if (!s) return;
  for (int i = 0; i < s->n_vary; i++) explore_vary_release(&s->vary[i]);
  json_decref(s->base_doc);
  cov_acg_free(s->base_acg);
  free(s->base_text);
  free(s->key);
  cov_arena_destroy(s->arena);
  free(s);
}

void explore_design_id(int n_designs, int index, char *buf, size_t size) {
  int width = 3;
  for (int n = n_designs - 1; n >= 1000 && width < 6; n /= 10) width++;
  snprintf(buf, size, "d%0*u", width, (unsigned)index % 1000000u);
}

void explore_design_values(const int *n_values, int n_vary, int index, int *which) {
  for (int v = n_vary - 1; v >= 0; v--) { /* the last parameter changes fastest */
    which[v] = index % n_values[v];
    index /= n_values[v];
  }
}

/* study.txt: everything that determines the output, so resume and merge can
 * refuse a folder holding a different study. Paths are not in it (the same
 * study may run from different folders on different machines); contents are. */
static char *study_key(explore_study *s) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) return NULL;
  fprintf(f, "covenant explore study 1\n");
  fprintf(f, "base %s fnv1a64=%016llx\n", cov_acg_name(s->base_acg),
          (unsigned long long)fnv1a(s->base_text, s->base_size));
  for (int i = 0; i < s->n_vary; i++) fprintf(f, "vary %s\n", s->vary[i].spec);
  fprintf(f, "evaluator %s\n", s->ev.name);
  fprintf(f, "dtype %s %s\n", cov_dtype_name(s->ctx.in_dtype), cov_dtype_name(s->ctx.acc_dtype));
  for (int i = 0; i < s->base_acg->n_storage && i < EXPLORE_MAX_STORAGE; i++)
    fprintf(f, "storage %s\n", s->base_acg->storage[i].name);
  for (int i = 0; i < s->layers.n; i++) {
    const explore_layer *l = &s->layers.items[i];
    fprintf(f, "layer %s %s macs=%.0f in=%.0f w=%.0f out=%.0f\n", l->name, l->op, l->macs,
            l->in_elems, l->w_elems, l->out_elems);
  }
  fprintf(f, "designs %d\n", s->n_designs);
  fclose(f);
  return text;
}

cov_status explore_study_open(const cov_explore_options *o, explore_study **out) {
  *out = NULL;
  if (!o || !o->base || !o->out_dir)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_explore_run"), "explore: a base ACG and an output folder are needed");
  if (!o->use_suite && o->n_models == 0)
    return cov_error(COV_INVALID_ARGUMENT, COV_AT_CALL("cov_explore_run"), "explore: no layers (give --suite and/or --model)");
  if (o->n_vary > EXPLORE_MAX_VARY)
    return cov_error(COV_OUT_OF_RANGE, COV_AT(NULL, "--vary"), "at most %d --vary parameters", EXPLORE_MAX_VARY);
  explore_study *s = calloc(1, sizeof *s);
  if (!s || !(s->arena = cov_arena_create())) {
    free(s);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  cov_status st = NULL;
  char path[4096];
  if ((st = common_resolve_data_file(o->base, "targets", ".json", "COVENANT_TARGET_PATH", path, sizeof path)))
    goto fail;
  s->base_path = cov_arena_strdup(s->arena, path);
  if ((st = common_read_file(path, COV_ACG_MAX_FILE_BYTES, &s->base_text, &s->base_size))) goto fail;
  if ((st = cov_acg_load_buffer(s->base_text, s->base_size, path, &s->base_acg)) ||
      (st = backend_check_acg(s->base_acg))) {
    st = cov_status_annotate(st, "base ACG: ");
    goto fail;
  }
  json_error_t jerr;
  s->base_doc = json_loadb(s->base_text, s->base_size, JSON_REJECT_DUPLICATES, &jerr);
  if (!s->base_doc) { /* the loader accepted it, so this is not expected */
    st = cov_error(COV_PARSE_ERROR, EXPLORE_AT(.file = path), "%s", jerr.text);
    goto fail;
  }
  s->n_designs = 1;
  for (int i = 0; i < o->n_vary; i++) {
    cov_status vs = explore_vary_parse(s->arena, o->vary[i], s->base_doc, &s->vary[s->n_vary]);
    s->n_vary++;
    if (vs) { /* report every bad spec at once */
      st = cov_status_join(st, vs);
      continue;
    }
    for (int j = 0; j < i; j++)
      if (strcmp(s->vary[j].param, s->vary[i].param) == 0)
        st = cov_status_join(st, cov_error(COV_INVALID_ARGUMENT, COV_AT_OPTION("--vary", s->vary[i].param),
                                           "parameter given twice"));
    if ((long long)s->n_designs * s->vary[i].n_values > EXPLORE_MAX_DESIGNS)
      st = cov_status_join(st, cov_error(COV_OUT_OF_RANGE, COV_AT(o->base, "--vary"),
                                         "explore: more than %d designs", EXPLORE_MAX_DESIGNS));
    else s->n_designs *= s->vary[i].n_values;
  }
  if (st) goto fail;
  if ((st = explore_evaluator_find(o->evaluator, o->n_models > 0, &s->ev))) goto fail;
  if (!o->evaluator)
    explore_notify(o->on_event, o->event_user, COV_EXPLORE_NOTE, "evaluator %s (%s)", s->ev.name, s->ev.about);
  s->ctx.in_dtype = cov_dtype_from_name(o->dtype ? o->dtype : "f16");
  s->ctx.acc_dtype = cov_dtype_from_name(o->acc_dtype ? o->acc_dtype : "f32");
  if (s->ctx.in_dtype == COV_DTYPE_INVALID || s->ctx.acc_dtype == COV_DTYPE_INVALID) {
    st = cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, "--dtype"), "unknown dtype (one of %s)", cov_dtype_names());
    goto fail;
  }
  if (o->use_suite) {
    char suite[4096];
    if (o->suite) snprintf(suite, sizeof suite, "%s", o->suite);
    else if ((st = cov_suite_find(suite, sizeof suite))) goto fail;
    if ((st = explore_layers_add_suite(s->arena, suite, o->suite_names, &s->layers))) goto fail;
  }
  for (int i = 0; i < o->n_models; i++)
    if ((st = explore_layers_add_model(s->arena, o->models[i], &s->layers))) goto fail;
  if (s->layers.n == 0) {
    st = cov_error(COV_INVALID_ARGUMENT, COV_AT(o->suite, NULL), "explore: the study has no compute layers");
    goto fail;
  }
  if (o->n_shards < 0 || (o->n_shards > 0 && (o->shard < 0 || o->shard >= o->n_shards))) {
    st = cov_error(COV_INVALID_ARGUMENT, COV_AT(NULL, "--shard"), "expected I/N with 0 <= I < N (got %d/%d)",
                   o->shard, o->n_shards);
    goto fail;
  }
  s->opts = o;
  s->key = study_key(s);
  if (!s->key) {
    st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
    goto fail;
  }
  *out = s;
  return NULL;
fail:
  explore_study_free(s);
  return st;
}

/* Writes a CSV cell: empty for unknown figures, integers without a point. */
void explore_csv_num(FILE *f, double v, int integer) {
  if (isnan(v)) return;
  if (integer) fprintf(f, "%.0f", v);
  else fprintf(f, "%.6g", v);
}

/* A failed design's part of its row file: its errors, one per line; frees
 * them. */
static void write_failure(FILE *f, cov_status fail) {
  fprintf(f, "status failed\n");
  for (cov_status e = fail; e; e = cov_status_next(e)) {
    char msg[1024];
    cov_loc loc = cov_status_loc(e);
    snprintf(msg, sizeof msg, "%s", cov_status_message(e));
    for (char *p = msg; *p; p++)
      if (*p == '\n') *p = ' '; /* one error per line in the row file */
    fprintf(f, "error ");
    if (loc.file) fprintf(f, "%s:%u:%u: ", loc.file, loc.line, loc.col);
    fprintf(f, "%s%s%s\n", loc.path ? loc.path : "", loc.path ? ": " : "", msg);
  }
  cov_status_free(fail);
}

/* A design's ACG: loaded, and its backend section checked against its
 * backend (backend_check_acg), as a target's is when it opens. */
static cov_status load_design(const char *text, size_t len, const char *diag_name, cov_acg **g) {
  cov_status st = cov_acg_load_buffer(text, len, diag_name, g);
  if (!st && (st = backend_check_acg(*g))) {
    cov_acg_free(*g);
    *g = NULL;
  }
  return st;
}

/* The worker's job: derive, validate, evaluate, write rows/<id>.txt. */
static cov_status run_design(explore_study *s, int index) {
  char id[32], path[4200], note[1024], all_notes[4096] = "";
  explore_design_id(s->n_designs, index, id, sizeof id);
  int which[EXPLORE_MAX_VARY];
  int nv[EXPLORE_MAX_VARY];
  for (int v = 0; v < s->n_vary; v++) nv[v] = s->vary[v].n_values;
  explore_design_values(nv, s->n_vary, index, which);

  json_t *doc = json_deep_copy(s->base_doc);
  cov_status st = NULL;
  for (int v = 0; v < s->n_vary && !st; v++) {
    st = explore_vary_apply(&s->vary[v], which[v], doc, note, sizeof note);
    if (!st && note[0]) {
      size_t u = strlen(all_notes);
      snprintf(all_notes + u, sizeof all_notes - u, "%s%s", u ? "; " : "", note);
    }
  }
  char *text = st ? NULL : json_dumps(doc, JSON_INDENT(2));
  json_decref(doc);
  if (st) return st;
  if (!text) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  size_t text_len = strlen(text);
  snprintf(path, sizeof path, "%s/designs/%s.json", s->opts->out_dir, id);
  st = common_write_file(path, text, text_len);
  char diag_name[64];
  snprintf(diag_name, sizeof diag_name, "designs/%s.json", id);
  cov_acg *g = NULL;
  cov_status load = st ? NULL : load_design(text, text_len, diag_name, &g);
  free(text);
  if (st) return st;

  char *body = NULL;
  size_t body_size = 0;
  FILE *f = open_memstream(&body, &body_size);
  if (!f) {
    cov_status_free(load);
    cov_acg_free(g);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  fprintf(f, "note %s\n", all_notes);
  cov_status fail = load;
  if (!fail && g->n_storage != s->base_acg->n_storage)
    fail = cov_error(COV_INVALID_INPUT, COV_AT(s->base_path, "$.storage"), "the design has a different set of storage nodes");
  double area = fail ? NAN : explore_area_mm2(g);
  char *rows = NULL;
  size_t rows_size = 0;
  FILE *r = fail ? NULL : open_memstream(&rows, &rows_size);
  if (!fail && !r) fail = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int li = 0; li < s->layers.n && !fail; li++) {
    const explore_layer *l = &s->layers.items[li];
    explore_result res;
    memset(&res, 0, sizeof res);
    fail = s->ev.eval(&s->ev, g, l, &s->ctx, &res);
    if (fail) break;
    fprintf(r, "row %s", id);
    for (int v = 0; v < s->n_vary; v++) fprintf(r, ",%s", s->vary[v].text[which[v]]);
    fprintf(r, ",%s,%s,%s,", l->name, l->op, s->ev.name);
    explore_csv_num(r, res.cycles, 1);
    fprintf(r, ",");
    explore_csv_num(r, res.cycles / g->clock_mhz, 0);
    fprintf(r, ",");
    explore_csv_num(r, l->macs, 1);
    fprintf(r, ",");
    if (!isnan(res.utilisation)) fprintf(r, "%.6f", res.utilisation); /* unknown: empty, never "nan" */
    for (int i = 0; i < g->n_storage && i < EXPLORE_MAX_STORAGE; i++) {
      fprintf(r, ",");
      explore_csv_num(r, res.bytes[i], 1);
    }
    fprintf(r, ",");
    explore_csv_num(r, res.energy_pj, 0);
    fprintf(r, ",");
    explore_csv_num(r, area, 0);
    fprintf(r, "\n");
  }
  if (r) fclose(r);
  if (cov_status_code(fail) == COV_OUT_OF_MEMORY) {
    /* not a property of the design: no row is written, the study fails,
     * and a resumed run evaluates the design again */
    free(rows);
    cov_acg_free(g);
    fclose(f);
    free(body);
    return fail;
  }
  if (fail) {
    write_failure(f, fail);
  } else {
    fprintf(f, "status ok\n");
    fprintf(f, "%s", rows ? rows : "");
  }
  free(rows);
  cov_acg_free(g);
  fclose(f);
  snprintf(path, sizeof path, "%s/rows/%s.txt", s->opts->out_dir, id);
  st = common_write_file(path, body, body_size);
  free(body);
  return st;
}

static int design_done(const explore_study *s, int index) {
  char id[32], path[4200];
  explore_design_id(s->n_designs, index, id, sizeof id);
  snprintf(path, sizeof path, "%s/rows/%s.txt", s->opts->out_dir, id);
  return access(path, F_OK) == 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Progress is the one place time appears; it goes to the caller's
 * on_event only and never changes what is computed or written. */
static void progress(const explore_study *s, int done, int total, int resumed, double t0, int final) {
  if (!s->opts->on_event) return;
  double el = now_s() - t0;
  int ran = done - resumed;
  cov_explore_event ev = {.kind = COV_EXPLORE_PROGRESS, .done = done, .total = total, .elapsed_s = el,
                          .left_s = ran > 0 ? el / ran * (total - done) : NAN, .final = final};
  s->opts->on_event(s->opts->event_user, &ev);
}

static cov_status check_or_write_key(explore_study *s) {
  char path[4200];
  snprintf(path, sizeof path, "%s/study.txt", s->opts->out_dir);
  char *old = NULL;
  COV_RETURN_IF_ERROR(explore_read_file(path, &old, NULL));
  if (old) {
    int same = strcmp(old, s->key) == 0;
    free(old);
    if (!same)
      return cov_error(COV_INVALID_ARGUMENT, EXPLORE_AT(.file = path),
                       "this folder holds a different study (base ACG, --vary, layers, evaluator "
                       "or dtype differ); use another -o folder or remove it");
    return NULL;
  }
  return common_write_file(path, s->key, strlen(s->key));
}

/* Runs on one study folder at the same time (two shells, two jobs of a
 * cluster sharing a file system) coordinate through flock(2) locks on files
 * in the folder: `lock` is held while study.txt is checked or written and
 * while the CSVs are written, so of two different studies started at once
 * on a new folder one writes its key and the other is refused; `locks/<id>`
 * is held by the run evaluating design <id>, so two runs of the same study
 * share the designs instead of both evaluating every one, and a run waits
 * for a design another run holds before writing the CSVs. Locks vanish with
 * their process, so a killed run leaves nothing to clean up. */
static cov_status lock_file(const char *path, int op, int *out_fd) {
  *out_fd = -1;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot open lock file: %s",
                     strerror(errno));
  int r;
  while ((r = flock(fd, op)) != 0 && errno == EINTR) {
  }
  if (r != 0) {
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK) return NULL; /* held elsewhere: *out_fd stays -1 */
    return cov_error(COV_IO_ERROR, EXPLORE_AT(.file = path), "cannot lock: %s", strerror(e));
  }
  *out_fd = fd;
  return NULL;
}

static cov_status lock_folder(const explore_study *s, int *fd) {
  char path[4200];
  snprintf(path, sizeof path, "%s/lock", s->opts->out_dir);
  return lock_file(path, LOCK_EX, fd);
}

static void unlock(int *fd) {
  if (*fd >= 0) close(*fd); /* closing the last descriptor releases the lock */
  *fd = -1;
}

/* Takes design i's lock; *fd -1 when another run holds it (wait: block). */
static cov_status lock_design(const explore_study *s, int i, int wait, int *fd) {
  char id[32], path[4200];
  explore_design_id(s->n_designs, i, id, sizeof id);
  snprintf(path, sizeof path, "%s/locks/%s", s->opts->out_dir, id);
  return lock_file(path, wait ? LOCK_EX : LOCK_EX | LOCK_NB, fd);
}

/* Waits until one of the study's own workers (pids[0..n), 0 = free slot)
 * ends; *slot and *wst say which and how. Only these pids are waited for:
 * waitpid(-1) would also reap children the calling program started (a
 * shell's background job, an application's helper), count them as workers
 * and steal their exit status from their owner. POSIX has no blocking wait
 * for "any of these pids", so the slots are polled, the pause growing from
 * 0.1 ms to 10 ms while none has ended (short designs keep the pause short). */
static cov_status reap_own(const pid_t *pids, int n, const char *out_dir, int *slot, int *wst) {
  long pause_ns = 100000;
  for (;;) {
    for (int j = 0; j < n; j++) {
      if (pids[j] <= 0) continue;
      pid_t p = waitpid(pids[j], wst, WNOHANG);
      if (p == pids[j]) {
        *slot = j;
        return NULL;
      }
      if (p < 0 && errno != EINTR)
        return cov_error(COV_INTERNAL, COV_AT_FILE(out_dir), "waitpid(%ld): %s", (long)pids[j],
                         strerror(errno));
    }
    struct timespec ts = {0, pause_ns};
    nanosleep(&ts, NULL);
    if (pause_ns < 10000000) pause_ns *= 2;
  }
}

/* The study's folder: its subfolders, its key (study.txt, checked or
 * written under the folder's lock) and no temporaries left by a killed
 * run. */
static cov_status prepare_folder(explore_study *s, const cov_explore_options *o) {
  char dir[4200];
  cov_status st = explore_mkdir_p(o->out_dir);
  snprintf(dir, sizeof dir, "%s/rows", o->out_dir);
  if (!st) st = explore_mkdir_p(dir);
  snprintf(dir, sizeof dir, "%s/designs", o->out_dir);
  if (!st) st = explore_mkdir_p(dir);
  snprintf(dir, sizeof dir, "%s/locks", o->out_dir);
  if (!st) st = explore_mkdir_p(dir);
  int folder_fd = -1;
  if (!st) st = lock_folder(s, &folder_fd);
  if (!st) st = check_or_write_key(s);
  if (!st) st = explore_remove_temporaries(o->out_dir);
  unlock(&folder_fd);
  return st;
}

/* The designs of this run over its worker slots: which comes next, which
 * another run held (waited for at the end), each slot's worker and design
 * lock, and the counts the progress and the closing note report. */
typedef struct sched {
  explore_study *s;
  const cov_explore_options *o;
  int n_shards, jobs;
  int next, running, total, done, resumed, crashed;
  char *resumed_here; /* done before this run began */
  int *later;         /* designs another run held when we came to them */
  int n_later, waiting, shared, evaluated;
  pid_t *pids;
  int *fds;
} sched;

/* A forked worker: evaluates design i, reports a failure, exits. */
static _Noreturn void worker(const sched *q, int i) {
  /* the other designs' locks are the parent's to release */
  for (int j = 0; j < q->jobs; j++)
    if (q->fds[j] >= 0) close(q->fds[j]);
  cov_status cs = run_design(q->s, i);
  if (cs && q->o->on_event) {
    cov_explore_event ev = {.kind = COV_EXPLORE_WARNING, .status = cs};
    q->o->on_event(q->o->event_user, &ev);
  }
  int code = cs ? 1 : 0;
  cov_status_free(cs);
  fflush(stderr);
  _exit(code);
}

/* Takes the next design (or one another run held, once the others are
 * started) and starts a worker on it where it is not done and its lock is
 * free. */
static cov_status start_one(sched *q) {
  explore_study *s = q->s;
  int i, wait = q->next >= s->n_designs;
  if (!wait) {
    i = q->next;
    q->next += q->n_shards;
  } else {
    i = q->later[q->waiting++]; /* another run had it: wait for its lock */
  }
  if (design_done(s, i)) {
    if (!q->resumed_here[i]) q->done++, q->shared++; /* another run finished it meanwhile */
    return NULL;
  }
  int fd = -1;
  COV_RETURN_IF_ERROR(lock_design(s, i, wait, &fd));
  if (fd < 0) {
    q->later[q->n_later++] = i;
    return NULL;
  }
  if (design_done(s, i)) { /* finished by the run that held it */
    q->done++, q->shared++;
    unlock(&fd);
    return NULL;
  }
  int slot = 0;
  while (slot < q->jobs && q->pids[slot]) slot++;
  if (slot == q->jobs) { /* cannot happen: running < jobs means a free slot */
    unlock(&fd);
    return cov_error(COV_INTERNAL, COV_AT_FILE(q->o->out_dir), "explore: no free worker slot");
  }
  pid_t pid = fork();
  if (pid < 0) {
    unlock(&fd);
    q->next = s->n_designs;
    return cov_error(COV_IO_ERROR, COV_AT_FILE(q->o->out_dir), "fork failed: %s", strerror(errno));
  }
  if (pid == 0) worker(q, i);
  q->pids[slot] = pid, q->fds[slot] = fd, q->evaluated++;
  q->running++;
  return NULL;
}

/* Keeps the slots busy until every design of this run is done or an
 * error (st, or one on the way) stops it; each ended worker is counted
 * done or crashed. */
static cov_status run_designs(sched *q, double t0, cov_status st) {
  explore_study *s = q->s;
  fflush(stdout);
  fflush(stderr);
  while (!st && (q->next < s->n_designs || q->running > 0 || q->waiting < q->n_later)) {
    while (q->running < q->jobs &&
           (q->next < s->n_designs || (q->running == 0 && q->waiting < q->n_later)))
      if ((st = start_one(q))) break;
    if (q->running == 0) break;
    int wst = 0, j = 0;
    cov_status rs = reap_own(q->pids, q->jobs, q->o->out_dir, &j, &wst);
    if (rs) {
      st = cov_status_join(st, rs);
      break;
    }
    q->running--;
    q->pids[j] = 0;
    unlock(&q->fds[j]);
    if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0) q->done++;
    else q->crashed++;
    progress(s, q->done, q->total, q->resumed, t0, 0);
  }
  progress(s, q->done, q->total, q->resumed, t0, 1);
  return st;
}

/* After the designs: the crashed ones' error, the workers still running
 * (after an error) reaped, the locks released, the closing note. */
static cov_status finish_designs(sched *q, cov_status st) {
  const cov_explore_options *o = q->o;
  if (q->crashed)
    st = cov_status_join(st, cov_error(COV_INTERNAL, COV_AT_FILE(o->out_dir),
                                       "explore: %d design(s) did not complete (worker failed); "
                                       "run the same command again to retry them",
                                       q->crashed));
  for (int j = 0; q->pids && j < q->jobs; j++) { /* after an error: reap the workers still running */
    int wst;
    while (q->pids[j] > 0 && waitpid(q->pids[j], &wst, 0) < 0 && errno == EINTR) {
    }
    q->pids[j] = 0;
  }
  for (int j = 0; q->fds && j < q->jobs; j++) unlock(&q->fds[j]);
  if (o->on_event) {
    char text[200];
    snprintf(text, sizeof text,
             "%d design(s) evaluated here, %d by another run of this study at the same time, %d "
             "done before",
             q->evaluated, q->shared, q->resumed);
    cov_explore_event ev = {.kind = COV_EXPLORE_NOTE, .text = text};
    o->on_event(o->event_user, &ev);
  }
  return st;
}

static cov_status run_study(const cov_explore_options *o) {
  explore_study *s = NULL;
  COV_RETURN_IF_ERROR(explore_study_open(o, &s));
  cov_status st = prepare_folder(s, o);
  if (st) {
    explore_study_free(s);
    return st;
  }
  sched q = {.s = s, .o = o};
  q.n_shards = o->n_shards > 0 ? o->n_shards : 1;
  int shard = o->n_shards > 0 ? o->shard : 0;
  q.jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (q.jobs < 1) q.jobs = 1;
  q.resumed_here = calloc((size_t)s->n_designs, 1);
  if (!q.resumed_here) {
    explore_study_free(s);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  for (int i = shard; i < s->n_designs; i += q.n_shards) {
    q.total++;
    if (design_done(s, i)) q.done++, q.resumed++, q.resumed_here[i] = 1;
  }
  double t0 = now_s();
  if (q.resumed)
    explore_notify(o->on_event, o->event_user, COV_EXPLORE_NOTE, "resuming, %d of %d designs already done",
                   q.resumed, q.total);
  q.next = shard;
  q.later = calloc((size_t)s->n_designs, sizeof *q.later);
  q.pids = calloc((size_t)q.jobs, sizeof *q.pids);
  q.fds = calloc((size_t)q.jobs, sizeof *q.fds);
  if (!q.later || !q.pids || !q.fds) st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  for (int j = 0; q.fds && j < q.jobs; j++) q.fds[j] = -1;
  st = run_designs(&q, t0, st);
  st = finish_designs(&q, st);
  free(q.later), free(q.pids), free(q.fds), free(q.resumed_here);
  int folder_fd = -1;
  if (!st) st = lock_folder(s, &folder_fd);
  if (!st) st = explore_output_write(o->out_dir, s->key, o->on_event, o->event_user);
  unlock(&folder_fd);
  explore_study_free(s);
  return st;
}

/* The whole study in the "C" locale (common/c_locale.h): numbers in --vary,
 * rows, CSVs and study.txt read and write the same whatever LC_NUMERIC the
 * calling program set; the workers inherit it through fork. */
cov_status cov_explore_run(const cov_explore_options *o) {
  common_c_locale scope;
  common_c_locale_enter(&scope);
  cov_status st = run_study(o);
  common_c_locale_leave(&scope);
  return st;
}

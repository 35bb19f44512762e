/* cli/cmd_map_model.c: `covenant map MODEL.onnx`, the mapper over a whole
 * ONNX model.
 *
 * Each compute layer group of the model (or the one --group / --node
 * names) is described by the frontend (cov_model_group_describe), turned
 * into a mapper layer (cov_layer_from_model_group) and mapped; the chosen
 * schedule's predicted cost is printed per group, with --explain its
 * breakdown and the next best alternatives, with --dump=schedule the
 * scheduled IR. A group the mapper cannot take is listed with the reason:
 * that is information when mapping the whole model (exit 0: such groups run
 * call by call in `covenant run`), but an error when the group was asked for
 * by name or number (exit 1). */
#include <string.h>

#include "backends/registry/backend_registry.h"
#include "cli/cli.h"
#include "cli/cli_map.h"
#include "covenant/mapper.h"
#include "covenant/model.h"

/* The first line of a status, for one-line listings. */
static void first_line(cov_status st, char *buf, size_t n) {
  cov_status_format(st, buf, n);
  char *nl = strchr(buf, '\n');
  if (nl) *nl = '\0';
}

static void print_codelets(const cov_model_group *d, FILE *out) {
  for (size_t c = 0; c < cov_model_group_num_calls(d); c++)
    fprintf(out, "%s%s", c ? ", " : "", cov_model_group_call_at(d, c)->codelet);
}

/* Maps group i; prints its block. Returns the status when it cannot be
 * mapped (the caller decides whether that is an error). */
static cov_status map_group(const cov_model *m, size_t i, const cov_acg *acg,
                            const cli_map_model_opts *o, FILE *out, double *cycles) {
  cov_model_group *d = NULL;
  cov_layer *layer = NULL;
  cov_schedule *s = NULL;
  cov_status st = cov_model_group_describe(m, i, &d);
  if (!st) st = cov_layer_from_model_group(d, &layer);
  if (!st) st = cov_map(layer, acg, &o->map, &s);
  cov_model_group_info info;
  cov_status ist = cov_model_group_get_info(m, i, &info);
  cov_status_free(ist);
  if (st) {
    char why[512];
    first_line(st, why, sizeof why);
    fprintf(out, "group %zu  %s: not mapped: %s\n", i, ist ? "?" : info.kind, why);
  } else {
    fprintf(out, "group %zu  %s  %s  [", i, cov_model_group_name(d), cov_model_group_kind(d));
    print_codelets(d, out);
    fprintf(out, "]\n  %.0f cycles predicted, %s utilisation %.1f%%, DRAM traffic %.0f B, deeper on-chip traffic %.0f B "
                 "(%lld evaluations)\n",
            cov_schedule_cycles(s), cov_schedule_compute_node(s), 100 * cov_schedule_utilization(s),
            cov_schedule_dram_bytes(s), cov_schedule_onchip_bytes(s),
            (long long)cov_schedule_evaluations(s));
    *cycles = cov_schedule_cycles(s);
    if (o->explain) st = cov_schedule_explain(s, out);
    else if (o->dump) st = cov_schedule_dump(s, out);
  }
  cov_schedule_free(s);
  cov_layer_free(layer);
  cov_model_group_free(d);
  return st;
}

int cli_map_model(const char *path, const char *target, const cli_map_model_opts *o,
                  const char *outp) {
  cov_model *m = NULL;
  cov_acg *acg = NULL;
  cov_status st = backend_acg_load(target, &acg);
  if (!st) st = cov_model_load_file(path, NULL, &m);
  long long want = o->group;
  if (!st && o->node) {
    want = cov_model_find_node_group(m, o->node);
    if (want < 0) {
      cov_loc loc = {path, 0, 0, NULL};
      st = cov_error(COV_NOT_FOUND, &loc, "no node named '%s' in the model (see covenant inspect)",
                     o->node);
    }
  }
  if (!st && want >= (long long)cov_model_num_groups(m)) {
    cov_loc loc = {path, 0, 0, NULL};
    st = cov_error(COV_NOT_FOUND, &loc, "no layer group %lld: the model has %zu (0 to %zu)", want,
                   cov_model_num_groups(m), cov_model_num_groups(m) - 1);
  }
  common_out out_file;
  FILE *out = st ? NULL : cli_open_output(outp, &out_file);
  if (st || !out) {
    cov_model_free(m);
    cov_acg_free(acg);
    return st ? cli_report(st) : CLI_EXIT_INPUT;
  }
  int rc = CLI_EXIT_OK;
  if (want >= 0) {
    double cyc = 0;
    fprintf(out, "model %s on %s, group %lld:\n", path, cov_acg_name(acg), want);
    st = map_group(m, (size_t)want, acg, o, out, &cyc);
    if (st) rc = cli_report(cov_status_annotate(st, "%s: ", path));
  } else {
    size_t n = cov_model_num_groups(m), layout = 0, mapped = 0, refused = 0;
    double total = 0;
    for (size_t i = 0; i < n; i++) {
      cov_model_group_info info;
      cov_status ist = cov_model_group_get_info(m, i, &info);
      if (!ist && info.layout) layout++;
      cov_status_free(ist);
    }
    fprintf(out, "model %s on %s: %zu layer groups, %zu compute (%zu layout groups run in the "
                 "frontend)\n",
            path, cov_acg_name(acg), n, n - layout, layout);
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
      cov_model_group_info info;
      cov_status ist = cov_model_group_get_info(m, i, &info);
      bool is_layout = !ist && info.layout;
      cov_status_free(ist);
      if (is_layout) continue;
      double cyc = 0;
      cov_status gs = map_group(m, i, acg, o, out, &cyc);
      /* I/O errors are errors; a group the mapper refuses was listed. */
      if (gs && cov_status_code(gs) == COV_IO_ERROR) rc = cli_report(gs);
      else if (gs) refused++, cov_status_free(gs);
      else mapped++, total += cyc;
    }
    fprintf(out, "total: %.0f cycles predicted over %zu mapped groups; %zu not mapped (they run "
                 "call by call)\n",
            total, mapped, refused);
  }
  if (cli_close_output(&out_file) && rc == CLI_EXIT_OK) rc = CLI_EXIT_INPUT;
  cov_model_free(m);
  cov_acg_free(acg);
  return rc;
}

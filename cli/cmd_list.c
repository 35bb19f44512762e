/* cli/cmd_list.c: `covenant targets` and `covenant layers`: what names the
 * other commands accept for --target and for a suite LAYER. */
#include <stdlib.h>
#include <string.h>

#include "acg/acg_ir.h"
#include "cli/cli.h"
#include "common/search_path.h"
#include "covenant/acg.h"
#include "covenant/mapper.h"

static void targets_help(FILE *out) {
  fprintf(out,
          "usage: covenant targets\n"
          "\n"
          "Lists the targets that --target accepts by name: the ACG files found in\n"
          "$COVENANT_TARGET_PATH, then beside the program (../share/covenant/targets), in\n"
          "the install data dir and in the source tree; each with its backend and the\n"
          "first sentence of its 'about'. 'ref' (the CPU reference interpreter) is a\n"
          "target of 'covenant run' too. Any other ACG file is passed by path.\n");
}

/* The first sentence of an ACG's about, cut to fit one line. */
static void first_sentence(const char *about, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = about ? about : ""; *p && n + 1 < size; p++) {
    if (*p == '.' && (p[1] == ' ' || !p[1])) break;
    out[n++] = *p == '\n' ? ' ' : *p;
  }
  if (n + 1 == size && n > 3) memcpy(out + n - 3, "...", 3);
  out[n] = '\0';
}

int cli_cmd_targets(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    targets_help(stdout);
    return CLI_EXIT_OK;
  }
  if (argc > 1) return cli_usage_error("targets", "takes no arguments (got '%s')", argv[1]);
  common_data_names names;
  common_list_data_names("targets", ".json", "COVENANT_TARGET_PATH", &names);
  int rc = CLI_EXIT_OK, w = 4;
  for (int i = 0; i < names.n; i++) w = (int)strlen(names.name[i]) > w ? (int)strlen(names.name[i]) : w;
  for (int i = 0; i < names.n; i++) {
    cov_acg *acg = NULL;
    cov_status st = cov_acg_load_target(names.name[i], &acg);
    if (st) {
      printf("%-*s  (does not load: %s)\n", w, names.name[i], cov_status_message(st));
      cov_status_free(st);
      rc = CLI_EXIT_INPUT;
      continue;
    }
    char about[100];
    first_sentence(acg->about, about, sizeof about);
    printf("%-*s  %-8s %s\n", w, names.name[i], cov_acg_backend(acg) ? cov_acg_backend(acg) : "-",
           about);
    cov_acg_free(acg);
  }
  printf("%-*s  %-8s %s\n", w, "ref", "cpu", "the CPU reference interpreter (covenant run --target ref)");
  return rc;
}

static void layers_help(FILE *out) {
  fprintf(out,
          "usage: covenant layers [--suite FILE]\n"
          "\n"
          "Lists the layers of the layer suite by name, as 'map', 'compile', 'verify',\n"
          "'gpu' and 'explore --suite' accept them. The suite is $COVENANT_SUITE, else the\n"
          "shipped one (share/covenant/suite/layers.json, or the source tree's\n"
          "bench/suite/layers.json).\n"
          "\n"
          "options:\n"
          "      --suite FILE   another suite file\n"
          "  -h, --help         show this help\n");
}

int cli_cmd_layers(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    layers_help(stdout);
    return CLI_EXIT_OK;
  }
  const char *suite = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--suite")) {
      if (i + 1 == argc) return cli_usage_error("layers", "option '--suite' needs an argument");
      suite = argv[++i];
    } else if (argv[i][0] == '-') {
      static const char *const opts[] = {"suite", "help", NULL};
      return cli_unknown_option("layers", argv[i], opts);
    } else {
      return cli_usage_error("layers", "unexpected argument '%s'", argv[i]);
    }
  }
  char found[4096];
  cov_status st = suite ? NULL : cov_suite_find(found, sizeof found);
  if (st) return cli_report(st);
  if (!suite) suite = found;
  char **names = NULL;
  int n = 0;
  st = cov_suite_layer_names(suite, &names, &n);
  if (st) return cli_report(st);
  printf("%d layers in %s:\n", n, suite);
  for (int i = 0; i < n; i++) {
    printf("  %s\n", names[i]);
    free(names[i]);
  }
  free(names);
  return CLI_EXIT_OK;
}

/* fuzz/onnx_fuzz.c: the ONNX reader, and every pass it runs (inference,
 * constant folding through the kernels and codelets, elimination, BatchNorm
 * folding, fusion, the verifier), must reject or accept any byte string
 * without crashing, leaking, hanging or tripping a sanitizer; an accepted
 * model must also survive both printers and the description of each of its
 * groups (cov_model_group_describe runs the groups' lowering on placeholder
 * inputs; groups moving over a million elements are skipped, memory being
 * the only thing they would test); a model with recurrent nodes is loaded
 * once more with recurrent_cells. External data are refused (no
 * model folder), so the fuzzer never touches the file system. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "covenant/codelet.h"
#include "covenant/model.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parsed once: the fuzzer exercises the model reader, not the .cdl parser
 * (which has its own target). */
static cov_codelet_lib *g_lib;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  cov_status st = cov_codelet_lib_load(NULL, &g_lib);
  if (st) {
    cov_status_print(stderr, st, 1);
    cov_status_free(st);
    abort(); /* a broken checkout, not a finding */
  }
  return 0;
}

/* Both printers and the description of each group of an accepted model. */
static void exercise(const cov_model *m) {
  FILE *sink = fopen("/dev/null", "w");
  if (sink) {
    cov_status_free(cov_model_print_summary(m, sink));
    cov_status_free(cov_model_print_graph(m, sink));
    fclose(sink);
  }
  for (size_t i = 0; i < cov_model_num_groups(m); i++) {
    cov_model_group_info info;
    cov_status gs = cov_model_group_get_info(m, i, &info);
    bool small = !gs && info.in_elems + info.out_elems + info.const_elems < (1 << 20) &&
                 info.macs >= 0 && info.macs < (1 << 24);
    cov_status_free(gs);
    cov_model_group *d = NULL;
    if (small) cov_status_free(cov_model_group_describe(m, i, &d));
    cov_model_group_free(d);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cov_model_options opts = {.codelets = g_lib};
  cov_model *m = NULL;
  cov_status st = cov_model_load_buffer(data, size, "fuzz.onnx", NULL, &opts, &m);
  if (fuzz_rejected(st)) return 0;
  exercise(m);
  /* a model with recurrent nodes again with each step one cell call */
  bool cells = cov_model_unrolls_recurrence(m);
  cov_model_free(m);
  if (!cells) return 0;
  opts.recurrent_cells = 1;
  m = NULL;
  st = cov_model_load_buffer(data, size, "fuzz.onnx", NULL, &opts, &m);
  if (fuzz_rejected(st)) return 0;
  exercise(m);
  cov_model_free(m);
  return 0;
}

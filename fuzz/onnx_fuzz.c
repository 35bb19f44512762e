/* fuzz/onnx_fuzz.c: the ONNX reader, and every pass it runs (inference,
 * constant folding through the kernels and codelets, elimination, BatchNorm
 * folding, fusion, the verifier), must reject or accept any byte string
 * without crashing, leaking, hanging or tripping a sanitizer; an accepted
 * model must also survive both printers. External data are refused (no
 * model folder), so the fuzzer never touches the file system. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cov_model_options opts = {.codelets = g_lib};
  cov_model *m = NULL;
  cov_status st = cov_model_load_buffer(data, size, "fuzz.onnx", NULL, &opts, &m);
  if (fuzz_rejected(st)) return 0;
  FILE *sink = fopen("/dev/null", "w");
  if (sink) {
    cov_status_free(cov_model_print_summary(m, sink));
    cov_status_free(cov_model_print_graph(m, sink));
    fclose(sink);
  }
  cov_model_free(m);
  return 0;
}

/* fuzz/codelet_fuzz.c: the codelet parser and verifier must reject or
 * accept any byte string without crashing, leaking or tripping a sanitizer.
 * An accepted codelet must also round-trip through the printer (its output
 * parses and prints identically, else abort()), and survive the reference
 * interpreter on small generated inputs under a small work limit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cdl_interp.h"
#include "codelets/cdl_ir.h"
#include "covenant/codelet.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print_one(const cov_codelet *c, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  cov_status_free(cov_codelet_print(c, f));
  fclose(f);
  return buf;
}

static void check_roundtrip(const cov_codelet *c) {
  size_t n1 = 0, n2 = 0;
  char *p1 = print_one(c, &n1);
  if (!p1) return;
  cov_codelet_lib *again = NULL;
  cov_status st = cov_codelet_lib_load_buffer(p1, n1, "printed.cdl", &again);
  if (st) {
    fprintf(stderr, "printed codelet does not parse:\n%s\n", p1);
    cov_status_print(stderr, st, 1);
    abort();
  }
  char *p2 = print_one(cov_codelet_lib_at(again, 0), &n2);
  if (!p2 || n1 != n2 || memcmp(p1, p2, n1) != 0) {
    fprintf(stderr, "print(parse(print(c))) != print(c):\n%s\n---\n%s\n", p1, p2 ? p2 : "");
    abort();
  }
  free(p1);
  free(p2);
  cov_codelet_lib_free(again);
}

/* Inputs with every named dim 2 and literal dims as written (when small). */
static void try_run(const cdl_codelet *c) {
  cov_tensor in[CDL_MAX_OPERANDS], out[CDL_MAX_OPERANDS];
  memset(in, 0, sizeof in);
  int ok = 1;
  for (int i = 0; i < c->n_inputs && ok; i++) {
    const cdl_operand *op = &c->operands[i];
    int64_t shape[COV_MAX_RANK];
    for (int ax = 0; ax < op->rank; ax++) {
      const cdl_iexpr *d = op->shape[ax];
      shape[ax] = d->kind == CDL_IE_INT ? d->value : 2;
      if (shape[ax] > 16) ok = 0;
    }
    cov_dtype dt = COV_F32;
    if (op->type.kind == CDL_TY_DTYPE || op->type.kind == CDL_TY_ACC_DTYPE)
      dt = op->type.kind == CDL_TY_DTYPE ? op->type.dtype : cdl_acc_dtype(op->type.dtype);
    else if (op->type.tparam >= 0 && c->tparams[op->type.tparam].tclass == CDL_TC_INT)
      dt = COV_I32;
    if (ok && cov_tensor_alloc(&in[i], dt, op->rank, shape)) ok = 0;
    if (ok && dt == COV_F32) {
      float *v = in[i].data;
      for (int64_t k = 0; k < cov_tensor_numel(&in[i]); k++) v[k] = (float)(k % 7) - 3;
    }
  }
  if (ok)
    cov_status_free(cdl_run(c, NULL, 0, in, (size_t)c->n_inputs, out, (size_t)c->n_outputs, 20000));
  for (int i = 0; i < c->n_inputs; i++) cov_tensor_release(&in[i]);
  if (ok)
    for (int i = 0; i < c->n_outputs; i++) cov_tensor_release(&out[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cov_codelet_lib *lib = NULL;
  cov_status st = cov_codelet_lib_load_buffer((const char *)data, size, "fuzz.cdl", &lib);
  if (fuzz_rejected(st)) return 0;
  for (size_t i = 0; i < cov_codelet_lib_count(lib); i++) {
    check_roundtrip(cov_codelet_lib_at(lib, i));
    try_run(cov_codelet_lib_at(lib, i));
  }
  cov_codelet_lib_free(lib);
  return 0;
}

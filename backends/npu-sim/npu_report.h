/* backends/npu-sim/npu_report.h: the whole-model run's report (npu_report.c),
 * filled by npu_model.c: one row per program run or per call left to the
 * CPU. */
#ifndef NPU_REPORT_H
#define NPU_REPORT_H

#include <stdint.h>

#include "covenant/npu.h"

typedef enum npu_row_kind {
  NPU_ROW_GROUP = 1, /* a whole layer group, one program */
  NPU_ROW_CALL,      /* one call of a group run call by call, one program */
  NPU_ROW_CPU,       /* one call run by the CPU reference interpreter */
} npu_row_kind;

typedef struct npu_row {
  npu_row_kind kind;
  char node[64], codelet[64], where[256];
  int group;
  uint64_t cycles, macs, dram_bytes, onchip_bytes;
  double util_array, util_simd, predicted;
  /* simulated energy (npu_energy.c) and the mapper's estimate of it, pJ;
   * -1 where the ACG gives no energies */
  double energy_pj, energy_est_pj;
  /* The program's output against the reference interpreter
   * (cov_layer_reference) on the same inputs rounded to the dtype the
   * schedule keeps each in (f16, bf16: cov_schedule_input_dtype) where it
   * narrows them: max|npu - ref_r| / max|ref_r|. Only the f32 accumulation
   * order differs, so anything beyond COV_NPU_NARROWED_TOLERANCE is a code
   * generator or simulator bug. narrow_dtypes: bit d set for each dtype d
   * some input was rounded to. */
  bool narrow_checked;
  double narrow_err;
  unsigned narrow_dtypes;
  /* A call the CPU ran: its multiply-accumulates (cov_layer_macs; where no
   * layer forms, its group's, counted once) */
  int64_t cpu_macs;
} npu_row;

cov_status npu_report_create(double clock_mhz, cov_npu_report **out);
cov_status npu_report_add(cov_npu_report *r, const npu_row *row);
/* Adds wall time spent mapping + generating code and simulating (seconds),
 * including layers the NPU path then declined. */
void npu_report_add_time(cov_npu_report *r, double compile_s, double sim_s);
/* The model's multiply-accumulates (its groups' sum; -1 unknown). */
void npu_report_set_model_macs(cov_npu_report *r, int64_t macs);
/* The rows in execution order (bench/npu-sim reads them). */
const npu_row *npu_report_rows(const cov_npu_report *r, int *n);

#endif

/* tests/nvptx/run_probe.c: runs mma_probe's PTX on an NVIDIA GPU through
 * covenant's dlopen'ed driver layer and compares C = A @ B with a CPU loop.
 * Inputs are multiples of 1/8 in [-1, 1], exact in f16, and the products
 * sum exactly in f32, so the comparison is exact. Exits 77 (skipped) when
 * there is no driver or GPU.
 * usage: run_probe PROBE.ptx */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/crt_cuda.h"
#include "common/fileio.h"

/* f16 bits of x, for the values used here (normal or zero, exact). */
static uint16_t half_bits(float x) {
  if (x == 0) return 0;
  uint16_t sign = x < 0 ? 0x8000 : 0;
  int e;
  float m = frexpf(fabsf(x), &e); /* x = m * 2^e, m in [0.5, 1) */
  return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024));
}

static int fail(cov_status st) {
  cov_status_print(stderr, st, 0);
  cov_status_free(st);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PROBE.ptx\n", argv[0]);
    return 2;
  }
  char *ptx;
  size_t n;
  cov_status st = common_read_file(argv[1], 1 << 24, &ptx, &n);
  if (st) return fail(st);
  crt_cuda *cu = NULL;
  st = crt_cuda_open(&cu);
  if (st) {
    printf("SKIPPED: no NVIDIA GPU here: %s\n", cov_status_message(st));
    cov_status_free(st);
    free(ptx);
    return 77;
  }
  printf("device: %s\n", crt_cuda_device_name(cu));
  float a[16 * 16], bm[16 * 8], want[16 * 8], got[16 * 8];
  uint16_t ah[16 * 16], bh[16 * 8];
  for (int i = 0; i < 256; i++) a[i] = (float)((i * 7 + 3) % 17 - 8) / 8, ah[i] = half_bits(a[i]);
  for (int i = 0; i < 128; i++) bm[i] = (float)((i * 5 + 1) % 17 - 8) / 8, bh[i] = half_bits(bm[i]);
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 8; c++) {
      float s = 0;
      for (int k = 0; k < 16; k++) s += a[r * 16 + k] * bm[k * 8 + c];
      want[r * 8 + c] = s;
    }
  crt_devptr da, db, dc;
  crt_cuda_module *mod = NULL;
  if ((st = crt_cuda_alloc(cu, sizeof ah, &da)) || (st = crt_cuda_alloc(cu, sizeof bh, &db)) ||
      (st = crt_cuda_alloc(cu, sizeof got, &dc)) ||
      (st = crt_cuda_upload(cu, da, ah, sizeof ah)) ||
      (st = crt_cuda_upload(cu, db, bh, sizeof bh)) || (st = crt_cuda_load(cu, ptx, &mod)))
    return fail(st);
  void *args[] = {&da, &db, &dc};
  unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  if ((st = crt_cuda_launch(cu, mod, "covenant_mma_probe", grid, block, 0, args, NULL)) ||
      (st = crt_cuda_download(cu, got, dc, sizeof got)))
    return fail(st);
  int bad = 0;
  for (int i = 0; i < 128; i++)
    if (got[i] != want[i]) {
      if (bad++ < 5) fprintf(stderr, "C[%d][%d] = %g, expected %g\n", i / 8, i % 8, got[i], want[i]);
    }
  crt_cuda_unload(cu, mod);
  crt_cuda_free(cu, da);
  crt_cuda_free(cu, db);
  crt_cuda_free(cu, dc);
  crt_cuda_close(cu);
  free(ptx);
  printf("%d passed, %d failed\n", 128 - bad, bad);
  return bad ? 1 : 0;
}

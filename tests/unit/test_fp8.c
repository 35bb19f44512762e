/* tests/unit/test_fp8.c: the FP8 conversions of common/fp8.c as a filter
 * for tests/unit/fp8_numpy.py, which checks them against numpy tables
 * computed from the OCP format definition.
 *
 * `test_fp8 IN OUT`: IN holds little-endian f32 values; OUT receives, for
 * each, its E4M3 and its E5M2 code (two bytes), then the f32 widening of
 * each of the 256 E4M3 codes and each of the 256 E5M2 codes. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "covenant/tensor.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_fp8 IN.f32 OUT\n");
    return 2;
  }
  FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
  if (!in || !out) {
    fprintf(stderr, "test_fp8: cannot open %s or %s\n", argv[1], argv[2]);
    return 2;
  }
  float f;
  while (fread(&f, sizeof f, 1, in) == 1) {
    uint8_t c[2] = {cov_f32_to_e4m3(f), cov_f32_to_e5m2(f)};
    fwrite(c, 1, 2, out);
  }
  for (int fmt = 0; fmt < 2; fmt++)
    for (int c = 0; c < 256; c++) {
      f = fmt ? cov_e5m2_to_f32((uint8_t)c) : cov_e4m3_to_f32((uint8_t)c);
      fwrite(&f, sizeof f, 1, out);
    }
  int bad = ferror(out) != 0;
  bad |= fclose(out) != 0;
  fclose(in);
  return bad;
}

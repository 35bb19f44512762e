/* common/fp8.c: the OCP FP8 formats E4M3 and E5M2, scalar conversions.
 *
 * OCP 8-bit Floating Point Specification (OFP8), revision 1.0: a sign bit,
 * an exponent of 4 (bias 7) or 5 (bias 15) bits and a mantissa of 3 or 2
 * bits, with subnormals. E5M2 follows IEEE 754 (exponent 31: infinities
 * with mantissa 0, NaNs otherwise; largest finite 57344 = 0x7b); E4M3 (the
 * "fn" variant) has no infinities and one NaN per sign, S.1111.111, so the
 * top exponent holds normal values up to 448 = 0x7e.
 *
 * Narrowing from f32 rounds to nearest, ties to even, on bit patterns (the
 * host's rounding mode plays no part), in the specification's saturation
 * mode, as accelerators convert (NVIDIA's cvt.rn.satfinite): a value whose
 * rounding exceeds the largest finite magnitude, an infinity included,
 * gives the largest finite value of its sign; NaN gives 0x7f with the
 * input's sign, a NaN in both formats. Every code widens exactly. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "covenant/tensor.h"

typedef struct fp8_format {
  int man_bits, bias;
  uint8_t max_code; /* the largest finite magnitude's code */
} fp8_format;

static const fp8_format k_e4m3 = {3, 7, 0x7e};
static const fp8_format k_e5m2 = {2, 15, 0x7b};

/* Rounds the magnitude shifted right by `shift` bits to nearest, ties to
 * the even result. */
static uint32_t round_shift(uint32_t m, uint32_t shift) {
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return q + (rem > half || (rem == half && (q & 1u)));
}

static uint8_t narrow(const fp8_format *F, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint8_t)(sign | 0x7fu); /* NaN */
  uint32_t exp = a >> 23, man = a & 0x7fffffu;
  if (exp == 0) return sign; /* zero or an f32 subnormal: below half the least FP8 subnormal */
  int32_t e = (int32_t)exp - 127 + F->bias; /* the FP8 biased exponent */
  uint32_t drop = (uint32_t)(23 - F->man_bits), q;
  if (e >= 1) {
    /* normal: exponent and mantissa in one field, so a rounding carry moves
     * to the next binade (and past the largest code into saturation) */
    q = round_shift(((uint32_t)e << 23) | man, drop);
  } else {
    /* subnormal: the mantissa with its implicit 1, shifted by 1 - e more */
    uint32_t shift = drop + (uint32_t)(1 - e);
    if (shift > 24) return sign; /* below half the least subnormal */
    q = round_shift(man | 0x800000u, shift);
  }
  return (uint8_t)(sign | (q > F->max_code ? F->max_code : q));
}

static float widen(const fp8_format *F, uint8_t c, int nan_exp_only) {
  int sign = c & 0x80;
  uint32_t mag = c & 0x7fu, e = mag >> F->man_bits, m = mag & ((1u << F->man_bits) - 1);
  uint32_t top = (1u << (7 - F->man_bits)) - 1;
  if (nan_exp_only ? mag == 0x7fu : e == top) {
    if (!nan_exp_only && m == 0) return sign ? -INFINITY : INFINITY;
    return sign ? -NAN : NAN;
  }
  /* exact: at most 4 significant bits, exponents well inside f32's range */
  float v = e ? ldexpf((float)((1u << F->man_bits) | m), (int)e - F->bias - F->man_bits)
              : ldexpf((float)m, 1 - F->bias - F->man_bits);
  return sign ? -v : v;
}

float cov_e4m3_to_f32(uint8_t c) { return widen(&k_e4m3, c, 1); }
uint8_t cov_f32_to_e4m3(float f) { return narrow(&k_e4m3, f); }
float cov_e5m2_to_f32(uint8_t c) { return widen(&k_e5m2, c, 0); }
uint8_t cov_f32_to_e5m2(float f) { return narrow(&k_e5m2, f); }

/* common/half.c: f16 (IEEE binary16) and bf16 scalar conversions.
 *
 * Bit-exact with numpy's astype (round to nearest, ties to even; NaN stays
 * NaN, with its sign; overflow rounds to infinity). Done on bit patterns so
 * the result does not depend on the host's FPU rounding mode. */
#include <stdint.h>
#include <string.h>

#include "covenant/tensor.h"

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float cov_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
  if (exp != 0) return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0) return bits_f32(sign); /* signed zero */
  /* Subnormal: normalise the mantissa into an f32 exponent. */
  int e = -1;
  do {
    e++;
    man <<= 1;
  } while ((man & 0x400u) == 0);
  return bits_f32(sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13));
}

uint16_t cov_f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t exp = (u >> 23) & 0xffu;
  uint32_t man = u & 0x7fffffu;
  if (exp == 0xff) /* inf stays inf; NaN keeps its top payload bits and stays quiet */
    return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u); /* overflow */
  if (e <= 0) {
    /* Subnormal or zero in f16: shift the full mantissa (with its implicit 1)
     * right and round to nearest even on the bits shifted out. */
    if (e < -10) return sign; /* below half the smallest subnormal */
    uint32_t m = man | 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (uint16_t)(sign | half); /* a carry into bit 10 gives the smallest normal */
  }
  uint32_t h = ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into inf: correct */
  return (uint16_t)(sign | h);
}

float cov_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t cov_f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return (uint16_t)(u >> 16);
}

float cov_f32_round_to(cov_dtype dt, float f) {
  switch (dt) {
    case COV_F16: return cov_f16_to_f32(cov_f32_to_f16(f));
    case COV_BF16: return cov_bf16_to_f32(cov_f32_to_bf16(f));
    case COV_E4M3: return cov_e4m3_to_f32(cov_f32_to_e4m3(f));
    case COV_E5M2: return cov_e5m2_to_f32(cov_f32_to_e5m2(f));
    default: return f;
  }
}

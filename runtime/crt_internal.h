/* runtime/crt_internal.h: what the runtime's files share. */
#ifndef CRT_INTERNAL_H
#define CRT_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

uint64_t crt_rd64(const uint8_t *p);
uint32_t crt_rd32(const uint8_t *p);

#endif

/* runtime/crt_internal.h: what the runtime's files share. */
#ifndef CRT_INTERNAL_H
#define CRT_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

uint64_t crt_rd64(const uint8_t *p);
uint32_t crt_rd32(const uint8_t *p);

/* devices/crt_device.c: the devices artifacts run on, one per backend name. */
typedef enum crt_device { CRT_DEV_NONE = -1, CRT_DEV_CUDA, CRT_DEV_HIP, CRT_DEV_NPU, CRT_DEV_COUNT } crt_device;
/* The device an artifact's backend field names; CRT_DEV_NONE if none. */
crt_device crt_device_of(const char *backend);
/* Its backend name ("?" for none), for messages. */
const char *crt_device_backend(crt_device d);
/* The format of its code objects ("ptx", "hsaco"); NULL where it runs none. */
const char *crt_device_code_format(crt_device d);
/* Every backend name, comma-separated, for messages. */
const char *crt_device_backends(void);

#endif

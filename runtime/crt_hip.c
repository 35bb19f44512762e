/* runtime/crt_hip.c: the HIP module API through dlopen. */
#include "runtime/crt_hip.h"
#include "common/loc.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The runtime's C ABI: handles are pointers, results are ints (hipError_t). */
typedef int hip_result;
typedef void *hip_module, *hip_function, *hip_event, *hip_stream;

struct crt_hip {
  void *lib;
  char name[160];
  hip_result (*Init)(unsigned);
  hip_result (*GetDeviceCount)(int *);
  hip_result (*SetDevice)(int);
  hip_result (*DeviceGetName)(char *, int, int);
  const char *(*GetErrorString)(hip_result);
  hip_result (*Malloc)(void **, size_t);
  hip_result (*Free)(void *);
  hip_result (*MemcpyHtoD)(void *, const void *, size_t);
  hip_result (*MemcpyDtoH)(void *, const void *, size_t);
  hip_result (*ModuleLoadData)(hip_module *, const void *);
  hip_result (*ModuleUnload)(hip_module);
  hip_result (*ModuleGetFunction)(hip_function *, hip_module, const char *);
  hip_result (*ModuleLaunchKernel)(hip_function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, hip_stream, void **, void **);
  hip_result (*DeviceSynchronize)(void);
  hip_result (*EventCreate)(hip_event *);
  hip_result (*EventRecord)(hip_event, hip_stream);
  hip_result (*EventSynchronize)(hip_event);
  hip_result (*EventElapsedTime)(float *, hip_event, hip_event);
  hip_result (*EventDestroy)(hip_event);
};

struct crt_hip_module {
  hip_module mod;
};

static cov_status hip_fail(const crt_hip *h, hip_result rc, const char *what) {
  const char *msg = h && h->GetErrorString ? h->GetErrorString(rc) : NULL;
  return cov_error(COV_DEVICE_ERROR, NULL, "HIP %s failed: %s (error %d)", what, msg ? msg : "unknown error", rc);
}

#define HIP_CHECK(h, call, what)                      \
  do {                                                \
    hip_result rc_ = (call);                          \
    if (rc_ != 0) return hip_fail((h), rc_, (what));  \
  } while (0)

cov_status crt_hip_open(crt_hip **out) {
  *out = NULL;
  /* the unversioned name comes with -dev packages; runtimes ship .so.5/.so.6 */
  static const char *names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  void *lib = NULL;
  char why[256] = "";
  for (size_t i = 0; i < sizeof names / sizeof *names && !lib; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib && !why[0]) snprintf(why, sizeof why, "%s", dlerror());
  }
  if (!lib)
    return cov_error(COV_DEVICE_ERROR, COV_AT_FILE("libamdhip64.so"), "no HIP runtime: cannot load libamdhip64 (%s)", why);
  crt_hip *h = calloc(1, sizeof *h);
  if (!h) {
    dlclose(lib);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  h->lib = lib;
  static const struct {
    size_t offset;
    const char *name;
  } syms[] = {
#define SYM(field, name) {offsetof(crt_hip, field), name}
      SYM(Init, "hipInit"), SYM(GetDeviceCount, "hipGetDeviceCount"), SYM(SetDevice, "hipSetDevice"),
      SYM(DeviceGetName, "hipDeviceGetName"), SYM(GetErrorString, "hipGetErrorString"),
      SYM(Malloc, "hipMalloc"), SYM(Free, "hipFree"), SYM(MemcpyHtoD, "hipMemcpyHtoD"),
      SYM(MemcpyDtoH, "hipMemcpyDtoH"), SYM(ModuleLoadData, "hipModuleLoadData"),
      SYM(ModuleUnload, "hipModuleUnload"), SYM(ModuleGetFunction, "hipModuleGetFunction"),
      SYM(ModuleLaunchKernel, "hipModuleLaunchKernel"), SYM(DeviceSynchronize, "hipDeviceSynchronize"),
      SYM(EventCreate, "hipEventCreate"), SYM(EventRecord, "hipEventRecord"),
      SYM(EventSynchronize, "hipEventSynchronize"), SYM(EventElapsedTime, "hipEventElapsedTime"),
      SYM(EventDestroy, "hipEventDestroy"),
#undef SYM
  };
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    void *f = dlsym(lib, syms[i].name);
    if (!f) {
      cov_status st = cov_error(COV_DEVICE_ERROR, COV_AT_FILE("libamdhip64.so"), "libamdhip64 lacks %s", syms[i].name);
      crt_hip_close(h);
      return st;
    }
    memcpy((char *)h + syms[i].offset, &f, sizeof f);
  }
  int count = 0;
  hip_result rc = h->Init(0);
  if (rc == 0) rc = h->GetDeviceCount(&count);
  if (rc == 0 && count == 0) rc = 100; /* hipErrorNoDevice */
  if (rc == 0) rc = h->SetDevice(0);
  if (rc != 0) {
    cov_status st = hip_fail(h, rc, "initialisation (is there an AMD GPU?)");
    crt_hip_close(h);
    return st;
  }
  char name[128] = "?";
  h->DeviceGetName(name, sizeof name, 0);
  snprintf(h->name, sizeof h->name, "%s", name);
  *out = h;
  return NULL;
}

void crt_hip_close(crt_hip *h) {
  if (!h) return;
  if (h->lib) dlclose(h->lib);
  free(h);
}

const char *crt_hip_device_name(const crt_hip *h) { return h ? h->name : "?"; }

cov_status crt_hip_alloc(crt_hip *h, size_t bytes, void **out) {
  HIP_CHECK(h, h->Malloc(out, bytes ? bytes : 1), "memory allocation");
  return NULL;
}
void crt_hip_free(crt_hip *h, void *p) {
  if (p) h->Free(p);
}
cov_status crt_hip_upload(crt_hip *h, void *dst, const void *src, size_t bytes) {
  HIP_CHECK(h, h->MemcpyHtoD(dst, src, bytes), "copy to device");
  return NULL;
}
cov_status crt_hip_download(crt_hip *h, void *dst, const void *src, size_t bytes) {
  HIP_CHECK(h, h->MemcpyDtoH(dst, src, bytes), "copy from device");
  return NULL;
}

cov_status crt_hip_load(crt_hip *h, const void *hsaco, crt_hip_module **out) {
  *out = NULL;
  hip_module mod = NULL;
  HIP_CHECK(h, h->ModuleLoadData(&mod, hsaco), "code object load");
  crt_hip_module *m = calloc(1, sizeof *m);
  if (!m) {
    h->ModuleUnload(mod);
    return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  }
  m->mod = mod;
  *out = m;
  return NULL;
}

void crt_hip_unload(crt_hip *h, crt_hip_module *m) {
  if (!m) return;
  h->ModuleUnload(m->mod);
  free(m);
}

cov_status crt_hip_launch(crt_hip *h, crt_hip_module *m, const char *kernel, const unsigned grid[3],
                             const unsigned block[3], unsigned shared_bytes, void **args, float *out_ms) {
  hip_function fn;
  HIP_CHECK(h, h->ModuleGetFunction(&fn, m->mod, kernel), "kernel lookup");
  hip_event start = NULL, stop = NULL;
  if (out_ms) {
    HIP_CHECK(h, h->EventCreate(&start), "event creation");
    HIP_CHECK(h, h->EventCreate(&stop), "event creation");
    HIP_CHECK(h, h->EventRecord(start, NULL), "event record");
  }
  hip_result rc = h->ModuleLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                                        NULL, args, NULL);
  if (rc == 0 && out_ms) {
    rc = h->EventRecord(stop, NULL);
    if (rc == 0) rc = h->EventSynchronize(stop);
    if (rc == 0) rc = h->EventElapsedTime(out_ms, start, stop);
  }
  if (rc == 0) rc = h->DeviceSynchronize();
  if (start) h->EventDestroy(start);
  if (stop) h->EventDestroy(stop);
  if (rc != 0) return hip_fail(h, rc, "kernel launch");
  return NULL;
}

/* inside backends/: a backend may know itself */
#include "backends/vendor/vendor.h"
static int gpu_row(const char *b) { return !strcmp(b, "nvptx"); }

/* mid/mid.c: an internal header of base */
#include "mid/mid.h"
#include "base/base_internal.h"

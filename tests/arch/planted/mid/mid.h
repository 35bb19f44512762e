/* mid/mid.h: exported, includes its dependency's exported header */
#include "base/base.h"

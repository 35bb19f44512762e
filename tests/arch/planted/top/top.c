/* top/top.c: base is not a direct dependency of top */
#include <stdio.h>
#include "covenant/status.h"
#include "mid/mid.h"
#include "base/base.h"
#include "../mid/mid.h"

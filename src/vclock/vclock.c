#include "nvlemu/vclock.h"

#include <math.h>

int64_t nvl_ps_from_s(double seconds)
{
    if (!(seconds > 0))
        return 0;
    return (int64_t)llround(seconds * (double)NVL_PS_PER_S);
}

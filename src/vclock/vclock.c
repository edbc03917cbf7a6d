#include "nvlemu/vclock.h"

#include <math.h>

int64_t nvl_ps_from_s(double seconds)
{
    if (!(seconds > 0))
        return 0;
    double ps = seconds * (double)NVL_PS_PER_S;
    if (!(ps < (double)NVL_PS_MAX_DURATION))
        return NVL_PS_MAX_DURATION;
    return (int64_t)llround(ps);
}

/* Rotary position embedding frequencies: plain RoPE, and YaRN's blend of
 * interpolated and extrapolated frequencies (Peng et al., "YaRN: Efficient
 * Context Window Extension of Large Language Models", arXiv 2309.00071),
 * with the defaults transformers 5.17 uses for rope_type "yarn"
 * (transformers/modeling_rope_utils.py, _compute_yarn_parameters):
 *
 *   f_i    = theta^(-2i/d)                       plain, pair i of d/2
 *   dim(r) = d ln(P / (2 pi r)) / (2 ln theta)   P pretrained positions
 *   lo     = max(0, floor(dim(32))), hi = min(d - 1, ceil(dim(1)))
 *   ramp_i = clamp((i - lo) / (hi - lo), 0, 1)   (hi += 0.001 when equal)
 *   f'_i   = f_i / F x ramp_i + f_i x (1 - ramp_i)
 *   cos, sin scaled by 0.1 ln F + 1              (F > 1)
 *
 * so high-frequency pairs keep their rotation and low-frequency ones are
 * stretched F times. */
#include "nvlemu/model.h"

#include <math.h>

#define NVL_PI 3.14159265358979323846

double nvl_model_rope_inv_freq(const nvl_model_config_t *cfg, uint32_t i,
                               uint32_t d)
{
    double theta = cfg->rope_theta;
    double f = 1.0 / pow(theta, (double)(2 * i) / (double)d);
    double F = cfg->rope_yarn_factor;
    if (F <= 0)
        return f;
    double P = cfg->rope_original_positions;
    double lo = floor(d * log(P / (32 * 2 * NVL_PI)) / (2 * log(theta)));
    double hi = ceil(d * log(P / (1 * 2 * NVL_PI)) / (2 * log(theta)));
    lo = fmax(lo, 0);
    hi = fmin(hi, d - 1);
    if (lo == hi)
        hi += 0.001;
    double ramp = fmin(fmax((i - lo) / (hi - lo), 0), 1);
    return f / F * ramp + f * (1 - ramp);
}

double nvl_model_rope_scale(const nvl_model_config_t *cfg)
{
    double F = cfg->rope_yarn_factor;
    return F > 1 ? 0.1 * log(F) + 1.0 : 1.0;
}

/* Rotary position embedding frequencies: plain RoPE, YaRN's blend of
 * interpolated and extrapolated frequencies (Peng et al., "YaRN: Efficient
 * Context Window Extension of Large Language Models", arXiv 2309.00071),
 * with the defaults transformers 5.17 uses for rope_type "yarn"
 * (transformers/modeling_rope_utils.py, _compute_yarn_parameters):
 *
 *   f_i    = theta^(-2i/d)                       plain, pair i of d/2
 *   dim(r) = d ln(P / (2 pi r)) / (2 ln theta)   P pretrained positions
 *   lo     = max(0, floor(dim(b_f))), hi = min(d - 1, ceil(dim(b_s)))
 *            (beta_fast b_f 32, beta_slow b_s 1 unless the config says;
 *            without the floor and ceil where rope_scaling's truncate is
 *            false, as gpt-oss's config.json says: transformers'
 *            _compute_yarn_parameters, find_correction_range)
 *   ramp_i = clamp((i - lo) / (hi - lo), 0, 1)   (hi += 0.001 when equal)
 *   f'_i   = f_i / F x ramp_i + f_i x (1 - ramp_i)
 *   cos, sin scaled by 0.1 ln F + 1              (F > 1)
 *
 * so high-frequency pairs keep their rotation and low-frequency ones are
 * stretched F times.
 *
 * Llama 3.1's scaling, rope_type "llama3" (Meta's llama-models
 * apply_scaling; transformers' _compute_llama3_parameters), by wavelength
 * w_i = 2 pi / f_i against the pretrained context P, factor F, and
 * low / high frequency factors l < h:
 *
 *   w_i < P / h          f'_i = f_i                 (high frequencies kept)
 *   w_i > P / l          f'_i = f_i / F             (low ones stretched F x)
 *   otherwise            s    = (P / w_i - l) / (h - l)
 *                        f'_i = (1 - s) f_i / F + s f_i
 *   cos, sin unscaled
 *
 * transformers evaluates both in float32 tensors and nvlemu in double
 * rounded to float32 once: the frequencies agree to an ulp or so. */
#include "nvlemu/model.h"

#include <math.h>

#define NVL_PI 3.14159265358979323846

static double yarn_inv_freq(const nvl_model_config_t *cfg, double f,
                            uint32_t i, uint32_t d)
{
    double theta = cfg->rope_theta, F = cfg->rope_yarn_factor;
    double P = cfg->rope_original_positions;
    double bf = cfg->rope_yarn_beta_fast > 0 ? cfg->rope_yarn_beta_fast : 32;
    double bs = cfg->rope_yarn_beta_slow > 0 ? cfg->rope_yarn_beta_slow : 1;
    double lo = d * log(P / (bf * 2 * NVL_PI)) / (2 * log(theta));
    double hi = d * log(P / (bs * 2 * NVL_PI)) / (2 * log(theta));
    if (!cfg->rope_yarn_no_truncate) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    lo = fmax(lo, 0);
    hi = fmin(hi, d - 1);
    if (lo == hi)
        hi += 0.001;
    double ramp = fmin(fmax((i - lo) / (hi - lo), 0), 1);
    return f / F * ramp + f * (1 - ramp);
}

static double llama3_inv_freq(const nvl_model_config_t *cfg, double f)
{
    double F = cfg->rope_llama3_factor, P = cfg->rope_original_positions;
    double l = cfg->rope_low_freq_factor, h = cfg->rope_high_freq_factor;
    double w = 2 * NVL_PI / f;
    if (w < P / h)
        return f;
    if (w > P / l)
        return f / F;
    double s = (P / w - l) / (h - l);
    return (1 - s) * f / F + s * f;
}

double nvl_model_rope_inv_freq(const nvl_model_config_t *cfg, uint32_t i,
                               uint32_t d)
{
    double f = 1.0 / pow(cfg->rope_theta, (double)(2 * i) / (double)d);
    if (cfg->rope_llama3_factor > 0)
        return llama3_inv_freq(cfg, f);
    if (cfg->rope_yarn_factor > 0)
        return yarn_inv_freq(cfg, f, i, d);
    return f;
}

double nvl_model_rope_scale(const nvl_model_config_t *cfg)
{
    double F = cfg->rope_yarn_factor;
    return F > 1 ? 0.1 * log(F) + 1.0 : 1.0;
}

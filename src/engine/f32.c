/* Float32 arithmetic of data mode: matrix products, RMSNorm, RoPE,
 * greedy sampling. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

/* sum_i x[i] w[i] in float32, in 8 interleaved partial sums (the order
 * the compiler may vectorize without reassociating), added pairwise. */
static float dot(const float *x, const float *w, uint64_t n)
{
    float acc[8] = {0};
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += x[i + j] * w[i + j];
    for (int j = 0; i < n; i++, j++)
        acc[j] += x[i] * w[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
           ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* y[t, o] = sum_i x[t, i] w[o, i] (+ b[o]) for t < T, o < O, i < I; each
 * weight row is read once for four tokens at a time. */
void nvl_engine_linear(const float *x, const float *w, const float *b,
                       float *y,                   uint64_t T, uint64_t O, uint64_t I)
{
    for (uint64_t t0 = 0; t0 < T; t0 += 4) {
        uint64_t nt = T - t0 < 4 ? T - t0 : 4;
        for (uint64_t o = 0; o < O; o++)
            for (uint64_t t = t0; t < t0 + nt; t++)
                y[t * O + o] =
                    dot(x + t * I, w + o * I, I) + (b ? b[o] : 0.0f);
    }
}

void nvl_engine_rmsnorm(const float *x, const float *w, float *y, uint64_t T,
                    uint64_t D, double eps)
{
    for (uint64_t t = 0; t < T; t++) {
        double ss = 0;
        for (uint64_t i = 0; i < D; i++)
            ss += (double)x[t * D + i] * x[t * D + i];
        float r = (float)(1.0 / sqrt(ss / D + eps));
        for (uint64_t i = 0; i < D; i++)
            y[t * D + i] = w[i] * (x[t * D + i] * r);
    }
}

/* rotate_half RoPE on one head vector at position pos (cos and sin in
 * float32, as transformers computes them) */
void nvl_engine_rope(float *v, uint64_t d, uint64_t pos,
                     const nvl_model_config_t *cfg)
{
    uint64_t half = d / 2;
    float scale = (float)nvl_model_rope_scale(cfg);
    for (uint64_t i = 0; i < half; i++) {
        float inv = (float)nvl_model_rope_inv_freq(cfg, (uint32_t)i,
                                                   (uint32_t)d);
        float ang = (float)pos * inv;
        float cs = cosf(ang) * scale, sn = sinf(ang) * scale;
        float a = v[i], b = v[i + half];
        v[i] = a * cs - b * sn;
        v[i + half] = b * cs + a * sn;
    }
}

int32_t nvl_engine_argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return (int32_t)best;
}

/* Unit tests of activation quantization and the FP8 KV cache (src/quant/
 * act.c) against values worked out by hand from the kernels' formulas
 * (docs/quantization.md, "Activations"): NVFP4 per 16 with the global
 * scale 1 / input_scale (block edges, E2M1 ties, the E4M3 block scale's
 * rounding and saturation, zero blocks, a short last block), FP8 with a
 * static per-tensor scale (ties, saturation at 448), FP8 per 1 x 128 group
 * (group edges, the 1e-10 floor), the KV cache's scale rule, and each
 * format's default scheme. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/quant.h"

static void nvfp4_blocks(void **state)
{
    (void)state;
    /* block 0: amax 6 -> block scale E4M3(1 x 6 / 6) = 1, elements as
     * they round on E2M1: ties 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 ->
     * 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4 (to the even code) */
    float x[40] = {6, 3, 1.5f, 0.75f, 0.25f, 5, 3.5f, 2.5f, 1.75f, 1.25f,
                   -6, -0.75f, 0.2f, 0.3f, 4.9f, 5.1f};
    float want0[16] = {6, 3, 1.5f, 1, 0, 4, 4, 2, 2, 1, -6, -1, 0, 0.5f, 4, 6};
    /* block 1 (columns 16..31): the same values / 64: its own scale 1/64,
     * exact in E4M3, the same codes */
    for (int i = 0; i < 16; i++)
        x[16 + i] = x[i] / 64.0f;
    /* columns 32..39: a short last block, all zero: scale 0, zeros */
    float out[40];
    nvl_act_quant_nvfp4(x, 40, 1.0f, out);
    for (int i = 0; i < 16; i++) {
        assert_true(out[i] == want0[i]);
        assert_true(out[16 + i] == want0[i] / 64.0f);
    }
    for (int i = 32; i < 40; i++)
        assert_true(out[i] == 0.0f);
}

static void nvfp4_scale_rule(void **state)
{
    (void)state;
    float x[16] = {6.6f, -3.3f}, out[16];
    /* amax 6.6: SFValue = 1.1 rounds to E4M3 1.125; 6.6 / 1.125 = 5.87
     * -> 6, -3.3 / 1.125 = -2.93 -> -3; out = code x 1.125 */
    nvl_act_quant_nvfp4(x, 16, 1.0f, out);
    assert_true(out[0] == 6.75f);
    assert_true(out[1] == -3.375f);
    /* input_scale 2 (global scale 0.5): block scale E4M3(0.5) = 0.5, the
     * GEMM multiplies back by 2: the same values as with 1 */
    float y[16] = {6, 3, 1.5f}, o2[16];
    nvl_act_quant_nvfp4(y, 16, 2.0f, o2);
    assert_true(o2[0] == 6.0f && o2[1] == 3.0f && o2[2] == 1.5f);
    /* input_scale 0.001 (global 1000): SFValue 1000 saturates at 448;
     * 6 x (1 / (448 x 0.001)) = 13.4 saturates at E2M1's 6: out 6 x 448 x
     * 0.001, as the kernel's __NV_SATFINITE casts give */
    nvl_act_quant_nvfp4(y, 16, 0.001f, o2);
    assert_true(o2[0] == 6.0f * 448.0f * 0.001f);
    /* a block far above: amax 6000 at input_scale 1 saturates the scale
     * too: 6000 / 448 = 13.4 -> 6, out 6 x 448 = 2688 */
    float z[16] = {6000.0f}, o3[16];
    nvl_act_quant_nvfp4(z, 16, 1.0f, o3);
    assert_true(o3[0] == 2688.0f);
}

static void fp8_tensor(void **state)
{
    (void)state;
    /* scale 1: 1.0625 is the midpoint of 1 and 1.125 -> 1 (even
     * mantissa), 1.1875 of 1.125 and 1.25 -> 1.25; 500 saturates at 448
     * (torch's cast would give NaN from 480 on); scale 0.5: 1 -> code 2
     * -> 1, 300 -> 600 -> 448 -> 224 */
    float x[4] = {1.0625f, 1.1875f, 500.0f, -500.0f}, out[4];
    nvl_act_quant_fp8_tensor(x, 4, 1.0f, out);
    assert_true(out[0] == 1.0f && out[1] == 1.25f);
    assert_true(out[2] == 448.0f && out[3] == -448.0f);
    float y[2] = {1.0f, 300.0f};
    nvl_act_quant_fp8_tensor(y, 2, 0.5f, out);
    assert_true(out[0] == 1.0f && out[1] == 224.0f);
}

static void fp8_groups(void **state)
{
    (void)state;
    float x[300] = {0}, out[300];
    /* group 0 (0..127): amax 448 -> scale 1: codes as they are; 100.5
     * lies between the codes 96 and 104 (a step of 8 there), nearer 104 */
    x[0] = 448.0f;
    x[1] = 100.5f;
    x[2] = -3.0f;
    /* group 1 (128..255): amax 0.5 -> scale 0.5 / 448; 0.25 -> 224 codes
     * x scale = 0.25 exactly */
    x[128] = 0.5f;
    x[129] = 0.25f;
    /* group 2 (256..299, short): all zero -> amax floored at 1e-10 */
    nvl_act_quant_fp8_group(x, 300, 128, out);
    assert_true(out[0] == 448.0f);
    assert_true(out[1] == 104.0f);
    assert_true(out[2] == -3.0f);
    float s = 0.5f / 448.0f;
    assert_true(out[128] == nvl_e4m3_round_sat(0.5f / s) * s);
    assert_true(out[129] == nvl_e4m3_round_sat(0.25f / s) * s);
    assert_true(fabsf(out[129] - 0.25f) < 1e-6f);
    for (int i = 256; i < 300; i++)
        assert_true(out[i] == 0.0f);
    /* a group boundary: element 127 belongs to group 0, 128 to group 1 */
    float y[256] = {0};
    y[127] = 1.0f;
    y[128] = 1000.0f;
    nvl_act_quant_fp8_group(y, 256, 128, out);
    assert_true(out[127] == 1.0f);
    assert_true(out[128] == 1000.0f);
}

static void kv_cache_rule(void **state)
{
    (void)state;
    /* scale 1.0 (vLLM's without calibrated k_scale / v_scale): E4M3 with
     * saturation; 0.001 rounds to the smallest subnormal 2^-9 */
    float x[3] = {500.0f, 0.001f, 1.0625f}, out[3];
    nvl_kv_quant_fp8(x, 3, 1.0f, out);
    assert_true(out[0] == 448.0f);
    assert_true(out[1] == ldexpf(1.0f, -9));
    assert_true(out[2] == 1.0f);
    /* a calibrated scale 2: 500 / 2 = 250 -> 256 (the grid 240, 256) x 2 */
    nvl_kv_quant_fp8(x, 1, 2.0f, out);
    assert_true(out[0] == 512.0f);
}

static void default_schemes(void **state)
{
    (void)state;
    nvl_quant_config_t q = {.quantized = true, .format = NVL_QUANT_NVFP4};
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_NVFP4);
    q.format = NVL_QUANT_FP8;
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_FP8_TENSOR);
    q.act_dynamic = true;
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_FP8_TOKEN);
    q.format = NVL_QUANT_FP8_BLOCK;
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_FP8_GROUP);
    q.format = NVL_QUANT_MXFP4;
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_NONE);
    q.quantized = false;
    q.format = NVL_QUANT_NVFP4;
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_NONE);
}

static void fp8_token(void **state)
{
    (void)state;
    /* one scale for the row: amax 896 -> s = 2; 3 / 2 = 1.5 exact, 7 / 2 =
     * 3.5 exact; 0.3 / 2 = 0.15 rounds to E4M3 (0.15625 = 5 x 2^-5) */
    float x[4] = {896.0f, 3.0f, -7.0f, 0.3f}, out[4];
    nvl_act_quant_fp8_token(x, 4, out);
    assert_true(out[0] == 896.0f);
    assert_true(out[1] == 3.0f);
    assert_true(out[2] == -7.0f);
    assert_true(out[3] == 0.3125f);
    /* a zero row takes the floor 1 / (448 * 512) and stays zero; a tiny
     * one is scaled by the floor, not by its own amax */
    float z[2] = {0.0f, 0.0f};
    nvl_act_quant_fp8_token(z, 2, out);
    assert_true(out[0] == 0.0f && out[1] == 0.0f);
    float floor_s = 1.0f / (448.0f * 512.0f);
    float t[1] = {1e-7f};
    nvl_act_quant_fp8_token(t, 1, out);
    assert_true(out[0] == nvl_e4m3_round_sat(1e-7f / floor_s) * floor_s);
    assert_true(out[0] != 1e-7f);
}

static void int8_token(void **state)
{
    (void)state;
    /* vLLM's dynamic_scaled_int8_quant: amax 254 -> scale 2, x x 127 / 254
     * = x / 2 rounded to nearest even (3 -> 1.5 -> 2, 5 -> 2.5 -> 2, 1 ->
     * 0.5 -> 0), read back x 2 */
    float x[5] = {254.0f, 3.0f, 5.0f, -254.0f, 1.0f}, out[5];
    nvl_act_quant_int8_token(x, 5, out);
    assert_true(out[0] == 254.0f && out[1] == 4.0f && out[2] == 4.0f);
    assert_true(out[3] == -254.0f && out[4] == 0.0f);
    /* a zero row stays zero (no NaN from 0 x 127 / 0) */
    float z[2] = {0.0f, -0.0f};
    nvl_act_quant_int8_token(z, 2, out);
    assert_true(out[0] == 0.0f && out[1] == 0.0f);
    /* compressed-tensors int8 W8A8 runs it; W8A16 and int4 (W4A16) none */
    nvl_quant_config_t q = {.quantized = true, .format = NVL_QUANT_INT8};
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_INT8_TOKEN);
    q.weight_only = true;
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_NONE);
    q = (nvl_quant_config_t){.quantized = true, .format = NVL_QUANT_INT4};
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_NONE);
}

static void calibrated_scales(void **state)
{
    (void)state;
    /* ModelOpt's export: NVFP4 amax / 2688, FP8 amax / 448, none for the
     * dynamic formats; KV max(amax / 448, 1) */
    assert_true(nvl_quant_input_scale(NVL_QUANT_NVFP4, 2688.0f) == 1.0f);
    assert_true(nvl_quant_input_scale(NVL_QUANT_NVFP4, 26.88f) ==
                26.88f / 2688.0f);
    assert_true(nvl_quant_input_scale(NVL_QUANT_FP8, 896.0f) == 2.0f);
    assert_true(nvl_quant_input_scale(NVL_QUANT_FP8_BLOCK, 5.0f) == 0.0f);
    assert_true(nvl_quant_input_scale(NVL_QUANT_MXFP4, 5.0f) == 0.0f);
    assert_true(nvl_quant_kv_scale_fp8(100.0f) == 1.0f);
    assert_true(nvl_quant_kv_scale_fp8(896.0f) == 2.0f);
    uint32_t layer = 99;
    assert_int_equal(nvl_quant_calib_point(
                         "model.layers.12.self_attn.k_proj.weight", &layer),
                     NVL_CALIB_QKV);
    assert_int_equal(layer, 12);
    assert_int_equal(nvl_quant_calib_point(
                         "model.layers.3.mlp.experts.7.down_proj.weight",
                         &layer),
                     NVL_CALIB_DOWN);
    assert_int_equal(layer, 3);
    assert_int_equal(
        nvl_quant_calib_point("model.layers.0.mlp.up_proj.weight", &layer),
        NVL_CALIB_GATE_UP);
    assert_int_equal(
        nvl_quant_calib_point("model.layers.0.self_attn.o_proj.weight", &layer),
        NVL_CALIB_O);
    assert_int_equal(nvl_quant_calib_point("model.embed_tokens.weight", &layer),
                     -1);
    assert_int_equal(
        nvl_quant_calib_point("model.layers.0.mlp.gate.weight", &layer), -1);
    assert_int_equal(
        nvl_quant_calib_point("model.layers.0.mlp.xgate_proj.weight", &layer),
        -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvfp4_blocks),   cmocka_unit_test(nvfp4_scale_rule),
        cmocka_unit_test(fp8_tensor),     cmocka_unit_test(fp8_groups),
        cmocka_unit_test(kv_cache_rule),  cmocka_unit_test(default_schemes),
        cmocka_unit_test(fp8_token),      cmocka_unit_test(calibrated_scales),
        cmocka_unit_test(int8_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

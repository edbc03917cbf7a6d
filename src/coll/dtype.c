/* Element types and reduction operators of the collectives: names, sizes,
 * conversions to and from float, and the element-wise reduction that data
 * mode runs on every received block.
 *
 * Every type reduces as NCCL does on the GPU: both operands are widened to
 * float, combined, and rounded back to the element type (round to nearest
 * even).  NCCL reduces fp8 in half precision, but rounding a sum of two
 * e4m3 values first to half's 11 bits and then to e4m3's 4 gives the same
 * bits as rounding it once (double rounding through >= 2p+2 bits is
 * innocuous), so going through float changes nothing.  max and min behave
 * as the GPU's max.f32 and CUDA's __hmax / __hmin, which NCCL uses: a NaN
 * operand, quiet or signaling, yields the other one (glibc's fmaxf returns
 * NaN for a signaling one).
 *
 * The formats:
 *   bf16      the top half of the f32 bits;
 *   f16       IEEE binary16: bias 15, subnormals, overflow to infinity;
 *   fp8 e4m3  OCP 8-bit floating point, "FN" variant: bias 7, no
 *             infinities, S.1111.111 is NaN, largest finite 448, smallest
 *             subnormal 2^-9.  Conversion saturates as CUDA's
 *             __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3), which
 *             NCCL's __nv_fp8_e4m3 uses: anything beyond +-448, infinity
 *             included, becomes +-448; NaN becomes NaN. */
#include "nvlemu/coll.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- bit-level conversions -------------------------------------------- */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* Branch-free so that loops over it vectorize. */
static inline uint16_t bf16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t quiet_nan = (u >> 16) | 0x0040u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

/* The 16- and 8-bit conversions below compute every case and select, with
 * no branches, so that the reduction loops over them vectorize.  They round
 * subnormal results with one float addition, and so assume the default
 * rounding mode (to nearest even), as the reduction's arithmetic does. */

/* cond ? a : b as bit masks: GCC keeps this a data dependence, where a ?:
 * whose arms hold float arithmetic may become a branch, which stops
 * vectorization. */
static inline uint32_t select_u32(bool cond, uint32_t a, uint32_t b)
{
    uint32_t mask = 0u - (uint32_t)cond;
    return (a & mask) | (b & ~mask);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t mag = h & 0x7fffu;
    uint32_t normal = (mag << 13) + ((127u - 15u) << 23);        /* rebias */
    uint32_t subnormal = f32_bits((float)mag * 0x1p-24f);        /* exact */
    uint32_t special = 0x7f800000u | ((mag & 0x3ffu) << 13);     /* inf, NaN */
    uint32_t bits = select_u32(mag < 0x0400u, subnormal, normal);
    bits = select_u32(mag >= 0x7c00u, special, bits);
    return f32_from_bits(sign | bits);
}

static inline uint16_t f16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t mag = u & 0x7fffffffu;
    /* >= 2^-14: drop 13 bits, ties to even; may carry into infinity */
    uint32_t normal = ((mag + 0xfffu + ((mag >> 13) & 1u)) >> 13) - ((127u - 15u) << 10);
    /* < 2^-14: adding 0.5, whose ulp is 2^-24 (f16's subnormal step),
     * rounds to nearest even in the FPU; the low bits are the code, up to
     * 0x400, the smallest normal. */
    uint32_t subnormal = f32_bits(f32_from_bits(mag) + 0.5f) - f32_bits(0.5f);
    uint32_t r = select_u32(mag < 0x38800000u, subnormal, normal);
    r = select_u32(mag >= 0x47800000u, 0x7c00u, r); /* >= 2^16: infinity */
    r = select_u32(mag > 0x7f800000u, 0x7e00u | ((mag >> 13) & 0x3ffu), r); /* quiet NaN */
    return (uint16_t)(sign | r);
}

#define FP8_NAN 0x7fu
#define FP8_MAX 0x7eu /* 448 */

static inline float fp8_to_f32(uint8_t c)
{
    uint32_t sign = (uint32_t)(c & 0x80u) << 24;
    uint32_t mag = c & 0x7fu;
    uint32_t normal = (mag << 20) + ((127u - 7u) << 23);         /* rebias */
    uint32_t subnormal = f32_bits((float)mag * 0x1p-9f);         /* exact */
    uint32_t bits = select_u32(mag < 0x08u, subnormal, normal);
    bits = select_u32(mag == FP8_NAN, 0x7fc00000u, bits);
    return f32_from_bits(sign | bits);
}

static inline uint8_t fp8_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t mag = u & 0x7fffffffu;
    /* >= 2^-6: drop 20 bits, ties to even; below 448 rounds to <= 448 */
    uint32_t normal = ((mag + 0x7ffffu + ((mag >> 20) & 1u)) >> 20) - ((127u - 7u) << 3);
    /* < 2^-6: adding 2^14, whose ulp is 2^-9 (e4m3's subnormal step),
     * rounds in the FPU; the low bits are the code, up to 0x08. */
    uint32_t subnormal = f32_bits(f32_from_bits(mag) + 0x1p14f) - f32_bits(0x1p14f);
    uint32_t r = select_u32(mag < 0x3c800000u, subnormal, normal);
    r = select_u32(mag >= 0x43e00000u, FP8_MAX, r); /* >= 448, infinity too */
    r = select_u32(mag > 0x7f800000u, FP8_NAN, r);
    return (uint8_t)(sign | r);
}

static inline float f32_to_f32(float f) { return f; }
static inline float f32_from_f32(float f) { return f; }

/* ---- operators --------------------------------------------------------- */

/* max and min as on the GPU (a NaN operand yields the other), written as a
 * compare and select so that the loops vectorize without -ffast-math. */
static inline float op_sum(float a, float b) { return a + b; }
static inline float op_max(float a, float b) { return (a >= b || b != b) ? a : b; }
static inline float op_min(float a, float b) { return (a <= b || b != b) ? a : b; }

/* The loops are built for the x86-64 baseline (SSE2) and, where GCC can
 * pick at load time, for AVX2 and AVX-512 machines too: with SSE2 alone the
 * 16- and 8-bit conversions vectorize into long emulation sequences.
 * Measured on an AMD EPYC (64K elements, in cache): bf16 0.86 -> 0.13 ns per
 * element, f16 and fp8 about 2.9 -> 0.5 ns. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define REDUCE_TARGETS                                                       \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define REDUCE_TARGETS
#endif

/* One loop per (type, operator), chosen once per call: the conversions and
 * the operator inline into a plain loop the compiler can vectorize. */
#define DEFINE_REDUCE(tag, elem_t, to_f32, from_f32, op)                     \
    REDUCE_TARGETS                                                           \
    static void reduce_##tag##_##op(void *inout, const void *in, size_t n)   \
    {                                                                        \
        elem_t *x = inout;                                                   \
        const elem_t *y = in;                                                \
        for (size_t i = 0; i < n; i++)                                       \
            x[i] = from_f32(op_##op(to_f32(x[i]), to_f32(y[i])));            \
    }

#define DEFINE_REDUCE_OPS(tag, elem_t, to_f32, from_f32)                     \
    DEFINE_REDUCE(tag, elem_t, to_f32, from_f32, sum)                        \
    DEFINE_REDUCE(tag, elem_t, to_f32, from_f32, max)                        \
    DEFINE_REDUCE(tag, elem_t, to_f32, from_f32, min)

DEFINE_REDUCE_OPS(f32, float, f32_to_f32, f32_from_f32)
DEFINE_REDUCE_OPS(bf16, uint16_t, bf16_to_f32, bf16_from_f32)
DEFINE_REDUCE_OPS(f16, uint16_t, f16_to_f32, f16_from_f32)
DEFINE_REDUCE_OPS(fp8, uint8_t, fp8_to_f32, fp8_from_f32)

/* Element-pointer wrappers for the scalar API. */
#define DEFINE_ELEM_CONVERT(tag, elem_t, to_f32, from_f32)                   \
    static float elem_##tag##_to_float(const void *elem)                     \
    {                                                                        \
        elem_t v;                                                            \
        memcpy(&v, elem, sizeof v);                                          \
        return to_f32(v);                                                    \
    }                                                                        \
    static void elem_##tag##_from_float(float f, void *elem_out)             \
    {                                                                        \
        elem_t v = from_f32(f);                                              \
        memcpy(elem_out, &v, sizeof v);                                      \
    }

DEFINE_ELEM_CONVERT(f32, float, f32_to_f32, f32_from_f32)
DEFINE_ELEM_CONVERT(bf16, uint16_t, bf16_to_f32, bf16_from_f32)
DEFINE_ELEM_CONVERT(f16, uint16_t, f16_to_f32, f16_from_f32)
DEFINE_ELEM_CONVERT(fp8, uint8_t, fp8_to_f32, fp8_from_f32)

/* ---- the tables ---------------------------------------------------------- */

typedef void (*reduce_fn_t)(void *inout, const void *in, size_t n);

#define DTYPE_MAX_ALIASES 4

typedef struct {
    const char *name;                          /* nccl-tests' -d name */
    const char *aliases[DTYPE_MAX_ALIASES];    /* also accepted, NULL-ended */
    size_t size_bytes;
    float (*to_float)(const void *elem);
    void (*from_float)(float value, void *elem_out);
    reduce_fn_t reduce[NVL_OP_COUNT];
} dtype_row_t;

#define REDUCE_ROW(tag)                                                      \
    {                                                                        \
        [NVL_OP_SUM] = reduce_##tag##_sum, [NVL_OP_MAX] = reduce_##tag##_max, \
        [NVL_OP_MIN] = reduce_##tag##_min                                    \
    }

static const dtype_row_t dtypes[NVL_DT_COUNT] = {
    [NVL_DT_F32] = {.name = "float",
                    .aliases = {"f32"},
                    .size_bytes = 4,
                    .to_float = elem_f32_to_float,
                    .from_float = elem_f32_from_float,
                    .reduce = REDUCE_ROW(f32)},
    [NVL_DT_BF16] = {.name = "bfloat16",
                     .aliases = {"bf16"},
                     .size_bytes = 2,
                     .to_float = elem_bf16_to_float,
                     .from_float = elem_bf16_from_float,
                     .reduce = REDUCE_ROW(bf16)},
    [NVL_DT_F16] = {.name = "half",
                    .aliases = {"f16"},
                    .size_bytes = 2,
                    .to_float = elem_f16_to_float,
                    .from_float = elem_f16_from_float,
                    .reduce = REDUCE_ROW(f16)},
    [NVL_DT_FP8_E4M3] = {.name = "f8e4m3",
                         .aliases = {"fp8_e4m3", "fp8", "e4m3"},
                         .size_bytes = 1,
                         .to_float = elem_fp8_to_float,
                         .from_float = elem_fp8_from_float,
                         .reduce = REDUCE_ROW(fp8)},
};

static const char *const redop_names[NVL_OP_COUNT] = {
    [NVL_OP_SUM] = "sum", [NVL_OP_MAX] = "max", [NVL_OP_MIN] = "min"};

static const char *const coll_names[NVL_COLL_COUNT] = {
    [NVL_COLL_BROADCAST] = "Broadcast",
    [NVL_COLL_REDUCE] = "Reduce",
    [NVL_COLL_ALLGATHER] = "AllGather",
    [NVL_COLL_REDUCESCATTER] = "ReduceScatter",
    [NVL_COLL_ALLREDUCE] = "AllReduce",
    [NVL_COLL_ALLTOALL] = "AllToAll",
    [NVL_COLL_SENDRECV] = "SendRecv"};

/* ---- names ------------------------------------------------------------- */

size_t nvl_dtype_size(nvl_dtype_t dtype)
{
    return dtype < NVL_DT_COUNT ? dtypes[dtype].size_bytes : 0;
}

const char *nvl_dtype_name(nvl_dtype_t dtype)
{
    return dtype < NVL_DT_COUNT ? dtypes[dtype].name : "?";
}

const char *nvl_redop_name(nvl_redop_t op)
{
    return op < NVL_OP_COUNT ? redop_names[op] : "?";
}

const char *nvl_coll_name(nvl_coll_t coll)
{
    return coll < NVL_COLL_COUNT ? coll_names[coll] : "?";
}

/* "float (f32), bfloat16 (bf16), ..." from the table. */
static void dtype_list_names(char *buf, size_t buf_size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int t = 0; t < NVL_DT_COUNT && len < buf_size; t++) {
        const dtype_row_t *row = &dtypes[t];
        len += (size_t)snprintf(buf + len, buf_size - len, "%s%s",
                                t > 0 ? ", " : "", row->name);
        for (int a = 0; a < DTYPE_MAX_ALIASES && row->aliases[a] != NULL &&
                        len < buf_size;
             a++)
            len += (size_t)snprintf(buf + len, buf_size - len, "%s%s",
                                    a == 0 ? " (" : ", ", row->aliases[a]);
        if (row->aliases[0] != NULL && len < buf_size)
            len += (size_t)snprintf(buf + len, buf_size - len, ")");
    }
}

nvl_status_t nvl_dtype_parse(const char *name, nvl_dtype_t *dtype_out)
{
    if (name != NULL) {
        for (int t = 0; t < NVL_DT_COUNT; t++) {
            const dtype_row_t *row = &dtypes[t];
            bool match = strcasecmp(name, row->name) == 0;
            for (int a = 0; !match && a < DTYPE_MAX_ALIASES && row->aliases[a] != NULL; a++)
                match = strcasecmp(name, row->aliases[a]) == 0;
            if (match) {
                *dtype_out = (nvl_dtype_t)t;
                return NVL_OK;
            }
        }
    }
    char accepted[256];
    dtype_list_names(accepted, sizeof accepted);
    nvl_report("unknown data type '%s' (expected %s)",
               name != NULL ? name : "(null)", accepted);
    return NVL_ERR_INVALID;
}

nvl_status_t nvl_redop_parse(const char *name, nvl_redop_t *op_out)
{
    if (name != NULL) {
        for (int op = 0; op < NVL_OP_COUNT; op++) {
            if (strcasecmp(name, redop_names[op]) == 0) {
                *op_out = (nvl_redop_t)op;
                return NVL_OK;
            }
        }
    }
    /* nccl-tests also offers prod, avg, mulsum and all: not modeled here. */
    nvl_report("unsupported reduction operation '%s' (supported: sum, max, min)",
               name != NULL ? name : "(null)");
    return NVL_ERR_INVALID;
}

/* ---- values ------------------------------------------------------------ */

float nvl_dtype_to_float(nvl_dtype_t dtype, const void *elem)
{
    return dtype < NVL_DT_COUNT ? dtypes[dtype].to_float(elem) : NAN;
}

void nvl_dtype_from_float(nvl_dtype_t dtype, float value, void *elem_out)
{
    if (dtype < NVL_DT_COUNT)
        dtypes[dtype].from_float(value, elem_out);
}

void nvl_reduce_into(nvl_dtype_t dtype, nvl_redop_t op, void *inout,
                     const void *in, size_t n)
{
    if (dtype >= NVL_DT_COUNT || op >= NVL_OP_COUNT) {
        nvl_report("nvl_reduce_into: invalid data type %d or operation %d",
                   (int)dtype, (int)op);
        return;
    }
    if (n > 0)
        dtypes[dtype].reduce[op](inout, in, n);
}

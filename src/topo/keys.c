/* The table of topology keys: one row per key, read by the parser, the
 * exporter, validation and the key reference.  Defaults exist only where a
 * value is not a property of the hardware (a what-if that is off, an absent
 * link), where it comes from NCCL's own source (its tuning constants), or
 * for the compute cost model's fitted efficiencies (docs/cost-model.md:
 * measured on an H200; the shipped files state theirs). */
#include "keys.h"

#include <float.h>
#include <stdbool.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define F(member) offsetof(nvl_topo_t, member), sizeof(((nvl_topo_t *)0)->member)
#define O(member)                                                          \
    offsetof(nvl_gpu_override_t, member),                                  \
        sizeof(((nvl_gpu_override_t *)0)->member)

#define BIG 1e30
#define PS(us) ((us) * 1e6)

const char *const nvl_topo_sections[] = {
    "system", "gpu", "nvlink", "c2c", "host_memory", "host",
    "scaleout", "node", "nccl", NULL};

/* NCCL latency rows: base latency per call, per-step latency over NVLink
 * and over the network, three keys per algorithm and protocol that NCCL
 * runs, generated from the algorithm table (NVL_ALGO_TABLE in
 * include/nvlemu/topo.h, which holds NCCL's defaults and their source). */
#define NCCL_LAT(algo, akey, proto, pkey, base, nvl, net)                  \
    {"nccl", akey "." pkey ".base_lat", NVL_QTY_TIME, NVL_FIELD_I64,        \
     F(nccl.base_lat_ps[algo][proto]), base, 0, PS(10000.0), "6.6us",       \
     "NCCL base latency of one " akey "/" pkey " call"},                     \
    {"nccl", akey "." pkey ".nvlink_lat", NVL_QTY_TIME, NVL_FIELD_I64,      \
     F(nccl.nvlink_lat_ps[algo][proto]), nvl, 0, PS(10000.0), "0.6us",      \
     "NCCL latency of one " akey "/" pkey " step over NVLink"},              \
    {"nccl", akey "." pkey ".net_lat", NVL_QTY_TIME, NVL_FIELD_I64,         \
     F(nccl.net_lat_ps[algo][proto]), net, 0, PS(10000.0), "2.7us",         \
     "NCCL latency of one " akey "/" pkey " step over the network"}

#define LAT(base, nvl, net) 1, base, nvl, net
#define NO_LAT 0, , ,
#define LAT_ROW_0(...)
#define LAT_ROW_1(id, key, p, pkey, base, nvl, net)                         \
    NCCL_LAT(NVL_ALGO_##id, #key, NVL_PROTO_##p, pkey, base, nvl, net),
#define LAT_ROW(id, key, p, pkey, present, base, nvl, net)                  \
    LAT_ROW_##present(id, key, p, pkey, base, nvl, net)
#define LAT_ROWS(id, key, name, ll, ll128, simple)                          \
    LAT_ROW(id, key, LL, "ll", ll)                                          \
    LAT_ROW(id, key, LL128, "ll128", ll128)                                 \
    LAT_ROW(id, key, SIMPLE, "simple", simple)

const nvl_topo_key_t nvl_topo_keys[] = {
    {"system", "name", NVL_QTY_COUNT, NVL_FIELD_STR, F(name), NULL, 0, 0,
     "gb200-nvl72", "short name of the system"},
    {"system", "description", NVL_QTY_COUNT, NVL_FIELD_STR, F(description),
     "", 0, 0, "GB200 NVL72 rack", "one line describing the system"},
    {"system", "gpus", NVL_QTY_COUNT, NVL_FIELD_U32, F(gpus), NULL, 1,
     NVL_TOPO_MAX_GPUS, "72", "GPUs in the system (MPI rank r plays GPU r)"},

    {"gpu", "hbm", NVL_QTY_BYTES, NVL_FIELD_U64, F(gpu.hbm_bytes), NULL, 1,
     1e15, "186GB", "HBM capacity per GPU"},
    {"gpu", "hbm_bw", NVL_QTY_BW, NVL_FIELD_F64, F(gpu.hbm_bw_bytes_per_s),
     NULL, 1e9, 1e15, "8TB/s", "HBM bandwidth per GPU"},
    {"gpu", "bf16_flops", NVL_QTY_FLOPS, NVL_FIELD_F64,
     F(gpu.bf16_flops_per_s), NULL, 1e12, 1e18, "2.5PFLOP/s",
     "dense BF16 tensor-core peak"},
    {"gpu", "fp8_flops", NVL_QTY_FLOPS, NVL_FIELD_F64, F(gpu.fp8_flops_per_s),
     NULL, 1e12, 1e18, "5PFLOP/s", "dense FP8 tensor-core peak"},
    {"gpu", "fp4_flops", NVL_QTY_FLOPS, NVL_FIELD_F64,
     F(gpu.fp4_flops_per_s), "0FLOP/s", 0, 1e18, "10PFLOP/s",
     "dense FP4 tensor-core peak (0: no FP4 tensor cores)"},
    {"gpu", "sms", NVL_QTY_COUNT, NVL_FIELD_U32, F(gpu.sm_count), NULL, 1,
     100000, "148", "streaming multiprocessors"},
    {"gpu", "clock", NVL_QTY_FREQ, NVL_FIELD_F64, F(gpu.clock_hz), NULL,
     1e8, 1e11, "1.965GHz", "SM clock used for throughput figures"},
    {"gpu", "exp_rate", NVL_QTY_RATE, NVL_FIELD_F64, F(gpu.exp_ops_per_s),
     NULL, 1e9, 1e16, "4.65Top/s",
     "exp2 evaluations per second on the special function units"},
    {"gpu", "kernel_overhead", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.kernel_overhead_ps), NULL, 0, PS(1000.0), "2us",
     "fixed GPU time of one kernel (ramp-up, tail)"},
    {"gpu", "launch_overhead", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.launch_overhead_ps), NULL, 0, PS(1000.0), "4us",
     "host time to launch one kernel eagerly"},
    {"gpu", "kernel_floor", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.kernel_floor_ps), "0.9us", 0, PS(1000.0), "0.9us",
     "GPU time of an empty kernel replayed from a CUDA graph (a persistent "
     "kernel saves it per operator)"},
    {"gpu", "copy_overhead", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.copy_overhead_ps), "5us", 0, PS(1000.0), "5us",
     "fixed time of one copy on a copy engine (cudaMemcpyAsync: submission "
     "and DMA start-up), before its bytes move"},
    {"gpu", "matmul_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.matmul_efficiency), "0.7", 0.05, 1, "0.7",
     "fraction of tensor-core peak a large matmul reaches in cuBLASLt "
     "(other GEMM libraries: their share of it, src/cost/gemm_lib.c)"},
    {"gpu", "fp8_matmul_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.fp8_matmul_efficiency), "0", 0, 1, "0.58",
     "fraction of FP8 tensor-core peak a large FP8 matmul reaches in "
     "cuBLASLt, its input already quantised (0: matmul_efficiency)"},
    {"gpu", "fp4_matmul_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.fp4_matmul_efficiency), "0", 0, 1, "0.78",
     "fraction of FP4 tensor-core peak a large FP4 matmul reaches in "
     "cuBLASLt, its input already quantised (0: matmul_efficiency)"},
    {"gpu", "matmul_k_pad", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(gpu.matmul_k_pad), "64", 0, 1000000, "64",
     "fixed work of one output tile, in steps of k (short k runs below "
     "matmul_efficiency)"},
    {"gpu", "fp8_matmul_k_pad", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(gpu.fp8_matmul_k_pad), "0", 0, 1000000, "220",
     "fixed work of one output tile of an FP8 matmul on FP8 tensor cores, "
     "in steps of k (0: matmul_k_pad)"},
    {"gpu", "hbm_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.hbm_efficiency), "0.8", 0.05, 1, "0.8",
     "fraction of hbm_bw a kernel streaming weights or KV reaches"},
    {"gpu", "matmul_cols_per_sm", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(gpu.matmul_cols_per_sm), "30", 1, 1000000, "30",
     "output columns (x 64-row blocks) per SM a skinny matmul needs to "
     "stream at full rate"},
    {"gpu", "matmul_width_exp", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.matmul_width_exp), "0.75", 0.05, 1, "0.75",
     "exponent of the bandwidth loss of skinny matmuls"},
    {"gpu", "attn_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.attn_efficiency), "0.75", 0.05, 1, "0.71",
     "fraction of BF16 peak the attention kernel's matmuls reach"},
    {"gpu", "attn_hbm_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.attn_hbm_efficiency), "0.95", 0.05, 1, "0.95",
     "fraction of hbm_bw decode attention reaches streaming a large KV cache "
     "(with one sequence x KV head it reaches half of that)"},
    {"gpu", "attn_overhead", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.attn_overhead_ps), "6.5us", 0, PS(1000.0), "6.5us",
     "fixed GPU time of one attention kernel"},
    {"gpu", "fa4_exp_fma_share", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.fa4_exp_fma_share), "0.25", 0, 1, "0.25",
     "--attn fa4: share of the softmax exps computed as polynomials on the "
     "FMA units instead of the SFUs"},
    {"gpu", "sdpa_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.sdpa_efficiency), "0.5", 0.05, 1, "0.5",
     "--attn sdpa (the torch stack): fraction of BF16 peak PyTorch's "
     "scaled_dot_product_attention reaches (cuDNN's kernel)"},
    {"gpu", "mem_latency", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.mem_latency_ps), "0.9us", 0, PS(1000.0), "0.9us",
     "GPU time a small kernel that loads and stores global memory takes "
     "beyond an empty one (a dependent load, the stores' completion)"},
    {"gpu", "norm_step_time", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.norm_step_ps), "0.28us", 0, PS(1000.0), "0.28us",
     "one step of a normalisation kernel's CTA along its row (one vector "
     "load per thread, accumulate)"},
    {"gpu", "strided_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.strided_efficiency), "0.4", 0.05, 1, "0.4",
     "share of the HBM rate an element-wise kernel over strided views "
     "reaches (PyTorch's non-vectorised path)"},
    {"gpu", "stream_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.stream_efficiency), "0", 0, 1, "0.9",
     "share of the HBM rate a contiguous element-wise kernel streams at "
     "(0: hbm_efficiency's)"},
    {"gpu", "hot_l2_speedup", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(gpu.hot_l2_speedup), "1", 1, 10, "1.7",
     "a GEMM's weight stream from a hot L2 against HBM, where a benchmark "
     "replays one call on the same operands (cost gemm --harness "
     "graph-hot-l2; 1: unmeasured, no faster)"},
    {"gpu", "fp4_call_overhead", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.fp4_call_overhead_ps), "0us", 0, PS(1000.0), "3.8us",
     "cuBLASLt block-scaled FP4 GEMM's time a call beyond kernel_overhead"},
    {"gpu", "dies", NVL_QTY_COUNT, NVL_FIELD_U32, F(gpu.dies), "1", 1, 8,
     "2", "compute dies per GPU package"},
    {"gpu", "die_link_bw", NVL_QTY_BW, NVL_FIELD_F64,
     F(gpu.die_link_bw_bytes_per_s), "0B/s", 0, 1e15, "5TB/s",
     "die-to-die link between the dies of one package, per direction "
     "(0: none; --rank-plays die needs it)"},
    {"gpu", "die_link_lat", NVL_QTY_TIME, NVL_FIELD_I64,
     F(gpu.die_link_lat_ps), "0us", 0, PS(100.0), "0.05us",
     "one-way latency of the die-to-die link"},

    {"nvlink", "links", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nvlink.links_per_gpu), NULL, 1, 1024, "18", "NVLink links per GPU"},
    {"nvlink", "link_bw", NVL_QTY_BW, NVL_FIELD_F64,
     F(nvlink.link_bw_bytes_per_s), NULL, 1e8, 1e13, "50GB/s",
     "bandwidth of one link, per direction"},
    {"nvlink", "hop_lat", NVL_QTY_TIME, NVL_FIELD_I64, F(nvlink.hop_lat_ps),
     NULL, 0, PS(100.0), "0.5us",
     "one-way latency GPU to GPU through the fabric"},
    {"nvlink", "flag_lat", NVL_QTY_TIME, NVL_FIELD_I64, F(nvlink.flag_lat_ps),
     "0us", 0, PS(100.0), "1.1us",
     "one-way trip of a serving engine's all-reduce flag (a barrier's "
     "compare-and-swap on a peer is two; 0: hop_lat)"},
    {"nvlink", "load_lat", NVL_QTY_TIME, NVL_FIELD_I64, F(nvlink.load_lat_ps),
     "0us", 0, PS(100.0), "1.1us",
     "round trip of an SM's 16-byte load from a peer's memory (0: twice "
     "flag_lat)"},
    {"nvlink", "fence_lat", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nvlink.fence_lat_ps), "0us", 0, PS(100.0), "1.4us",
     "a system-scope release fence before an all-reduce kernel's flag"},
    {"nvlink", "peer_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(nvlink.peer_efficiency), "0", 0, 1, "0.65",
     "share of links x link_bw that SMs' loads and stores to peers carry "
     "per direction (0: NCCL's payload share)"},
    {"nvlink", "sm_peer_bw", NVL_QTY_BW, NVL_FIELD_F64,
     F(nvlink.sm_peer_bw_bytes_per_s), "0B/s", 0, 1e13, "50GB/s",
     "one SM's loads from and stores to peers, in + out (0: no limit)"},
    {"nvlink", "switch_trays", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nvlink.switch_trays), NULL, 0, 1024, "9",
     "NVLink switch trays (0: GPUs linked directly)"},
    {"nvlink", "switch_chips_per_tray", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nvlink.switch_chips_per_tray), "0", 0, 64, "2",
     "NVSwitch chips in one tray"},
    {"nvlink", "switch_trays_down", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nvlink.switch_trays_down), "0", 0, 1024, "1",
     "what-if: switch trays out of service (each takes its share of every "
     "GPU's links)"},
    {"nvlink", "nvls", NVL_QTY_BOOL, NVL_FIELD_BOOL, F(nvlink.nvls), "no", 0,
     1, "yes", "NVLink SHARP (in-switch reduction) available"},
    {"nvlink", "nvls_bw", NVL_QTY_BW, NVL_FIELD_F64,
     F(nvlink.nvls_bw_bytes_per_s), "0B/s", 0, 1e14, "480GB/s",
     "NVLS reduction bandwidth per GPU, per direction"},
    {"nvlink", "domain_size", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nvlink.domain_gpus), NULL, 1, NVL_TOPO_MAX_GPUS, "72",
     "GPUs in one NVLink domain"},

    {"c2c", "bw", NVL_QTY_BW, NVL_FIELD_F64, F(c2c.bw_bytes_per_s), "0B/s",
     0, 1e14, "450GB/s",
     "GPU <-> host CPU link bandwidth per direction (0: not modeled)"},
    {"c2c", "lat", NVL_QTY_TIME, NVL_FIELD_I64, F(c2c.lat_ps), "0us", 0,
     PS(1000.0), "1us", "GPU <-> host CPU link latency"},
    {"c2c", "line", NVL_QTY_BYTES, NVL_FIELD_U64, F(c2c.line_bytes), "128B", 1,
     4096, "128B", "data one packet carries: the GPU's 128-byte L2 line"},
    {"c2c", "header", NVL_QTY_BYTES, NVL_FIELD_U64, F(c2c.header_bytes),
     "16B", 0, 4096, "16B",
     "the packet's header beside its data: one 16-byte flit (the link "
     "moves line / (line + header) of its rate as data)"},

    {"host_memory", "size", NVL_QTY_BYTES, NVL_FIELD_U64, F(host_memory.bytes),
     "0B", 0, 1e16, "240GB", "host memory per GPU (0: not modeled)"},
    {"host_memory", "bw", NVL_QTY_BW, NVL_FIELD_F64,
     F(host_memory.bw_bytes_per_s), "0B/s", 0, 1e14, "256GB/s",
     "host memory bandwidth per GPU"},

    {"host", "torch_op", NVL_QTY_TIME, NVL_FIELD_I64, F(host.torch_op_ps),
     "0us", 0, PS(10000.0), "37.08us",
     "host CPU time of one torch.nn.Linear forward call, one thread: its "
     "speed at an engine's Python work (0: the engine's measured figure)"},

    {"scaleout", "nic_bw", NVL_QTY_BW, NVL_FIELD_F64,
     F(scaleout.nic_bw_bytes_per_s), "0B/s", 0, 1e13, "400Gb/s",
     "scale-out NIC bandwidth per GPU, per direction (0: none)"},
    {"scaleout", "lat", NVL_QTY_TIME, NVL_FIELD_I64, F(scaleout.lat_ps),
     "0us", 0, PS(10000.0), "5us", "one-way latency between NVLink domains"},
    {"scaleout", "oversubscription", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(scaleout.oversubscription), "1", 1, 1000, "2",
     "oversubscription of the network above the NICs (1: non-blocking)"},

    {"node", "gpus_per_tray", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(node.gpus_per_tray), NULL, 1, 64, "4", "GPUs per compute tray"},
    {"node", "gpus_per_superchip", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(node.gpus_per_superchip), "1", 1, 64, "2",
     "GPUs sharing one host CPU (a GB200 superchip has 2)"},

    {"nccl", "channels", NVL_QTY_COUNT, NVL_FIELD_U32, F(nccl.channels), "24",
     1, 64, "24",
     "collective channels NCCL opens (measured: 24 on 2 x H200 NV18, "
     "NCCL 2.28 init log)"},
    {"nccl", "mid_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(nccl.mid_efficiency), "0.74", 0.05, 1, "0.74",
     "fraction of a channel's bandwidth LL128 and Simple reach at mid sizes "
     "(fit to the h200-nvl2 curves)"},
    {"nccl", "knee", NVL_QTY_BYTES, NVL_FIELD_U64, F(nccl.knee_bytes), "32MB",
     1, 1e13, "32MB",
     "bytes per channel at which that efficiency is halfway to 1 (fit to "
     "the h200-nvl2 curves)"},
    {"nccl", "gather_scatter_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(nccl.gather_scatter_efficiency), "0.86", 0.05, 1, "0.86",
     "rate per byte of a ring allgather's or reduce-scatter's end step "
     "relative to allreduce's: all of a 2-rank call, one of N-1 steps on N "
     "(fit to the h200-nvl2 curves)"},
    {"nccl", "nvls_min_ranks", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nccl.nvls_min_ranks), "5", 2, NVL_TOPO_MAX_GPUS, "5",
     "smallest group NCCL runs NVLS on (HGX H200: ring at 4 GPUs, NVLS "
     "from 5, ml-engineering)"},
    {"nccl", "nvls_channels", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nccl.nvls_channels), "16", 2, 64, "16",
     "channels NCCL runs NVLS on (nvls.cc ncclNvlsTuning: 16 on Hopper, "
     "24 on Blackwell within one NVLink domain)"},
    {"nccl", "nvls_tree_channels", NVL_QTY_COUNT, NVL_FIELD_U32,
     F(nccl.nvls_tree_channels), "0", 0, 64, "32",
     "channels NCCL runs NVLS on in a communicator spanning NVLink domains "
     "(NVLSTree; nvls.cc: NVLS_NCHANNELS_SM100 32 on Blackwell, 16 on "
     "Hopper; 0: nvls_channels)"},
    {"nccl", "nvls_chunk_lat", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nccl.nvls_chunk_lat_ps), "0.48us", 0, PS(100.0), "0.48us",
     "NVLS: time one chunk's synchronisation through the switch adds (fit "
     "to Azure ND H200 v5 all_reduce, 1 MB - 8 GB)"},
    {"nccl", "nvls_efficiency", NVL_QTY_RATIO, NVL_FIELD_F64,
     F(nccl.nvls_efficiency), "0.85", 0.05, 1, "0.85",
     "NCCL's rating of NVLS per byte of the graph's bandwidth, by which it "
     "chooses (tuning.cc nvlsEfficiency: 0.85 Hopper, 0.74 Blackwell)"},
    {"nccl", "nvls_tuning_lat", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nccl.nvls_tuning_lat_ps), "25us", 0, PS(1000.0), "25us",
     "NCCL's latency of an NVLS call in its rating, by which it chooses "
     "(tuning.cc NVLS Simple on NVLink: 23 us in 2.18.5-2.20.5, 25 us "
     "from 2.21.5)"},
    {"nccl", "nvls_whole_chunks", NVL_QTY_BOOL, NVL_FIELD_BOOL,
     F(nccl.nvls_whole_chunks), "no", 0, 1, "no",
     "NVLS allreduce in whole chunks from the first channel, as NCCL "
     "before 2.20 places it (2.20 on splits a call over the channels)"},
    {"nccl", "compcap", NVL_QTY_COUNT, NVL_FIELD_U32, F(nccl.compcap), "0",
     0, 200, "100",
     "compute capability x 10 NCCL sees, which picks its NVLink rate per "
     "link and its graph search speeds (topo.h SM90/SM100_NVLINK_BW, "
     "search.cc sm90/sm100SpeedArrayIntra); 0: the model's NVLink rate, "
     "no search"},
    {"nccl", "launch_overhead", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nccl.launch_overhead_ps), "8.5us", 0, PS(1000.0), "8.5us",
     "host time to enqueue one NCCL call on one GPU (fit to the "
     "h200-nvl2 small-size floor)"},
    {"nccl", "empty_call", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nccl.empty_call_ps), "0.3us", 0, PS(100.0), "0.3us",
     "host time of a count-0 call on one GPU: NCCL discards it without a "
     "kernel (h200-nvl2 count-0 rows: 0.50-0.80 us with -g 2)"},
    {"nccl", "torch_call", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nccl.torch_call_ps), "41us", 0, PS(1000.0), "41us",
     "host time of one torch.distributed collective call, back to back "
     "(measured: lent HGX H100, eager all_reduce at 8 B - 256 KB on 2 GPUs, "
     "median; read by the benches' --caller torch)"},
    {"nccl", "graph_edge", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nccl.graph_edge_ps), "2.4us", 0, PS(100.0), "2.4us",
     "from the kernel before an NCCL call captured in a CUDA graph to the "
     "start of NCCL's kernel (measured: profiled serving steps on H200 and "
     "H100, 2.3-2.6 us where two compute kernels are 0.4 us apart)"},
    {"nccl", "stream_gap", NVL_QTY_TIME, NVL_FIELD_I64,
     F(nccl.stream_gap_ps), "2.4us", 0, PS(100.0), "2.4us",
     "device time a back-to-back eager call (nccl-tests' -n loop) adds over "
     "its CUDA-graph kernel (default: [gpu] kernel_overhead - kernel_floor)"},
    {"nccl", "ll_max_bw", NVL_QTY_BW, NVL_FIELD_F64,
     F(nccl.ll_max_bw_bytes_per_s), "141GB/s", 1e9, 1e14, "141GB/s",
     "LL protocol ceiling over all channels (NCCL llMaxBws)"},
    {"nccl", "ll128_max_bw_per_channel", NVL_QTY_BW, NVL_FIELD_F64,
     F(nccl.ll128_max_bw_per_channel_bytes_per_s), "36.7GB/s", 1e9, 1e13,
     "36.7GB/s", "LL128 ceiling per channel (NCCL perChMaxRingLL128Bws)"},
    {"nccl", "tree_max_bw_per_channel", NVL_QTY_BW, NVL_FIELD_F64,
     F(nccl.tree_max_bw_per_channel_bytes_per_s), "38.7GB/s", 1e9, 1e13,
     "38.7GB/s", "Tree ceiling per channel (NCCL perChMaxTreeBws)"},
    NVL_ALGO_TABLE(LAT_ROWS)
};
const size_t nvl_topo_key_count = sizeof nvl_topo_keys / sizeof nvl_topo_keys[0];

const nvl_gpu_override_t nvl_topo_override_none = {
    .clock_scale = 1.0, .hbm_bw_scale = 1.0, .links_down = 0,
    .link_bw_scale = 1.0, .nic_bw_scale = 1.0};

const nvl_topo_key_t nvl_topo_gpu_keys[] = {
    {"gpu.N", "clock_scale", NVL_QTY_RATIO, NVL_FIELD_F64, O(clock_scale),
     "1", 0.01, 100, "0.8", "scales the GPU's FLOP/s and exp throughput"},
    {"gpu.N", "hbm_bw_scale", NVL_QTY_RATIO, NVL_FIELD_F64, O(hbm_bw_scale),
     "1", 0.01, 100, "0.5", "scales the GPU's HBM bandwidth"},
    {"gpu.N", "links_down", NVL_QTY_COUNT, NVL_FIELD_U32, O(links_down), "0",
     0, 1024, "1", "NVLink links of the GPU out of service"},
    {"gpu.N", "link_bw_scale", NVL_QTY_RATIO, NVL_FIELD_F64, O(link_bw_scale),
     "1", 0.01, 100, "0.5", "scales the bandwidth of the GPU's NVLink links"},
    {"gpu.N", "nic_bw_scale", NVL_QTY_RATIO, NVL_FIELD_F64, O(nic_bw_scale),
     "1", 0.01, 100, "0.5", "scales the GPU's scale-out NIC bandwidth"},
};
const size_t nvl_topo_gpu_key_count =
    sizeof nvl_topo_gpu_keys / sizeof nvl_topo_gpu_keys[0];

/* Converts a base-unit value to the field's type, checking the range. */
nvl_status_t nvl_topo_key_parse(const nvl_topo_key_t *k, const char *text,
                                void *base, char *why_buf, size_t why_len)
{
    char *field = (char *)base + k->offset;
    if (k->field == NVL_FIELD_STR) {
        size_t n = strlen(text);
        if (n == 0 || n >= k->size) {
            snprintf(why_buf, why_len, "expected text of 1 to %zu characters",
                     k->size - 1);
            return NVL_ERR_INVALID;
        }
        /* only text that a topology file can hold: the export must read
         * back as the same value (inih strips blanks at both ends and
         * takes ' ;' for the start of a comment; the export writes
         * "key = value", so a leading ';' or '#' would follow a blank
         * there: found by tests/fuzz/fuzz_topo.c) */
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)text[i];
            bool blank = c == ' ';
            if ((c < 0x20 || c == 0x7f) ||
                (blank && (i == 0 || i + 1 == n)) ||
                ((c == ';' || c == '#') && (i == 0 || text[i - 1] == ' '))) {
                snprintf(why_buf, why_len,
                         "text with control characters, blanks at either "
                         "end, or ';' / '#' at its start or after a blank "
                         "(a comment in a topology file) cannot be written "
                         "back to a file");
                return NVL_ERR_INVALID;
            }
        }
        memcpy(field, text, n + 1);
        return NVL_OK;
    }
    double v;
    char why[160];
    if (nvl_qty_parse(k->kind, text, &v, why, sizeof why) != NVL_OK) {
        snprintf(why_buf, why_len, "%s (expected a %s: %s; e.g. %s)", why,
                 nvl_qty_kind_name(k->kind), nvl_qty_units(k->kind),
                 k->example);
        return NVL_ERR_INVALID;
    }
    if (v < k->min || v > k->max) {
        char lo[48], hi[48];
        nvl_qty_format(k->kind, k->min, lo, sizeof lo);
        nvl_qty_format(k->kind, k->max, hi, sizeof hi);
        snprintf(why_buf, why_len, "out of range (expected %s to %s)", lo, hi);
        return NVL_ERR_INVALID;
    }
    switch (k->field) {
    case NVL_FIELD_U32: *(uint32_t *)field = (uint32_t)v; break;
    case NVL_FIELD_U64: *(uint64_t *)field = (uint64_t)llround(v); break;
    case NVL_FIELD_I64: *(int64_t *)field = (int64_t)llround(v); break;
    case NVL_FIELD_F64: *(double *)field = v; break;
    case NVL_FIELD_BOOL: *(bool *)field = v != 0.0; break;
    case NVL_FIELD_STR: break;
    }
    return NVL_OK;
}

void nvl_topo_key_format(const nvl_topo_key_t *k, const void *base,
                         char *buf, size_t len)
{
    const char *field = (const char *)base + k->offset;
    double v = 0;
    switch (k->field) {
    case NVL_FIELD_STR: snprintf(buf, len, "%s", field); return;
    case NVL_FIELD_U32: v = *(const uint32_t *)field; break;
    case NVL_FIELD_U64: v = (double)*(const uint64_t *)field; break;
    case NVL_FIELD_I64: v = (double)*(const int64_t *)field; break;
    case NVL_FIELD_F64: v = *(const double *)field; break;
    case NVL_FIELD_BOOL: v = *(const bool *)field ? 1.0 : 0.0; break;
    }
    nvl_qty_format(k->kind, v, buf, len);
}

/* "origin:line" of the first of the keys a and b (as "section.key", b may
 * be NULL) that the file set; just origin when neither was or when lines is
 * NULL (the topology is not being read from a file). */
static const char *where_set(char *buf, size_t len, const char *origin,
                             const int *lines, const char *a, const char *b)
{
    snprintf(buf, len, "%s", origin);
    for (int pass = 0; lines != NULL && pass < 2; pass++) {
        const char *name = pass ? b : a;
        for (size_t i = 0; name != NULL && i < nvl_topo_key_count; i++) {
            const nvl_topo_key_t *k = &nvl_topo_keys[i];
            size_t n = strlen(k->section);
            if (lines[i] > 0 && strncmp(name, k->section, n) == 0 &&
                name[n] == '.' && strcmp(name + n + 1, k->key) == 0) {
                snprintf(buf, len, "%s:%d", origin, lines[i]);
                return buf;
            }
        }
    }
    return buf;
}

/* the file:line to blame: where the first named key was set (w, origin
 * and key_lines are the checking function's) */
#define AT(a, b) where_set(w, sizeof w, origin, key_lines, a, b)

/* Domains, trays and superchips nest: each divides the next. */
static nvl_status_t validate_nesting(const nvl_topo_t *t, const char *origin,
                                     const int *key_lines)
{
    const nvl_nvlink_spec_t *nv = &t->nvlink;
    char w[512];
    if (nv->domain_gpus > t->gpus || t->gpus % nv->domain_gpus != 0) {
        nvl_report("%s: [nvlink] domain_size = %" PRIu32 " must divide "
                   "[system] gpus = %" PRIu32,
                   AT("nvlink.domain_size", "system.gpus"), nv->domain_gpus,
                   t->gpus);
        return NVL_ERR_INVALID;
    }
    if (nv->domain_gpus % t->node.gpus_per_tray != 0) {
        nvl_report("%s: [node] gpus_per_tray = %" PRIu32 " must divide "
                   "[nvlink] domain_size = %" PRIu32,
                   AT("node.gpus_per_tray", "nvlink.domain_size"),
                   t->node.gpus_per_tray, nv->domain_gpus);
        return NVL_ERR_INVALID;
    }
    if (t->node.gpus_per_tray % t->node.gpus_per_superchip != 0) {
        nvl_report("%s: [node] gpus_per_superchip = %" PRIu32 " must divide "
                   "gpus_per_tray = %" PRIu32,
                   AT("node.gpus_per_superchip", "node.gpus_per_tray"),
                   t->node.gpus_per_superchip, t->node.gpus_per_tray);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* GPUs linked directly (no switch trays: at most 2 a domain, no NVLS, no
 * tray down), or through switch trays that share every GPU's links. */
static nvl_status_t validate_switches(const nvl_topo_t *t, const char *origin,
                                      const int *key_lines)
{
    const nvl_nvlink_spec_t *nv = &t->nvlink;
    char w[512];
    if (nv->switch_trays == 0) {
        if (nv->domain_gpus > 2) {
            nvl_report("%s: [nvlink] switch_trays = 0 (GPUs linked directly) "
                       "allows domain_size 1 or 2, not %" PRIu32,
                       AT("nvlink.switch_trays", "nvlink.domain_size"),
                       nv->domain_gpus);
            return NVL_ERR_INVALID;
        }
        if (nv->nvls || nv->switch_trays_down > 0) {
            nvl_report("%s: [nvlink] nvls and switch_trays_down need NVLink "
                       "switches (switch_trays > 0)",
                       AT(nv->nvls ? "nvlink.nvls" : "nvlink.switch_trays_down",
                          "nvlink.switch_trays"));
            return NVL_ERR_INVALID;
        }
        return NVL_OK;
    }
    if (nv->switch_chips_per_tray == 0) {
        nvl_report("%s: [nvlink] switch_chips_per_tray must be at least 1 "
                   "when switch_trays = %" PRIu32,
                   AT("nvlink.switch_chips_per_tray", "nvlink.switch_trays"),
                   nv->switch_trays);
        return NVL_ERR_INVALID;
    }
    if (nv->links_per_gpu % nv->switch_trays != 0) {
        nvl_report("%s: [nvlink] links = %" PRIu32 " must be a multiple "
                   "of switch_trays = %" PRIu32
                   " (each tray takes an equal share of every GPU's links)",
                   AT("nvlink.links", "nvlink.switch_trays"),
                   nv->links_per_gpu, nv->switch_trays);
        return NVL_ERR_INVALID;
    }
    if (nv->switch_trays_down >= nv->switch_trays) {
        nvl_report("%s: [nvlink] switch_trays_down = %" PRIu32
                   " leaves no tray up (switch_trays = %" PRIu32 ")",
                   AT("nvlink.switch_trays_down", "nvlink.switch_trays"),
                   nv->switch_trays_down, nv->switch_trays);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* Every GPU keeps at least one NVLink link up after its overrides. */
static nvl_status_t validate_links_up(const nvl_topo_t *t, const char *origin,
                                      const int *links_down_lines)
{
    char w[512];
    for (uint32_t g = 0; t->overrides != NULL && g < t->gpus; g++) {
        if (nvl_topo_links_up(t, g) > 0)
            continue;
        if (links_down_lines != NULL && links_down_lines[g] > 0)
            snprintf(w, sizeof w, "%s:%d", origin, links_down_lines[g]);
        else
            snprintf(w, sizeof w, "%s", origin);
        nvl_report("%s: GPU %" PRIu32 " has no NVLink link up (links = "
                   "%" PRIu32 ", links_down = %" PRIu32
                   ", switch_trays_down = %" PRIu32 ")",
                   w, g, t->nvlink.links_per_gpu, t->overrides[g].links_down,
                   t->nvlink.switch_trays_down);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

nvl_status_t nvl_topo_validate(const nvl_topo_t *t, const char *origin,
                               const int *key_lines,
                               const int *links_down_lines)
{
    const nvl_nvlink_spec_t *nv = &t->nvlink;
    char w[512];
    nvl_status_t st = validate_nesting(t, origin, key_lines);
    if (st == NVL_OK)
        st = validate_switches(t, origin, key_lines);
    if (st != NVL_OK)
        return st;
    if (nv->nvls && nv->nvls_bw_bytes_per_s <= 0) {
        nvl_report("%s: [nvlink] nvls = yes needs nvls_bw > 0",
                   AT("nvlink.nvls_bw", "nvlink.nvls"));
        return NVL_ERR_INVALID;
    }
    if (t->gpus > nv->domain_gpus && t->scaleout.nic_bw_bytes_per_s <= 0) {
        nvl_report("%s: %" PRIu32 " GPUs in NVLink domains of %" PRIu32
                   " need a scale-out network: set [scaleout] nic_bw",
                   AT("scaleout.nic_bw", "nvlink.domain_size"), t->gpus,
                   nv->domain_gpus);
        return NVL_ERR_INVALID;
    }
    return validate_links_up(t, origin, links_down_lines);
}
#undef AT

_Static_assert(sizeof nvl_topo_keys / sizeof nvl_topo_keys[0] <=
                   NVL_TOPO_MAX_KEYS,
               "raise NVL_TOPO_MAX_KEYS");

/* The host side of running kernels: when a kernel can start, given how the
 * host launches it.
 *
 *   eager       host: launch_overhead per kernel, [nccl] launch_overhead
 *               per collective; kernel start = max(GPU free, launched)
 *   graph       host: one launch_overhead per forward pass (the graph)
 *   persistent  no launches: the GPU runs operator after operator
 *
 * When kernels are shorter than their launch, the GPU waits for the host
 * (the small-batch decode regime eager serving loops are known for); the
 * waits are counted in launch_wait_ps. */
#include "nvlemu/cost.h"

void nvl_stream_init(nvl_stream_t *s, const nvl_cost_cfg_t *cfg,
                     const nvl_vclock_t *gpu)
{
    s->cfg = cfg;
    s->host_ps = gpu->now_ps;
    s->launch_wait_ps = 0;
}

void nvl_stream_begin_pass(nvl_stream_t *s, const nvl_vclock_t *gpu)
{
    (void)gpu;
    if (s->cfg->launch == NVL_LAUNCH_GRAPH)
        s->host_ps += s->cfg->topo->gpu.launch_overhead_ps;
}

/* The GPU waits for the host's launch when the launch is later. */
static void wait_for_launch(nvl_stream_t *s, nvl_vclock_t *gpu)
{
    if (s->cfg->launch == NVL_LAUNCH_PERSISTENT)
        return;
    if (s->host_ps > gpu->now_ps) {
        s->launch_wait_ps += s->host_ps - gpu->now_ps;
        gpu->now_ps = s->host_ps;
    }
}

int64_t nvl_stream_kernel(nvl_stream_t *s, nvl_vclock_t *gpu, int64_t dur_ps)
{
    if (s->cfg->launch == NVL_LAUNCH_EAGER)
        s->host_ps += s->cfg->topo->gpu.launch_overhead_ps;
    wait_for_launch(s, gpu);
    int64_t start = gpu->now_ps;
    nvl_vclock_advance(gpu, dur_ps);
    return start;
}

void nvl_stream_collective(nvl_stream_t *s, nvl_vclock_t *gpu)
{
    if (s->cfg->launch == NVL_LAUNCH_EAGER)
        s->host_ps += s->cfg->topo->nccl.launch_overhead_ps;
    wait_for_launch(s, gpu);
}

void nvl_stream_sync(nvl_stream_t *s, const nvl_vclock_t *gpu)
{
    if (gpu->now_ps > s->host_ps)
        s->host_ps = gpu->now_ps;
}

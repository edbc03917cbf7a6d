/* host_membw: this host's memory read bandwidth with one thread, the
 * ceiling for data mode's decode (a decode step streams every weight of
 * the rank's shard once, in float32).  Prints GB/s of a sequential read of
 * a 1 GiB buffer, best of 5; `nvlemu run --mode data` reports its decode
 * steps' wall time to compare with (docs/cost-model.md, "Emulation speed"). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    size_t n = (size_t)1 << 28; /* 1 GiB of float */
    float *a = malloc(n * sizeof *a);
    if (a == NULL) {
        fprintf(stderr, "host_membw: cannot allocate 1 GiB\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(i & 7);
    double best = 0, sink = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        float acc[8] = {0};
        for (size_t i = 0; i < n; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] += a[i + j];
        double t = now_s() - t0;
        for (int j = 0; j < 8; j++)
            sink += acc[j];
        double gbs = (double)n * sizeof *a / t / 1e9;
        best = gbs > best ? gbs : best;
    }
    printf("host memory read bandwidth, one thread: %.1f GB/s (checksum %g)\n",
           best, sink);
    free(a);
    return 0;
}

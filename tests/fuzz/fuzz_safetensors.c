/* Safetensors checkpoints, one file or sharded: the input is the file
 * (sharded: its first half is shard 1, the rest shard 2, and the index
 * sends each tensor to the shard whose header names it).  A checkpoint
 * that opens keeps nvl_weights_open's promises: every tensor the headers
 * name reads whole, only from inside its file (AddressSanitizer and the
 * short-read check see the rest), with a shape within NVL_TENSOR_MAX_DIMS. */
#include <jansson.h>

#include "fuzz.h"
#include "nvlemu/weights.h"

/* The tensor names of a safetensors image (no validation: the library's
 * job), added to names; file is the shard's name for the index. */
static void header_names(const uint8_t *data, size_t size, const char *file,
                         json_t *map)
{
    if (size < 8)
        return;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | data[i];
    if (n > size - 8)
        return;
    json_t *h = json_loadb((const char *)data + 8, (size_t)n, 0, NULL);
    const char *key;
    json_t *v;
    json_object_foreach(h, key, v)
        if (strcmp(key, "__metadata__") != 0)
            json_object_set_new(map, key, json_string(file));
    json_decref(h);
}

static void read_all(const nvl_weights_t *w, json_t *map)
{
    const char *name;
    json_t *v;
    json_object_foreach(map, name, v) {
        nvl_tensor_info_t info;
        if (nvl_weights_info(w, name, &info) != NVL_OK)
            continue; /* an unsupported dtype is reported when read */
        FUZZ_REQUIRE(info.ndim >= 0 && info.ndim <= NVL_TENSOR_MAX_DIMS,
                     "a tensor's rank is within NVL_TENSOR_MAX_DIMS");
        uint64_t rows = info.ndim >= 1 ? info.shape[0] : 1;
        uint64_t cols = 1;
        for (int d = 1; d < info.ndim; d++)
            cols *= info.shape[d];
        if (info.ndim == 1) {
            cols = rows;
            rows = 1;
        }
        if (rows == 0 || cols == 0 || rows * cols > (1u << 20))
            continue; /* big tensors: reading them proves no more */
        float *out = malloc(rows * cols * sizeof *out);
        FUZZ_REQUIRE(out != NULL, "memory");
        (void)nvl_weights_read_f32(w, name, 0, rows, 0, cols, out);
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char dir[4096];
    bool sharded = size > 0 && (data[0] & 1);
    fuzz_tmpdir(dir, sizeof dir);
    json_t *map = json_object();
    static const char *const files[] = {"model.safetensors",
                                        "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors",
                                        "model.safetensors.index.json"};
    if (!sharded) {
        fuzz_write(dir, files[0], data, size);
        header_names(data, size, files[0], map);
    } else {
        size_t half = size / 2;
        fuzz_write(dir, files[1], data, half);
        fuzz_write(dir, files[2], data + half, size - half);
        header_names(data, half, files[1], map);
        header_names(data + half, size - half, files[2], map);
        json_t *index = json_pack("{s:{}, s:O}", "metadata", "weight_map", map);
        char *text = json_dumps(index, 0);
        fuzz_write(dir, files[3], (const uint8_t *)text, strlen(text));
        free(text);
        json_decref(index);
    }
    nvl_weights_t *w = NULL;
    if (nvl_weights_open(dir, &w) == NVL_OK) {
        read_all(w, map);
        nvl_weights_close(w);
    }
    json_decref(map);
    fuzz_rmdir(dir, files, 4);
    return 0;
}

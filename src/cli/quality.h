/* Private to src/cli: a quantized model's quality beside its reference
 * (nvlemu generate --compare-to, --eval; quality.c): both models' logits
 * at the same positions, teacher-forced, and what they differ by. */
#ifndef NVLEMU_CLI_QUALITY_H
#define NVLEMU_CLI_QUALITY_H

#include <jansson.h>
#include <stdint.h>

#include "nvlemu/engine.h"

/* Sequences to score: seq s is tokens [off[s], off[s] + len[s]) of tok,
 * and its positions from[s] .. len[s] - 1 are predicted (the logits after
 * each prefix of from[s] .. len[s] - 1 tokens). */
typedef struct {
    int n;
    const int32_t *tok;
    const uint64_t *off;
    const int *len, *from;
} nvl_quality_seqs_t;

/* Collective over tp: a model (config cfg, options o, its checkpoint in
 * o->weights_dir) built on tp, and the logits of every scored position of
 * seqs, in order (*logits_out: positions x vocab, malloc'd, every rank;
 * *positions_out their count).  One batch of prefixes per sequence. */
nvl_status_t nvl_cli_score(const nvl_model_config_t *cfg,
                           const nvl_engine_opts_t *o, nvl_comm_t *tp,
                           const nvl_quality_seqs_t *seqs,
                           float **logits_out, uint64_t *positions_out);

/* What a model's logits q differ by from the reference's r over n
 * positions of V logits: the share of positions whose top-1 token agrees,
 * the mean and largest |q - r| over all logits, the mean and largest
 * KL(softmax(r) || softmax(q)) per position (nats); as a JSON object
 * (keys positions, top1_agreement, mean_abs_logit_error,
 * max_abs_logit_error, mean_kl, max_kl). */
json_t *nvl_cli_quality_json(const float *q, const float *r, uint64_t n,
                             uint32_t V);

/* Perplexity of the tokens the n scored positions of seqs predict, from
 * their logits: {"tokens", "mean_nll", "perplexity"}. */
json_t *nvl_cli_perplexity_json(const float *logits,
                                const nvl_quality_seqs_t *seqs, uint32_t V);

/* Reads a JSONL file of token-id lists (one JSON array of integers a
 * line, blank lines skipped): *tok_out (all, one after another), lengths
 * *len_out and offsets *off_out per sequence, their count *n_out (all
 * malloc'd).  Reports the file and line of a bad line, an id outside
 * 0 .. vocab - 1 or a sequence shorter than 2 tokens: NVL_ERR_INVALID. */
nvl_status_t nvl_cli_read_token_file(const char *path, uint32_t vocab,
                                     int32_t **tok_out, int **len_out,
                                     uint64_t **off_out, int *n_out);

#endif

// Training data: byte-level tokens of a text file (one token per byte, vocabulary 256), and the
// deterministic choice of sequences: sequence i of step s depends only on (seed, s, i), so every
// layout sees the same micro-batches whatever its dp rank and micro-batch count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shardplan {

// The text shipped with shardplan (data/README.md says what it is), relative to the data folder.
inline constexpr const char* kDefaultTextFile = "data/fsf-licenses.txt";
inline constexpr int64_t kByteVocab = 256;

struct TextTokens {
  std::string path;
  std::vector<uint8_t> bytes;
};

// Throws InputError (path) when the file cannot be read or holds fewer than min_bytes bytes.
TextTokens load_text_tokens(const std::string& path, int64_t min_bytes);

// Sequence `sequence` of step `step`: seq_len + 1 consecutive bytes from an offset drawn from
// (seed, step, sequence); inputs are the first seq_len, targets the last seq_len (next-byte
// prediction).
void sample_sequence(const TextTokens& text, uint64_t seed, int64_t step, int64_t sequence,
                     int64_t seq_len, std::span<int32_t> inputs, std::span<int32_t> targets);

// micro_batch sequences from first_sequence on, one after another in inputs and targets.
void sample_micro_batch(const TextTokens& text, uint64_t seed, int64_t step, int64_t first_sequence,
                        int64_t micro_batch, int64_t seq_len, std::span<int32_t> inputs,
                        std::span<int32_t> targets);

// The step's global index of the first sequence of micro-batch `microbatch` on data-parallel rank
// dp_rank: each dp rank takes a contiguous slice of the global batch, as Megatron-LM's sampler
// does.
int64_t first_sequence(int dp_rank, int microbatch, int micro_batch, int num_microbatches);

}  // namespace shardplan

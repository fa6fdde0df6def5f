#include "executor/data.h"

#include <fmt/format.h>

#include <cassert>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "executor/counter_rng.h"

namespace shardplan {

TextTokens load_text_tokens(const std::string& path, int64_t min_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, "", "cannot read the training text",
                     "pass --data FILE with a readable text file");
  TextTokens t{path, std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                                          std::istreambuf_iterator<char>())};
  if (static_cast<int64_t>(t.bytes.size()) < min_bytes)
    throw InputError(path, "",
                     fmt::format("holds {} bytes, fewer than the {} a sequence needs",
                                 t.bytes.size(), min_bytes),
                     "use a longer text or a shorter seq_len");
  return t;
}

void sample_sequence(const TextTokens& text, uint64_t seed, int64_t step, int64_t sequence,
                     int64_t seq_len, std::span<int32_t> inputs, std::span<int32_t> targets) {
  const auto windows = static_cast<uint64_t>(static_cast<int64_t>(text.bytes.size()) - seq_len);
  assert(windows > 0 && static_cast<int64_t>(inputs.size()) == seq_len &&
         targets.size() == inputs.size());
  const uint64_t offset =
      counter_hash(seed, static_cast<uint64_t>(step), static_cast<uint64_t>(sequence)) % windows;
  const uint8_t* from = text.bytes.data() + offset;
  for (int64_t i = 0; i < seq_len; ++i) {
    inputs[static_cast<size_t>(i)] = from[i];
    targets[static_cast<size_t>(i)] = from[i + 1];
  }
}

void sample_micro_batch(const TextTokens& text, uint64_t seed, int64_t step, int64_t first_sequence,
                        int64_t micro_batch, int64_t seq_len, std::span<int32_t> inputs,
                        std::span<int32_t> targets) {
  assert(static_cast<int64_t>(inputs.size()) == micro_batch * seq_len &&
         targets.size() == inputs.size());
  const auto len = static_cast<size_t>(seq_len);
  for (int64_t b = 0; b < micro_batch; ++b)
    sample_sequence(text, seed, step, first_sequence + b, seq_len,
                    inputs.subspan(static_cast<size_t>(b) * len, len),
                    targets.subspan(static_cast<size_t>(b) * len, len));
}

int64_t first_sequence(int dp_rank, int microbatch, int micro_batch, int num_microbatches) {
  return (int64_t{dp_rank} * num_microbatches + microbatch) * micro_batch;
}

}  // namespace shardplan

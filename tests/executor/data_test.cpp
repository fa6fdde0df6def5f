// Byte-level training data: the shipped text loads, sequences are windows of it with targets one
// byte ahead, sampling depends only on (seed, step, global sequence index), so a global batch split
// over any dp × micro-batch grid is the same batch; unreadable or short files are input errors.
#include "executor/data.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"

using namespace shardplan;

namespace {
std::string shipped_text() {
  return std::string(SHARDPLAN_SOURCE_DIR) + "/" + kDefaultTextFile;
}
}  // namespace

TEST_CASE("data: the shipped text loads as bytes", "[executor]") {
  const TextTokens text = load_text_tokens(shipped_text(), 65);
  CHECK(text.bytes.size() == 168823);  // data/README.md
  CHECK(std::string(text.bytes.begin(), text.bytes.begin() + 43) ==
        "                    GNU GENERAL PUBLIC LICE");
}

TEST_CASE("data: a sequence is a window of the text with targets one byte ahead", "[executor]") {
  const TextTokens text = load_text_tokens(shipped_text(), 65);
  std::vector<int32_t> in(64), tg(64);
  sample_sequence(text, 1234, 7, 3, 64, in, tg);
  for (size_t i = 0; i + 1 < in.size(); ++i) CHECK(tg[i] == in[i + 1]);
  std::vector<uint8_t> window(in.begin(), in.end());
  window.push_back(static_cast<uint8_t>(tg.back()));
  CHECK(std::search(text.bytes.begin(), text.bytes.end(), window.begin(), window.end()) !=
        text.bytes.end());
  // Deterministic in (seed, step, sequence), and different when any of them changes.
  std::vector<int32_t> again(64), t2(64), other_step(64), other_seed(64);
  sample_sequence(text, 1234, 7, 3, 64, again, t2);
  sample_sequence(text, 1234, 8, 3, 64, other_step, t2);
  sample_sequence(text, 99, 7, 3, 64, other_seed, t2);
  CHECK(again == in);
  CHECK(other_step != in);
  CHECK(other_seed != in);
}

TEST_CASE("data: every dp × micro-batch split of a step sees the same global batch", "[executor]") {
  const TextTokens text = load_text_tokens(shipped_text(), 17);
  const int64_t seq = 16, global = 8;
  const auto batch_of = [&](int dp, int micro_batch) {
    const int nmb = static_cast<int>(global / (dp * micro_batch));
    std::vector<int32_t> all;
    for (int r = 0; r < dp; ++r)
      for (int mb = 0; mb < nmb; ++mb) {
        std::vector<int32_t> in(static_cast<size_t>(micro_batch * seq)), tg(in.size());
        sample_micro_batch(text, 5, 2, first_sequence(r, mb, micro_batch, nmb), micro_batch, seq,
                           in, tg);
        all.insert(all.end(), in.begin(), in.end());
      }
    return all;
  };
  const std::vector<int32_t> single = batch_of(1, 1);
  CHECK(batch_of(2, 1) == single);
  CHECK(batch_of(2, 2) == single);
  CHECK(batch_of(4, 2) == single);
  CHECK(batch_of(1, 8) == single);
  CHECK(first_sequence(1, 2, 4, 3) == 20);  // (dp_rank·num_microbatches + microbatch)·micro_batch
}

TEST_CASE("data: unreadable and too-short files are input errors", "[executor]") {
  CHECK_THROWS_WITH(load_text_tokens("/nonexistent/text.txt", 2),
                    "/nonexistent/text.txt: cannot read the training text");
  const auto path = std::filesystem::temp_directory_path() / "shardplan_short_text.txt";
  std::ofstream(path) << "abc";
  CHECK_THROWS_WITH(load_text_tokens(path.string(), 65),
                    path.string() + ": holds 3 bytes, fewer than the 65 a sequence needs");
  std::filesystem::remove(path);
}

// Tensor parallelism as picotron tests it: shard a plain layer (and a whole model) into tp = 2 and
// 4 parts, run the shards on threads whose all-reduce / all-gather / reduce-scatter sum and gather
// exactly as the caller's collectives would, and compare with the unsharded run, forward and
// backward, with and without sequence parallelism. fp32; tolerance 1e-5 of the largest magnitude
// (the shards only reorder fp32 sums: measured errors are ~1e-7).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "executor/counter_rng.h"
#include "test_models.h"
#include "tests/executor/chunk.h"
#include "thread_tp_comm.h"

using namespace shardplan;

namespace {

constexpr double kTolerance = 1e-5;

// Fills a rank's parameters with N(0, 0.3²) values that depend on the tensor and the element's
// index in the full tensor only, so every shard holds exactly the unsharded model's values.
std::vector<float> shard_values(const ParamLayout& layout) {
  std::vector<float> v(static_cast<size_t>(layout.total));
  for (const ParamTensor& t : layout.tensors)
    for (int64_t i = 0; i < t.count(); ++i)
      v[static_cast<size_t>(t.offset + i)] = static_cast<float>(
          0.3 * counter_normal(3, hash_name(t.init_name), static_cast<uint64_t>(full_index(t, i))));
  return v;
}

// Largest |shard − full| over the shard's elements, relative to the largest |full| of the same
// tensors.
double gradient_error(const ParamLayout& full_layout, const std::vector<float>& full,
                      const ParamLayout& layout, const std::vector<float>& shard) {
  double err = 0, scale = 0;
  for (const ParamTensor& t : layout.tensors) {
    const ParamTensor& f = full_layout.get(t.name);
    for (int64_t i = 0; i < t.count(); ++i) {
      const double want = full[static_cast<size_t>(f.offset + full_index(t, i))];
      err = std::max(err, std::abs(shard[static_cast<size_t>(t.offset + i)] - want));
      scale = std::max(scale, std::abs(want));
    }
  }
  return err / scale;
}

std::vector<int32_t> tokens_of(int64_t n, int64_t mul, int64_t add) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    t[static_cast<size_t>(i)] = static_cast<int32_t>((mul * i + add) % 256);
  return t;
}

struct RunResult {
  ParamLayout layout;  // of the rank's parameters and gradients
  double loss = 0;
  std::vector<float> grads;
  std::vector<float> dx;  // layer-level runs: the input gradient (this rank's tokens)
  std::vector<float> y;   // layer-level runs: the output (this rank's tokens)
};

// Forward and backward of the whole model (embedding, layers, head) on one tp rank.
RunResult run_model(const Model& m, const RankShard& shard, bool sp, TpComm<float>& tp) {
  TensorAllocator alloc;
  alloc.set_poison_for_overwrite(true);
  LayerContext<float> c{alloc, tp, nullptr};
  const ParamLayout layout = param_layout(m, shard);
  const std::vector<float> params = shard_values(layout);
  const LayerDims d = layer_dims(m, shard, 2, 8, sp);
  const auto inputs = tokens_of(d.tokens(), 37, 11), targets = tokens_of(d.tokens(), 53, 3);
  const MicroBatchTokens tokens{inputs.data(), targets.data()};
  RunResult r;
  r.layout = layout;
  r.grads.assign(params.size(), 0.0f);
  ChunkSaved<float> saved;
  const ModelChunk chunk = whole_model_chunk(m);
  r.loss = chunk_forward(chunk, layout, params.data(), d, tokens, {}, Recompute::none, saved, c)
               .loss_sum;
  chunk_backward<float>(chunk, layout, params.data(), r.grads.data(), d, tokens, std::move(saved),
                        nullptr, 1.0f / static_cast<float>(d.tokens()), c);
  if (d.sequence_parallel) all_reduce_sequence_parallel_grads(layout, r.grads.data(), tp);
  return r;
}

// Forward and backward of layer 0 alone, from a fixed input and output gradient.
RunResult run_layer(const Model& m, const RankShard& shard, bool sp, Recompute mode,
                    TpComm<float>& tp) {
  TensorAllocator alloc;
  alloc.set_poison_for_overwrite(true);
  LayerContext<float> c{alloc, tp, nullptr};
  RankShard one = shard;
  one.layers = {0};
  one.embedding = one.head = false;
  const ParamLayout layout = param_layout(m, one);
  const std::vector<float> params = shard_values(layout);
  const LayerDims d = layer_dims(m, one, 2, 8, sp);
  const int64_t first = d.sequence_parallel ? tp.rank() * d.local_tokens() : 0;
  const auto input = [&](uint64_t stream, Buffer<float>& b) {
    for (int64_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<float>(
          counter_normal(5, stream, static_cast<uint64_t>(first * m.hidden + i)));
  };
  Buffer<float> x =
      alloc.allocate<float>(MemoryCategory::activations, d.local_tokens() * m.hidden, "x");
  Buffer<float> dy =
      alloc.allocate<float>(MemoryCategory::buffers, d.local_tokens() * m.hidden, "dy");
  input(1, x);
  input(2, dy);
  RunResult r;
  r.layout = layout;
  r.grads.assign(params.size(), 0.0f);
  BlockSaved<float> saved;
  const auto w = block_tensors(layout, 0, params.data());
  Buffer<float> y = block_forward(d, w, std::move(x), mode, saved, c);
  Buffer<float> dx = block_backward(d, w, block_tensors(layout, 0, r.grads.data()),
                                    std::move(saved), dy.data(), c);
  if (d.sequence_parallel) all_reduce_sequence_parallel_grads(layout, r.grads.data(), tp);
  r.y.assign(y.data(), y.data() + y.size());
  r.dx.assign(dx.data(), dx.data() + dx.size());
  return r;
}

double max_relative_difference(const std::vector<float>& part, const std::vector<float>& full,
                               size_t offset) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < part.size(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(part[i] - full[offset + i])));
    scale = std::max(scale, static_cast<double>(std::abs(full[offset + i])));
  }
  return err / scale;
}

// A 1-layer Llama-like model whose 8 heads and 4 kv heads split over tp = 2 and 4.
Model llama_for_tp() {
  return test::llama_like(1, 32, 8, 4, 48);
}

}  // namespace

TEST_CASE("tensor parallel: one layer sharded 2 and 4 ways equals the unsharded layer",
          "[executor]") {
  for (const Model& m : {test::gpt2_like(1), llama_for_tp()})
    for (int tp : {2, 4})
      for (bool sp : {false, true})
        for (Recompute mode : {Recompute::none, Recompute::full}) {
          INFO(m.name << " tp=" << tp << " sp=" << sp
                      << " recompute=" << enum_name(mode, kRecomputeNames));
          SingleRankTpComm<float> single;
          const RunResult full = run_layer(m, whole_model(m), false, Recompute::none, single);
          test::ThreadTpGroup<float> group(tp);
          std::vector<RunResult> parts(static_cast<size_t>(tp));
          group.run([&](int r) {
            test::ThreadTpComm<float> comm(group, r);
            parts[static_cast<size_t>(r)] =
                run_layer(m, RankShard{tp, r, {0}, false, false}, sp, mode, comm);
          });
          for (int r = 0; r < tp; ++r) {
            const RunResult& p = parts[static_cast<size_t>(r)];
            const size_t offset = sp ? static_cast<size_t>(r) * p.y.size() : 0;
            const double y_err = max_relative_difference(p.y, full.y, offset);
            const double dx_err = max_relative_difference(p.dx, full.dx, offset);
            const double g_err = gradient_error(full.layout, full.grads, p.layout, p.grads);
            INFO("rank " << r << ": output " << y_err << ", input gradient " << dx_err
                         << ", weight gradients " << g_err);
            CHECK(y_err <= kTolerance);
            CHECK(dx_err <= kTolerance);
            CHECK(g_err <= kTolerance);
          }
        }
}

TEST_CASE("tensor parallel: vocabulary-parallel embedding and cross-entropy in a whole model",
          "[executor]") {
  for (const Model& m : {test::gpt2_like(2), llama_for_tp()})
    for (int tp : {2, 4})
      for (bool sp : {false, true}) {
        INFO(m.name << " tp=" << tp << " sp=" << sp);
        SingleRankTpComm<float> single;
        const RunResult full = run_model(m, whole_model(m), false, single);
        test::ThreadTpGroup<float> group(tp);
        std::vector<RunResult> parts(static_cast<size_t>(tp));
        const auto shard_of = [&](int r) {
          RankShard s = whole_model(m);
          s.tp = tp;
          s.tp_rank = r;
          return s;
        };
        group.run([&](int r) {
          test::ThreadTpComm<float> comm(group, r);
          parts[static_cast<size_t>(r)] = run_model(m, shard_of(r), sp, comm);
        });
        for (int r = 0; r < tp; ++r) {
          const RunResult& p = parts[static_cast<size_t>(r)];
          const double g_err = gradient_error(full.layout, full.grads, p.layout, p.grads);
          INFO("rank " << r << ": loss " << p.loss << " vs " << full.loss << ", gradients "
                       << g_err);
          CHECK(std::abs(p.loss - full.loss) <= kTolerance * std::abs(full.loss));
          CHECK(g_err <= kTolerance);
        }
      }
}

// A RankRuntime that runs another and logs every ZeRO collective its groups run (GroupComm's
// reduce_scatter_blocks and all_gather_blocks: which group, which call, how many elements a
// member), for the tests that check what the interpreter sends; it can also drop or resize the
// layers' calls (edit_layers_call), for the tests that check the interpreter notices. Installed
// through InterpreterSettings::wrap_runtime.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "executor/runtime/rank_runtime.h"

namespace shardplan::test {

struct BlocksCall {
  Group group = Group::dp;
  Collective op = Collective::reduce_scatter;
  int64_t count = 0;  // elements each member sends (all-gather) or receives (reduce-scatter)
  Dtype type = Dtype::fp32;
};

// What to do with a layers' call (all_reduce, all_gather, reduce_scatter) of `count` elements on
// `group`: run it with the count returned, or drop it (nullopt).
using LayersCallEdit =
    std::function<std::optional<int64_t>(Group group, Collective op, int64_t count)>;

class RecordingGroupComm final : public GroupComm {
 public:
  RecordingGroupComm(GroupComm& inner, Group group, std::vector<BlocksCall>& log,
                     const LayersCallEdit& edit)
      : inner_(inner), group_(group), log_(log), edit_(edit) {}
  int size() const override { return inner_.size(); }
  int rank() const override { return inner_.rank(); }
  void all_reduce(void* x, int64_t count, Dtype type, ReduceOp op) override {
    inner_.calls = calls;
    if (const auto n = edited(Collective::all_reduce, count)) inner_.all_reduce(x, *n, type, op);
  }
  void all_gather(const void* part, void* full, int64_t count, Dtype type) override {
    inner_.calls = calls;
    if (const auto n = edited(Collective::all_gather, count))
      inner_.all_gather(part, full, *n, type);
  }
  void reduce_scatter(const void* full, void* part, int64_t count, Dtype type) override {
    inner_.calls = calls;
    if (const auto n = edited(Collective::reduce_scatter, count))
      inner_.reduce_scatter(full, part, *n, type);
  }
  void reduce_scatter_blocks(const void* in, void* part, int64_t count, Dtype type) override {
    inner_.calls = calls;
    log_.push_back({group_, Collective::reduce_scatter, count, type});
    inner_.reduce_scatter_blocks(in, part, count, type);
  }
  void all_gather_blocks(const void* part, void* out, int64_t count, Dtype type) override {
    inner_.calls = calls;
    log_.push_back({group_, Collective::all_gather, count, type});
    inner_.all_gather_blocks(part, out, count, type);
  }

 private:
  std::optional<int64_t> edited(Collective op, int64_t count) const {
    return edit_ ? edit_(group_, op, count) : count;
  }

  GroupComm& inner_;
  Group group_;
  std::vector<BlocksCall>& log_;
  const LayersCallEdit& edit_;
};

class RecordingRuntime final : public RankRuntime {
 public:
  explicit RecordingRuntime(std::unique_ptr<RankRuntime> inner) : inner_(std::move(inner)) {
    for (const auto& [g, name] : kGroupNames)
      groups_[static_cast<size_t>(g)].emplace(inner_->group(g), g, log, edit_layers_call);
    if (GroupComm* e = inner_->embedding_group())
      embedding_.emplace(*e, Group::pp, log, edit_layers_call);
  }

  Kernels<float>& f32_kernels() override { return inner_->f32_kernels(); }
  Kernels<bf16>& bf16_kernels() override { return inner_->bf16_kernels(); }
  TensorAllocator& allocator() override { return inner_->allocator(); }
  StepStreams& streams() override { return inner_->streams(); }
  GroupComm& group(Group g) override { return *groups_[static_cast<size_t>(g)]; }
  GroupComm* embedding_group() override { return embedding_ ? &*embedding_ : nullptr; }
  PipelineP2p& p2p() override { return inner_->p2p(); }
  void release_bytes_after_use(Buffer<std::byte> b) override {
    inner_->release_bytes_after_use(std::move(b));
  }
  void finish_releases(bool wait) override { inner_->finish_releases(wait); }

  std::vector<BlocksCall> log;      // every ZeRO collective, in the order they ran
  LayersCallEdit edit_layers_call;  // none: every layers' call runs as made

 private:
  std::unique_ptr<RankRuntime> inner_;
  std::array<std::optional<RecordingGroupComm>, kGroupNames.size()> groups_;
  std::optional<RecordingGroupComm> embedding_;
};

}  // namespace shardplan::test

// Context parallelism against the unsplit model: each of cp = 2 and 4 thread ranks runs the whole
// model on its load-balanced chunks of the same sequences, attention all-gathering K and V and
// reduce-scattering dK and dV over the threads; the ranks' summed losses and gradients equal one
// rank's run over whole sequences within 1e-5 relative (fp32 sums in another order), under every
// recompute mode, and the cp collectives are the schedule's, in its order and of its bytes.
#include "executor/layers/context_parallel.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/schedule.h"
#include "executor/state/param_init.h"
#include "test_models.h"
#include "tests/executor/chunk.h"
#include "thread_tp_comm.h"

using namespace shardplan;

namespace {

constexpr int64_t kBatch = 2;
constexpr int64_t kSeq = 16;

// A cp collective as the schedule's Action names it: op and nccl-tests' bytes (the all-gather's
// output, the reduce-scatter's input).
using CpCall = std::pair<Collective, int64_t>;

// The cp group's collectives, recorded as they pass to the thread group.
class RecordingComm final : public TpComm<float> {
 public:
  explicit RecordingComm(TpComm<float>& inner) : inner_(inner) {}
  int size() const override { return inner_.size(); }
  int rank() const override { return inner_.rank(); }
  void all_reduce(std::span<float> x, ReduceOp op) override {
    calls.emplace_back(Collective::all_reduce, bytes(x.size()));
    inner_.all_reduce(x, op);
  }
  void all_gather(std::span<const float> part, std::span<float> full) override {
    calls.emplace_back(Collective::all_gather, bytes(full.size()));
    inner_.all_gather(part, full);
  }
  void reduce_scatter(std::span<const float> full, std::span<float> part) override {
    calls.emplace_back(Collective::reduce_scatter, bytes(full.size()));
    inner_.reduce_scatter(full, part);
  }

  std::vector<CpCall> calls;

 private:
  static int64_t bytes(size_t elements) { return static_cast<int64_t>(elements * sizeof(float)); }
  TpComm<float>& inner_;
};

struct RankRun {
  double loss_sum = 0;
  std::vector<float> grads;  // the whole model's flat layout
  std::vector<CpCall> cp_calls;
};

// Forward and backward of the whole model on cp rank `cp_rank`'s tokens of kBatch sequences.
RankRun run_model(const Model& m, Recompute mode, int cp, int cp_rank, TpComm<float>* cp_comm) {
  TensorAllocator alloc;
  alloc.set_poison_for_overwrite(true);
  SingleRankTpComm<float> tp;
  RecordingComm recorded(*cp_comm);
  LayerContext<float> c{alloc, tp, nullptr, &recorded};
  const RankShard shard = whole_model(m);
  const ParamLayout layout = param_layout(m, shard);
  std::vector<float> params(static_cast<size_t>(layout.total));
  init_parameters(m, layout, 7, std::span<float>(params));
  const LayerDims d = layer_dims(m, shard, kBatch, kSeq, false, cp, cp_rank);
  std::vector<int32_t> inputs(kBatch * kSeq), targets(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = static_cast<int32_t>((37 * i + 11) % 256);
    targets[i] = static_cast<int32_t>((53 * i + 3) % 256);
  }
  std::vector<int32_t> local_inputs(static_cast<size_t>(d.tokens())),
      local_targets(local_inputs.size());
  take_local_tokens(d, inputs.data(), local_inputs.data());
  take_local_tokens(d, targets.data(), local_targets.data());
  const MicroBatchTokens tokens{local_inputs.data(), local_targets.data()};
  RankRun r;
  r.grads.assign(params.size(), 0.0f);
  ChunkSaved<float> saved;
  const ModelChunk chunk = whole_model_chunk(m);
  r.loss_sum = chunk_forward(chunk, layout, params.data(), d, tokens, {}, mode, saved, c).loss_sum;
  chunk_backward<float>(chunk, layout, params.data(), r.grads.data(), d, tokens, std::move(saved),
                        nullptr, 1.0f / static_cast<float>(kBatch * kSeq), c);
  r.cp_calls = std::move(recorded.calls);
  return r;
}

// The cp collectives of rank 0's program for one micro-batch of kBatch sequences, in order.
std::vector<CpCall> scheduled_cp_calls(const Model& m, Recompute mode, int cp) {
  Training t;
  t.global_batch = kBatch;
  t.seq_len = kSeq;
  t.dtype = t.grad_dtype = Dtype::fp32;
  Layout l;
  l.cp = cp;
  l.micro_batch = kBatch;
  l.recompute = mode;
  std::vector<CpCall> out;
  for (const Action& a : build_program(m, t, l, 0).actions)
    if (a.kind == ActionKind::collective && a.group == Group::cp) out.emplace_back(a.op, a.bytes);
  return out;
}

// Largest |got − want| of each tensor relative to its largest |want|. The key bias's gradient is 0
// in exact arithmetic (softmax ignores a shift of a query's scores): what fp32 leaves of it is
// rounding noise (~1e-11), so a tensor whose gradient is below a millionth of the model's largest
// is measured against the model's largest instead.
double worst_tensor_error(const ParamLayout& layout, const std::vector<float>& got,
                          const std::vector<float>& want) {
  double model_scale = 0;
  for (const float w : want) model_scale = std::max(model_scale, double{std::abs(w)});
  double worst = 0;
  for (const ParamTensor& t : layout.tensors) {
    double err = 0, scale = 0;
    for (auto i = static_cast<size_t>(t.offset); i < static_cast<size_t>(t.offset + t.count());
         ++i) {
      err = std::max(err, double{std::abs(got[i] - want[i])});
      scale = std::max(scale, double{std::abs(want[i])});
    }
    worst = std::max(worst, err / (scale < 1e-6 * model_scale ? model_scale : scale));
  }
  return worst;
}

}  // namespace

TEST_CASE("context parallel: Megatron-LM's load-balanced chunks", "[executor]") {
  const Model m = test::gpt2_like();
  // seq_len 16 over cp = 2: chunks of 4, rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  const LayerDims d2 = layer_dims(m, whole_model(m), 1, 16, false, 2, 1);
  CHECK(d2.seq == 8);
  CHECK(d2.kv_seq() == 16);
  const std::vector<int64_t> rank1 = {4, 5, 6, 7, 8, 9, 10, 11};
  for (int64_t i = 0; i < 8; ++i) CHECK(d2.position(i) == rank1[static_cast<size_t>(i)]);
  const std::vector<int64_t> rank0 = {0, 1, 2, 3, 12, 13, 14, 15};
  for (int64_t i = 0; i < 8; ++i) CHECK(d2.position_on(0, i) == rank0[static_cast<size_t>(i)]);
  // cp = 4: chunks of 2; rank 2 holds chunks 2 and 5.
  const LayerDims d4 = layer_dims(m, whole_model(m), 2, 16, false, 4, 2);
  std::vector<int32_t> whole(32), local(8);  // two sequences: token = index in the micro-batch
  std::iota(whole.begin(), whole.end(), 0);
  take_local_tokens(d4, whole.data(), local.data());
  CHECK(local == std::vector<int32_t>{4, 5, 10, 11, 20, 21, 26, 27});
  CHECK_THROWS_AS(layer_dims(m, whole_model(m), 1, 12, false, 4, 0), InputError);
}

TEST_CASE("context parallel: a model split 2 and 4 ways equals the unsplit model", "[executor]") {
  for (const Model& m : {test::gpt2_like(), test::llama_like()})
    for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      SingleRankTpComm<float> one;
      const RankRun full = run_model(m, mode, 1, 0, &one);
      CHECK(full.cp_calls.empty());
      for (int cp : {2, 4}) {
        INFO(m.name << " cp=" << cp << " recompute=" << enum_name(mode, kRecomputeNames));
        test::ThreadTpGroup<float> group(cp);
        std::vector<RankRun> runs(static_cast<size_t>(cp));
        group.run([&](int r) {
          test::ThreadTpComm<float> comm(group, r);
          runs[static_cast<size_t>(r)] = run_model(m, mode, cp, r, &comm);
        });
        double loss = 0;
        std::vector<float> grads(full.grads.size(), 0.0f);
        for (const RankRun& r : runs) {
          loss += r.loss_sum;
          for (size_t i = 0; i < grads.size(); ++i) grads[i] += r.grads[i];
          CHECK(r.cp_calls == scheduled_cp_calls(m, mode, cp));
        }
        CHECK(std::abs(loss - full.loss_sum) < 1e-5 * std::abs(full.loss_sum));
        CHECK(worst_tensor_error(param_layout(m, whole_model(m)), grads, full.grads) < 1e-5);
      }
    }
}

// Building a rank's program: its chunks' passes in pipeline order with the pipeline sends and
// receives around them, the data-parallel reductions and gathers hooked in, and the step's end.
#include "core/schedule.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "core/schedule_detail.h"

namespace shardplan {
namespace sd = schedule_detail;
namespace {

// Message id of a pipeline transfer, the same on both sides: micro-batch, sending virtual stage
// and direction.
int64_t message_tag(const Layout& l, int micro_batch, int sending_stage, Pass pass) {
  const int64_t stages = int64_t{l.pp} * l.vpp;
  return (micro_batch * stages + sending_stage) * 2 + (pass == Pass::backward ? 1 : 0);
}

struct PassEmitter {
  Program& p;
  const Layout& l;
  sd::DataParallel& dp;
  const std::vector<sd::Chunk>& chunks;
  int64_t p2p_bytes = 0;
  std::vector<uint32_t> deps;  // scratch
  // The last action of each (micro-batch, chunk)'s forward on the last virtual stage: its
  // backward, which receives nothing, starts from the loss, whose all-reduces end that forward on
  // the tp stream.
  std::map<std::pair<int, int>, uint32_t> loss_end;
  // The last action of a pass whose next stage is on this rank (v_placement's turn at rank pp − 1),
  // by (micro-batch, that stage, pass): the pass there starts from it, with nothing sent.
  std::map<std::tuple<int, int, Pass>, uint32_t> handed_off;
  std::vector<int> weight_grads_done = std::vector<int>(chunks.size(), 0);  // per chunk
  uint32_t latest_compute = sd::kNone;
  // Per chunk: whether its layers have W actions (split backward), so that its gradients are
  // whole, and its activations gone, only after its W (weight_grad below).
  std::vector<bool> defers = [&] {
    std::vector<bool> out;
    for (const sd::Chunk& c : chunks)
      out.push_back(std::any_of(c.units.begin(), c.units.end(),
                                [](const sd::Unit& u) { return !u.weight_grad.empty(); }));
    return out;
  }();

  uint32_t p2p(ActionKind kind, Pass pass, const PipelineStep& s, int peer_stage, int64_t tag,
               uint32_t dep) {
    const Action a{.kind = kind,
                   .stream = Stream::pp_comm,
                   .pass = pass,
                   .micro_batch = s.micro_batch,
                   .chunk = s.chunk,
                   .peer = p.groups[static_cast<size_t>(Group::pp)]
                                   [static_cast<size_t>(stage_slot(l, peer_stage).pp_rank)],
                   .tag = tag,
                   .bytes = p2p_bytes};
    return sd::emit(p, a, {dep});
  }

  // recv from the previous stage (forward) or the next (backward), the chunk's units, send on.
  void pass(const PipelineStep& s) {
    if (s.pass == Pass::weight_grad) return weight_grad(s);
    const sd::Chunk& c = chunks[s.chunk];
    const int vs = c.virtual_stage;
    const int last_stage = l.pp * l.vpp - 1;
    const Pass pass = s.pass;
    const bool forward = s.forward();
    const bool deferred = !forward && defers[static_cast<size_t>(c.chunk)];
    const int from = forward ? vs - 1 : vs + 1;
    const int to = forward ? vs + 1 : vs - 1;
    const auto here = [&](int stage) { return stage_slot(l, stage).pp_rank == p.coord.pp; };
    uint32_t prev = sd::kNone;
    if (from >= 0 && from <= last_stage && here(from)) {
      auto handed = handed_off.extract({s.micro_batch, vs, pass});
      if (!handed)  // the order runs the stage before it first
        throw std::logic_error(
            "schedule: " +
            action_name(Action{.pass = pass, .micro_batch = s.micro_batch, .chunk = c.chunk}) +
            " runs before the pass that hands it its input");
      prev = handed.mapped();
    } else if (from >= 0 && from <= last_stage) {
      prev = p2p(ActionKind::recv, pass, s, from, message_tag(l, s.micro_batch, from, pass),
                 sd::kNone);
    } else if (!forward) {
      prev = loss_end.at({s.micro_batch, c.chunk});
    }
    const bool last_backward =
        !forward && ++dp.backwards_done[c.chunk] == l.num_microbatches && !deferred;
    uint32_t last_compute = sd::kNone;
    const int n = static_cast<int>(c.units.size());
    for (int i = 0; i < n; ++i) {
      const int u = forward ? i : n - 1 - i;
      const sd::Unit& unit = c.units[u];
      const std::vector<uint32_t> gathers = sd::before_unit(p, dp, c, u, s.micro_batch, pass);
      uint32_t unit_compute = sd::kNone;
      for (const Action& step : forward ? unit.forward : unit.backward) {
        Action a = step;
        a.micro_batch = s.micro_batch;
        a.chunk = c.chunk;
        deps.clear();
        if (prev != sd::kNone && p.actions[prev].stream != a.stream) deps.push_back(prev);
        if (a.kind == ActionKind::compute) {
          if (unit_compute == sd::kNone) deps.insert(deps.end(), gathers.begin(), gathers.end());
          if (forward && last_compute == sd::kNone) a.flags |= kAllocatesActivations;
        }
        prev = sd::emit(p, a, deps);
        if (a.kind == ActionKind::compute) unit_compute = last_compute = latest_compute = prev;
      }
      sd::after_unit(p, dp, c, u, s.micro_batch, pass, unit_compute, last_backward);
    }
    // A chunk without units (a rank a framework's own split leaves without layers) passes its
    // input on: it holds no activations.
    if (!forward && last_compute != sd::kNone)
      p.actions[last_compute].flags |= deferred ? kKeepsWeightGradInputs : kFreesActivations;
    if (forward && vs == last_stage) loss_end[{s.micro_batch, c.chunk}] = prev;
    if (to >= 0 && to <= last_stage && here(to))
      handed_off[{s.micro_batch, to, pass}] = prev;
    else if (to >= 0 && to <= last_stage)
      p2p(ActionKind::send, pass, s, to, message_tag(l, s.micro_batch, vs, pass), prev);
  }

  // The layers' W in backward order, on the compute stream after the micro-batch's B. A unit's
  // gradient is whole once its W has run (the ends', which have none, once their backward has,
  // before this pass), so the last micro-batch's W hooks the gradient reductions in.
  void weight_grad(const PipelineStep& s) {
    const sd::Chunk& c = chunks[s.chunk];
    const bool last = ++weight_grads_done[c.chunk] == l.num_microbatches;
    uint32_t last_weight_grad = sd::kNone;
    for (int u = static_cast<int>(c.units.size()) - 1; u >= 0; --u) {
      for (const Action& step : c.units[u].weight_grad) {
        Action a = step;
        a.micro_batch = s.micro_batch;
        a.chunk = c.chunk;
        last_weight_grad = latest_compute = sd::emit(p, a, {});
      }
      sd::after_unit(p, dp, c, u, s.micro_batch, Pass::backward, latest_compute, last);
    }
    if (last_weight_grad != sd::kNone) p.actions[last_weight_grad].flags |= kFreesActivations;
  }
};

}  // namespace

uint32_t sd::emit(Program& p, const Action& a, std::span<const uint32_t> deps) {
  Action out = a;
  out.deps_begin = static_cast<uint32_t>(p.deps.size());
  for (uint32_t d : deps) {
    if (d == sd::kNone) continue;
    assert(d < p.actions.size());
    if (std::find(p.deps.begin() + out.deps_begin, p.deps.end(), d) == p.deps.end())
      p.deps.push_back(d);
  }
  out.deps_count = static_cast<uint32_t>(p.deps.size()) - out.deps_begin;
  p.actions.push_back(out);
  return static_cast<uint32_t>(p.actions.size() - 1);
}

std::string parts_name(PartSet s) {
  std::string out;
  for (const auto& [part, name] : kPartNames)
    if (has_part(s, part)) {
      if (!out.empty()) out += '+';
      out += name;
    }
  return out;
}

const std::vector<int64_t>& Program::members(const Action& a) const {
  assert(is_group_action(a));
  if (a.kind == ActionKind::grad_reduce && a.group == Group::pp) return embedding_group;
  return groups[static_cast<size_t>(a.group)];
}

int64_t grad_reduce_local_bytes(const Action& a, int zero, int members) {
  if (a.kind != ActionKind::grad_reduce || a.op != Collective::reduce_scatter) return 0;
  return zero_reduce_scatter_local_bytes(a.bytes, a.params, zero, members);
}

int64_t zero_reduce_scatter_local_bytes(int64_t bytes, int64_t params, int zero, int members) {
  if (zero < 1 || params == 0) return 0;
  // A ZeRO collective's bytes are its units padded to a multiple of the members
  // (core/schedule_data_parallel.cpp: padded_params), so each member's piece is an equal share.
  assert(members >= 1 && bytes % members == 0);
  const int64_t piece = bytes / members;
  if (zero == 1) return 2 * piece;
  return 3 * piece + (zero == 2 ? bytes : 0);
}

int64_t grad_bucket_params(const Training& t, const Layout& l) {
  if (t.grad_bucket_elements > 0) return t.grad_bucket_elements;
  return std::max<int64_t>(40'000'000, int64_t{1'000'000} * l.dp * l.cp);
}

bool zero1_reduced_whole(const Training& t, const Layout& l) {
  return l.zero == 1 && t.zero1_whole_all_reduce && t.grad_dtype == Dtype::fp32;
}

int64_t bucket_threshold(const Training& t, const Layout& l) {
  // ZeRO-3 shards, gathers and reduces each unit on its own, as FSDP does each wrapped
  // transformer block (Zhao et al. 2023 §3); otherwise the framework's buckets.
  if (l.zero == 3) return 1;
  if (zero1_reduced_whole(t, l)) return std::numeric_limits<int64_t>::max();
  return grad_bucket_params(t, l);
}

Program build_program(const Model& m, const Training& t, const Layout& l, int64_t rank) {
  assert(rank >= 0 && rank < l.world());
  Program p;
  p.rank = rank;
  p.coord = rank_coord(l, rank);
  for (const auto& [g, name] : kGroupNames)
    p.groups[static_cast<size_t>(g)] = group_ranks(l, rank, g);
  const auto& stages = p.groups[static_cast<size_t>(Group::pp)];
  if (sd::holds_embedding_pair(m, l, p.coord.pp))
    p.embedding_group = {stages.front(), stages.back()};

  std::vector<sd::Chunk> chunks;
  for (int c = 0; c < l.vpp; ++c)
    chunks.push_back(sd::build_chunk(m, t, l, c, virtual_stage(l, p.coord.pp, c)));
  sd::DataParallel dp = sd::plan_data_parallel(t, l, chunks);
  sd::emit_step_start_gathers(p, dp, chunks);
  size_t per_microbatch = 0;  // actions of one micro-batch's passes, to size the program once
  for (const sd::Chunk& c : chunks)
    for (const sd::Unit& u : c.units)
      per_microbatch += 2 + u.forward.size() + u.backward.size() + u.weight_grad.size();
  p.actions.reserve(per_microbatch * static_cast<size_t>(l.num_microbatches) + 4 * (l.vpp + 1));
  p.deps.reserve(p.actions.capacity());
  PassEmitter emitter{p, l, dp, chunks, sd::p2p_bytes(m, t, l), {}, {}, {}};
  for (const PipelineStep& s : pipeline_order(l, p.coord.pp)) emitter.pass(s);
  sd::emit_step_end(p, dp, m, l, chunks);
  return p;
}

StepPrograms build_step(const Model& m, const Training& t, const Layout& l, bool exploit_symmetry) {
  StepPrograms s;
  s.world = l.world();
  if (exploit_symmetry) {
    for (int stage = 0; stage < l.pp; ++stage) {
      RankCoord c;
      c.pp = stage;
      s.programs.push_back(build_program(m, t, l, rank_of(l, c)));
    }
  } else {
    for (int64_t rank = 0; rank < s.world; ++rank)
      s.programs.push_back(build_program(m, t, l, rank));
  }
  s.ranks_per_program = s.world / static_cast<int64_t>(s.programs.size());
  return s;
}

std::string action_name(const Action& a) {
  std::string name = action_kind_name(a);
  if (a.micro_batch >= 0) name += " mb" + std::to_string(a.micro_batch);
  if (a.chunk >= 0) name += " c" + std::to_string(a.chunk);
  return name;
}

std::string action_kind_name(const Action& a) {
  std::string name;
  switch (a.kind) {
    case ActionKind::compute:
      name = enum_name(a.pass, kPassNames);
      if (a.flags & kInputGradOnly) name += " input";
      break;
    case ActionKind::send:
    case ActionKind::recv:
      name = std::string(enum_name(a.kind, kActionKindNames)) +
             (a.pass == Pass::forward ? " activation" : " gradient");
      break;
    case ActionKind::collective:
      name = std::string(enum_name(a.group, kGroupNames)) + " " +
             std::string(enum_name(a.op, kCollectiveNames)) + (is_loss_reduction(a) ? " loss" : "");
      break;
    case ActionKind::grad_reduce:
    case ActionKind::param_gather:
      name = std::string(enum_name(a.kind, kActionKindNames)) + " " +
             (a.kind == ActionKind::grad_reduce && a.group == Group::pp
                  ? std::string("embedding")
                  : std::string(enum_name(a.group, kGroupNames))) +
             " " + std::string(enum_name(a.op, kCollectiveNames));
      break;
    case ActionKind::optimizer_step:
      name = "optimizer_step";
      break;
  }
  return name;
}

}  // namespace shardplan

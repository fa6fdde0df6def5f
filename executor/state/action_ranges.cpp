#include "executor/state/action_ranges.h"

#include <algorithm>

namespace shardplan {

namespace {

// Elements of the tensors `pick` selects (they are contiguous in the layout).
template <class Pick>
ElementRange tensors_range(const ParamLayout& layout, Pick pick) {
  ElementRange r{layout.total, 0};
  for (const ParamTensor& t : layout.tensors)
    if (pick(t)) {
      r.begin = std::min(r.begin, t.offset);
      r.end = std::max(r.end, t.offset + t.count());
    }
  return r.end > r.begin ? r : ElementRange{};
}

// core/schedule.h: a ZeRO-3 gather (one before a use: it has a pass) of the head with the
// embedding bit gathers the tied word embedding the head borrows.
bool borrows_word_embedding(const Action& a) {
  return a.kind == ActionKind::param_gather && a.pass != Pass::none &&
         has_part(a.parts, Part::head) && has_part(a.parts, Part::embedding);
}

}  // namespace

ElementRange embedding_range(const ParamLayout& layout) {
  return tensors_range(layout, [](const ParamTensor& x) {
    return x.component == ParamComponent::embedding ||
           x.component == ParamComponent::position_embedding;
  });
}

ElementRange head_range(const ParamLayout& layout) {
  return tensors_range(layout, [](const ParamTensor& x) {
    return x.layer < 0 &&
           (x.component == ParamComponent::norms || x.component == ParamComponent::head);
  });
}

std::vector<ElementRange> action_ranges(const ParamLayout& layout, const Action& a) {
  std::vector<ElementRange> out;
  const auto add = [&](ElementRange r) {
    if (r.count() == 0) return;
    if (!out.empty() && out.back().end == r.begin)
      out.back().end = r.end;
    else
      out.push_back(r);
  };
  if (borrows_word_embedding(a)) {
    const ParamTensor& wte = layout.get("wte");
    add({wte.offset, wte.offset + wte.count()});
  } else if (has_part(a.parts, Part::embedding)) {
    add(embedding_range(layout));
  }
  for (int layer = a.layer_begin; layer < a.layer_end; ++layer) add(layout.layer_range(layer));
  if (has_part(a.parts, Part::head)) add(head_range(layout));
  return out;
}

}  // namespace shardplan

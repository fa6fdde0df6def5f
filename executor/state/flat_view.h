// Where a rank's flat buffer (param_layout) lies in memory: the whole buffer at one pointer, or
// pieces of it in allocations of their own — ZeRO-3's gathered units, where the tied head under
// pp = 1 reads its final norm from one piece and the word embedding it borrows from another.
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

#include "executor/state/param_layout.h"

namespace shardplan {

// Elements `range` of the flat buffer, stored at `data` (range.count() elements).
template <class T>
struct FlatPiece {
  ElementRange range;
  T* data = nullptr;
};

template <class T>
struct FlatView {
  std::vector<FlatPiece<T>> pieces;

  // The whole buffer (layout.total elements) at `data`.
  static FlatView whole(T* data, const ParamLayout& layout) {
    return {{{{0, layout.total}, data}}};
  }

  // Tensor t's first element, in the piece that holds all of it (asserted: a unit's tensors lie
  // in its own pieces).
  T* at(const ParamTensor& t) const {
    for (const FlatPiece<T>& p : pieces)
      if (p.range.begin <= t.offset && t.offset + t.count() <= p.range.end)
        return p.data + (t.offset - p.range.begin);
    assert(false && "no piece of the view holds the tensor");
    return nullptr;
  }
};

}  // namespace shardplan

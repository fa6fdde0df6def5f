#include "simulator/caching_allocator.h"

#include <algorithm>
#include <cassert>
#include <functional>

namespace shardplan {

namespace {

int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

CachingAllocator::Handle CachingAllocator::new_segment(int64_t rounded, bool small) {
  // get_allocation_size: a small request gets a 2 MiB segment, a request under 10 MiB a 20 MiB
  // one (later requests of its size split it), a larger one a segment of its own size.
  const int64_t size = small                      ? kSmallBuffer
                       : rounded < kMinLargeAlloc ? kLargeBuffer
                                                  : round_up(rounded, kRoundLarge);
  if (limit_ > 0 && reserved_ + size > limit_) release_cached_segments();
  blocks_.push_back(Block{.address = next_address_, .size = size, .small_pool = small});
  next_address_ += size;
  reserved_ += size;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return static_cast<Handle>(blocks_.size() - 1);
}

void CachingAllocator::release_cached_segments() {
  // A cached block without neighbours is its whole segment; its entry in the pool goes stale.
  for (Block& b : blocks_)
    if (b.cached && b.prev < 0 && b.next < 0 && b.size > 0) {
      b.cached = false;
      reserved_ -= b.size;
      b.size = 0;
    }
}

CachingAllocator::Handle CachingAllocator::grow_pool(int64_t rounded, bool small) {
  const int64_t page = small ? kSmallBuffer : kLargeBuffer;  // ExpandableSegment's segment_size
  Handle& last = last_[slot(small)];
  int64_t mapped = 0;
  if (last >= 0 && at(last).cached) {
    uncache(last);
    mapped = round_up(rounded - at(last).size, page);
  } else {
    const int64_t end = last < 0 ? (small ? 0 : kLargePoolBase) : at(last).address + at(last).size;
    blocks_.push_back(Block{.address = end, .small_pool = small, .prev = last});
    const auto h = static_cast<Handle>(blocks_.size() - 1);
    if (last >= 0) at(last).next = h;
    last = h;
    mapped = round_up(rounded, page);
  }
  at(last).size += mapped;
  reserved_ += mapped;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return last;
}

void CachingAllocator::Free::add(const Block& b, Handle h) {
  std::vector<Entry>& bin = by_size_[b.size];
  bin.push_back({b.address, h, b.cached_as});
  std::push_heap(bin.begin(), bin.end(), std::greater<>());
}

std::optional<CachingAllocator::Handle> CachingAllocator::Free::take(
    int64_t size, const std::vector<Block>& blocks) {
  for (auto bin = by_size_.lower_bound(size); bin != by_size_.end();) {
    std::vector<Entry>& heap = bin->second;
    while (!heap.empty()) {
      const Entry e = heap.front();
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.pop_back();
      const Block& b = blocks[static_cast<size_t>(e.handle)];
      if (b.cached && b.cached_as == e.cached_as) return e.handle;  // still cached as entered
    }
    bin = by_size_.erase(bin);
  }
  return std::nullopt;
}

void CachingAllocator::cache(Handle h) {
  Block& b = blocks_[static_cast<size_t>(h)];
  b.cached = true;
  ++b.cached_as;
  pool(b.small_pool).add(b, h);
}

void CachingAllocator::uncache(Handle h) {
  blocks_[static_cast<size_t>(h)].cached = false;
}

CachingAllocator::Handle CachingAllocator::allocate(int64_t bytes) {
  assert(bytes >= 0);
  const int64_t rounded = std::max(kMinBlockSize, round_up(bytes, kMinBlockSize));
  const bool small = rounded <= kSmallSize;
  Handle h;
  if (const std::optional<Handle> fit = pool(small).take(rounded, blocks_)) {
    h = *fit;
    uncache(h);
  } else {
    h = expandable_ ? grow_pool(rounded, small) : new_segment(rounded, small);
  }
  // should_split: a small block (or any, with expandable segments) whenever a minimum block is
  // left over, a large one only when more than a small request would be (the rest of a large
  // block is not worth caching).
  const int64_t remaining = blocks_[static_cast<size_t>(h)].size - rounded;
  if (small || expandable_ ? remaining >= kMinBlockSize : remaining > kSmallSize) {
    const Block& b = blocks_[static_cast<size_t>(h)];
    blocks_.push_back(Block{.address = b.address + rounded,
                            .size = remaining,
                            .small_pool = small,
                            .prev = h,
                            .next = b.next});
    const auto rest = static_cast<Handle>(blocks_.size() - 1);
    Block& split = blocks_[static_cast<size_t>(h)];
    if (split.next >= 0) blocks_[static_cast<size_t>(split.next)].prev = rest;
    split.next = rest;
    split.size = rounded;
    if (last_[slot(small)] == h) last_[slot(small)] = rest;
    cache(rest);
  }
  Block& b = blocks_[static_cast<size_t>(h)];
  allocated_ += b.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return h;
}

void CachingAllocator::absorb(Handle h, Handle other) {
  Block& b = blocks_[static_cast<size_t>(h)];
  Block& o = blocks_[static_cast<size_t>(other)];
  uncache(other);
  if (o.address < b.address) {  // other is before h: h takes its start and its prev
    b.address = o.address;
    b.prev = o.prev;
    if (b.prev >= 0) blocks_[static_cast<size_t>(b.prev)].next = h;
  } else {
    b.next = o.next;
    if (b.next >= 0) blocks_[static_cast<size_t>(b.next)].prev = h;
    if (last_[slot(b.small_pool)] == other) last_[slot(b.small_pool)] = h;
  }
  b.size += o.size;
  o.size = 0;
}

void CachingAllocator::release(Handle h) {
  Block& b = blocks_[static_cast<size_t>(h)];
  assert(!b.cached);
  allocated_ -= b.size;
  // free_block merges the block with free neighbours of its segment, so a later request can take
  // them whole.
  for (const Handle n :
       {blocks_[static_cast<size_t>(h)].prev, blocks_[static_cast<size_t>(h)].next})
    if (n >= 0 && blocks_[static_cast<size_t>(n)].cached) absorb(h, n);
  cache(h);
}

}  // namespace shardplan

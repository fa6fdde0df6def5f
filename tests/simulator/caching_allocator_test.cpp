#include "simulator/caching_allocator.h"

#include <catch2/catch.hpp>

using namespace shardplan;

namespace {
constexpr int64_t kMiB = 1 << 20;
}

TEST_CASE("requests are rounded, and segments sized, as PyTorch's allocator does",
          "[memory][allocator]") {
  CachingAllocator a;
  a.allocate(1);  // 512 B, in a 2 MiB small-pool segment
  CHECK(a.allocated_bytes() == 512);
  CHECK(a.reserved_bytes() == 2 * kMiB);
  a.allocate(3 * kMiB);  // a 1–10 MiB request: a 20 MiB segment, split
  CHECK(a.reserved_bytes() == 22 * kMiB);
  a.allocate(5 * kMiB);  // the same segment's rest serves it
  CHECK(a.reserved_bytes() == 22 * kMiB);
  // 12 MiB of the segment are left; from 10 MiB a request too large for them gets a segment of
  // its own, rounded to 2 MiB, and (the rest under 1 MiB) handed out whole.
  a.allocate(13 * kMiB + 1);
  CHECK(a.reserved_bytes() == 22 * kMiB + 14 * kMiB);
  CHECK(a.allocated_bytes() == 512 + 8 * kMiB + 14 * kMiB);
}

TEST_CASE("a freed block serves a smaller request, and a larger one needs a new segment",
          "[memory][allocator]") {
  CachingAllocator a;
  const auto big = a.allocate(100 * kMiB);
  a.release(big);
  CHECK(a.allocated_bytes() == 0);
  CHECK(a.reserved_bytes() == 100 * kMiB);  // cached, not given back
  const auto part = a.allocate(60 * kMiB);  // best fit: the cached block, split
  CHECK(a.reserved_bytes() == 100 * kMiB);
  a.allocate(50 * kMiB);  // the 40 MiB left cannot hold it
  CHECK(a.reserved_bytes() == 150 * kMiB);
  CHECK(a.peak_allocated_bytes() == 110 * kMiB);
  // Freed again, the split halves merge: 100 MiB fits in one piece.
  a.release(part);
  a.allocate(100 * kMiB);
  CHECK(a.reserved_bytes() == 150 * kMiB);
}

TEST_CASE("past its limit the allocator frees the cached whole segments before a new one",
          "[memory][allocator]") {
  for (const int64_t limit : {int64_t{0}, 150 * kMiB}) {
    CachingAllocator a;
    a.set_limit(limit);
    const auto kept = a.allocate(60 * kMiB);
    const auto second = a.allocate(40 * kMiB);
    a.release(a.allocate(20 * kMiB));  // a whole segment, cached
    a.release(a.allocate(30 * kMiB));  // another: the cached 20 MiB cannot hold it
    a.release(second);                 // also whole: its own segment
    CHECK(a.reserved_bytes() == 150 * kMiB);
    a.allocate(70 * kMiB);  // no cached block holds it
    // Without a limit the segment comes on top; with one, the three cached segments go first
    // (release_cached_blocks), the block still held stays.
    CHECK(a.reserved_bytes() == (limit == 0 ? 220 : 130) * kMiB);
    CHECK(a.peak_reserved_bytes() == (limit == 0 ? 220 : 150) * kMiB);
    CHECK(a.allocated_bytes() == 130 * kMiB);
    // The freed segments are gone, not cached: a request they would have held needs a new one.
    a.allocate(20 * kMiB);
    CHECK(a.reserved_bytes() == (limit == 0 ? 220 : 150) * kMiB);
    a.release(kept);
  }
}

TEST_CASE("past its limit a segment partly held keeps its cached rest", "[memory][allocator]") {
  CachingAllocator a;
  a.set_limit(120 * kMiB);
  a.release(a.allocate(100 * kMiB));
  a.allocate(60 * kMiB);  // the cached block, split: 40 MiB cached beside the held 60
  a.allocate(50 * kMiB);  // the rest cannot hold it; past the limit, but nothing to free
  CHECK(a.reserved_bytes() == 150 * kMiB);
  a.allocate(40 * kMiB);  // the cached rest serves it
  CHECK(a.reserved_bytes() == 150 * kMiB);
}

TEST_CASE("a large block's rest of at most 1 MiB is not split off", "[memory][allocator]") {
  CachingAllocator a;
  const auto b = a.allocate(12 * kMiB);
  a.release(b);
  a.allocate(11 * kMiB + 512 * 1024);  // 512 KiB left: the whole 12 MiB block is handed out
  CHECK(a.allocated_bytes() == 12 * kMiB);
  a.allocate(1);  // the small pool has its own segments
  CHECK(a.reserved_bytes() == 14 * kMiB);
}

TEST_CASE("with expandable segments the pool's range grows page by page at its end",
          "[memory][allocator]") {
  // The pattern that fragments the default allocator: a freed block too small for the next,
  // larger request.
  CachingAllocator classic, expandable(true);
  for (CachingAllocator* a : {&classic, &expandable}) {
    a->release(a->allocate(30 * kMiB));
    a->allocate(40 * kMiB);
  }
  CHECK(classic.reserved_bytes() == 70 * kMiB);  // a second segment
  // 30 MiB mapped as two 20 MiB pages; freed, the 40 MiB end of the range holds the request.
  CHECK(expandable.reserved_bytes() == 40 * kMiB);

  CachingAllocator a(true);
  a.allocate(10 * kMiB);  // one 20 MiB page; 10 MiB left free at the end
  CHECK(a.reserved_bytes() == 20 * kMiB);
  a.allocate(25 * kMiB);  // the free 10 MiB end plus one more page: 15 MiB must be mapped
  CHECK(a.reserved_bytes() == 40 * kMiB);
  CHECK(a.allocated_bytes() == 35 * kMiB);
  a.allocate(5 * kMiB);  // the 5 MiB end: no new page
  CHECK(a.reserved_bytes() == 40 * kMiB);
  a.allocate(1);  // the small pool maps 2 MiB pages of its own
  CHECK(a.reserved_bytes() == 42 * kMiB);
}

TEST_CASE("with expandable segments a large block is split whenever 512 B are left",
          "[memory][allocator]") {
  CachingAllocator a(true);
  const auto b = a.allocate(12 * kMiB);
  a.release(b);
  const auto c = a.allocate(11 * kMiB + 512 * 1024);
  CHECK(a.allocated_bytes() == 11 * kMiB + 512 * 1024);  // split, unlike the default allocator
  a.allocate(512 * 1024 + 1);  // a small-pool request: the large pool's rest is not used
  CHECK(a.reserved_bytes() == 22 * kMiB);
  a.release(c);
  a.allocate(20 * kMiB);  // the whole freed page range, merged again
  CHECK(a.reserved_bytes() == 22 * kMiB);
}

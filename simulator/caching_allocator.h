// PyTorch's CUDA caching allocator, replayed on sizes alone: how much device memory a rank's
// allocations reserve, which is more than they ever hold at once. Freed blocks stay cached in
// the segments cudaMalloc gave; a request takes the smallest cached block that holds it (splitting
// it when enough is left over), and only when none does is a new segment reserved. So a phase of
// the step that asks for larger blocks than an earlier phase freed grows the reserve even though
// less is allocated (pytorch c10/cuda/CUDACachingAllocator.cpp: round_size, get_allocation_size,
// get_free_block, should_split, free_block's merging of neighbours; one stream, no
// max_split_size; memory given back only as set_limit says).
//
// With expandable_segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) each pool is one
// virtual range that is mapped page by page (2 MiB pages for the small pool, 20 MiB for the
// large): when no cached block fits, the free block at the end of the mapped range is extended by
// mapping just enough pages (try_allocate_expandable_block, map_block; since nothing is unmapped
// the unmapped space is always past the end), and any block is split when 512 B are left over
// (should_split). The reserve then grows with the live bytes, not with a new segment per size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace shardplan {

class CachingAllocator {
 public:
  using Handle = int64_t;

  explicit CachingAllocator(bool expandable_segments = false)
      : expandable_(expandable_segments) {}

  // What the process may reserve (the device's memory beside the CUDA context and the
  // libraries'): a new segment that would pass it first frees every cached block that is a whole
  // segment, as malloc does when cudaMalloc fails (release_cached_blocks, then the retry), so that
  // a reserve grown by one phase's cached blocks does not count against the next. 0: no limit.
  // Unmapping the free pages of expandable segments (release_blocks' unmap_block) is not
  // modelled.
  void set_limit(int64_t bytes) { limit_ = bytes; }

  // Reserves (when no cached block fits) and hands out a block of `bytes`.
  Handle allocate(int64_t bytes);
  void release(Handle h);

  int64_t allocated_bytes() const { return allocated_; }  // blocks handed out, rounded
  int64_t reserved_bytes() const { return reserved_; }    // segments obtained from the device
  int64_t peak_allocated_bytes() const { return peak_allocated_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_; }

  // The constants of CUDACachingAllocator.cpp.
  static constexpr int64_t kMinBlockSize = 512;        // every size rounded up to it
  static constexpr int64_t kSmallSize = 1 << 20;       // largest request of the small pool
  static constexpr int64_t kSmallBuffer = 2 << 20;     // small pool's segments
  static constexpr int64_t kLargeBuffer = 20 << 20;    // segment for a 1–10 MiB request
  static constexpr int64_t kMinLargeAlloc = 10 << 20;  // from here segments are request-sized
  static constexpr int64_t kRoundLarge = 2 << 20;      // ... rounded up to 2 MiB
  // Expandable segments: where the large pool's range starts, apart from the small pool's.
  static constexpr int64_t kLargePoolBase = int64_t{1} << 50;

 private:
  struct Block {
    int64_t address = 0;  // within the whole reserve, so that neighbours are address ± size
    int64_t size = 0;
    bool small_pool = false;
    bool cached = false;          // free: in its pool, for a request to take
    uint32_t cached_as = 0;       // how often it was cached: tells a bin's stale entries
    Handle prev = -1, next = -1;  // neighbours in the same segment
  };
  // Cached blocks by size, each size's by address: the smallest that fits, the lowest address
  // among equals (BlockComparatorSize). A pool caches ~10^3 blocks of a few dozen sizes, so each
  // size keeps a heap of its blocks' addresses; a block uncached (taken whole, or merged into a
  // neighbour) leaves its entry behind, skipped when it comes up.
  class Free {
   public:
    void add(const Block& b, Handle h);
    // Takes the best-fitting cached block of at least `size` out of the pool.
    std::optional<Handle> take(int64_t size, const std::vector<Block>& blocks);

   private:
    struct Entry {
      int64_t address;
      Handle handle;
      uint32_t cached_as;
      bool operator>(const Entry& o) const { return address > o.address; }
    };
    std::map<int64_t, std::vector<Entry>> by_size_;  // min-heaps on the address
  };

  Free& pool(bool small) { return small ? small_free_ : large_free_; }
  static std::size_t slot(bool small) { return small ? 1 : 0; }  // of last_
  Block& at(Handle h) { return blocks_[static_cast<std::size_t>(h)]; }
  Handle new_segment(int64_t rounded, bool small);
  void release_cached_segments();
  // Expandable segments: maps pages past the end of the pool's range until its last block, if
  // free, or a new one holds `rounded`; returns that block, uncached.
  Handle grow_pool(int64_t rounded, bool small);
  void cache(Handle h);
  void uncache(Handle h);
  // Joins h's free neighbour `other` into h (other is next to h in its segment).
  void absorb(Handle h, Handle other);

  bool expandable_ = false;
  std::vector<Block> blocks_;
  Free small_free_, large_free_;
  // Expandable segments: each pool's last block, which ends where its mapped range ends (-1: none
  // yet, the range starts at 0 for the small pool and far above it for the large one).
  Handle last_[2] = {-1, -1};
  int64_t next_address_ = 0;
  int64_t limit_ = 0;
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
};

}  // namespace shardplan

#include "executor/state/tensor_allocator.h"

#include <fmt/format.h>

#include <cassert>
#include <cstdlib>
#include <cstring>

namespace shardplan {

namespace {
constexpr int64_t kAlignmentBytes = 64;  // a cache line; also the widest SIMD load (AVX-512)
int64_t rounded_up(int64_t bytes) {
  return (bytes + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
}
}  // namespace

int64_t MemoryBytes::total() const {
  int64_t sum = 0;
  for (int64_t b : by_category) sum += b;
  return sum;
}

void* HostMemory::allocate(int64_t bytes) {
  return std::aligned_alloc(static_cast<size_t>(kAlignmentBytes), static_cast<size_t>(bytes));
}
void HostMemory::release(void* p) {
  std::free(p);
}
void HostMemory::fill(void* p, int64_t bytes, unsigned char value) {
  std::memset(p, value, static_cast<size_t>(bytes));
}

TensorAllocator::TensorAllocator(std::string owner, int64_t capacity_bytes, MemorySource* source)
    : owner_(std::move(owner)),
      capacity_bytes_(capacity_bytes),
      source_(source != nullptr ? source : &host_) {}

TensorAllocator::~TensorAllocator() {
  assert(current_.total() == 0 && "a Buffer outlived its allocator");
  free_cache();
}

void TensorAllocator::free_cache() {
  for (auto& [size, p] : cache_) source_->release(p);
  cache_.clear();
  cached_bytes_ = 0;
}

void* TensorAllocator::allocate_bytes(MemoryCategory category, int64_t bytes,
                                      std::string_view what, Fill fill) {
  assert(bytes >= 0);
  if (bytes == 0) return nullptr;
  const auto fail = [&](std::string_view cause) {
    return AllocationError(fmt::format(
        "{}{}out of memory allocating {} bytes of {} for {}: {} ({} bytes in use, {} of them {})",
        owner_, owner_.empty() ? "" : ": ", bytes, enum_name(category, kMemoryCategoryNames), what,
        cause, current_.total(), current_[category], enum_name(category, kMemoryCategoryNames)));
  };
  if (capacity_bytes_ > 0 && current_.total() + bytes > capacity_bytes_)
    throw fail(fmt::format("over the capacity of {} bytes", capacity_bytes_));
  const int64_t rounded = rounded_up(bytes);
  void* p = nullptr;
  if (auto it = cache_.find(rounded); it != cache_.end()) {
    p = it->second;
    cache_.erase(it);
    cached_bytes_ -= rounded;
  } else {
    p = source_->allocate(rounded);
    if (p == nullptr && !cache_.empty()) {  // give the cached blocks back and try once more
      free_cache();
      p = source_->allocate(rounded);
    }
    if (p == nullptr) throw fail("the system refused the allocation");
  }
  if (fill != Fill::none) source_->fill(p, rounded, fill == Fill::zeros ? 0x00 : 0xff);

  current_[category] += bytes;
  note_peaks(category);
  return p;
}

void TensorAllocator::note_peaks(MemoryCategory category) {
  if (current_[category] > peak_by_category_[category])
    peak_by_category_[category] = current_[category];
  if (current_.total() > peak_total_) {
    peak_total_ = current_.total();
    at_peak_ = current_;
  }
}

void TensorAllocator::move_charge(MemoryCategory from, MemoryCategory to, int64_t bytes) {
  assert(current_[from] >= bytes);
  current_[from] -= bytes;
  current_[to] += bytes;
  note_peaks(to);
}

void TensorAllocator::release(void* p, MemoryCategory category, int64_t bytes) {
  assert(current_[category] >= bytes);
  current_[category] -= bytes;
  if (bytes == 0) return;
  const int64_t rounded = rounded_up(bytes);
  cache_.emplace(rounded, p);
  cached_bytes_ += rounded;
}

void TensorAllocator::reset_peaks() {
  peak_by_category_ = current_;
  at_peak_ = current_;
  peak_total_ = current_.total();
}

}  // namespace shardplan

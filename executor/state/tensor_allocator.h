// The executor's one accounting allocator: every buffer a rank owns is charged to a memory category
// named as the cost model itemises memory, and the allocator keeps current and peak bytes per
// category and in total. Buffers are RAII (move-only); running out of memory throws
// AllocationError. Freed blocks are cached for reuse by the next request of the same size (as
// PyTorch's caching allocator does), since every micro-batch asks for the same sizes again. The
// blocks come from a MemorySource: host memory, or a GPU's (cuda/device_memory.h), so one
// allocator itemises a rank's memory whichever device holds it.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/enum_names.h"

namespace shardplan {

// The cost model's memory items (parameters_bytes, gradients_bytes, optimizer_bytes,
// activations_bytes; buffers are what it reports as other_bytes: communication staging, gathered
// ZeRO-3 weights, layer workspaces).
enum class MemoryCategory { parameters, gradients, optimizer, activations, buffers };
inline constexpr int kNumMemoryCategories = 5;
inline constexpr EnumNames<MemoryCategory, kNumMemoryCategories> kMemoryCategoryNames{
    {{MemoryCategory::parameters, "parameters"},
     {MemoryCategory::gradients, "gradients"},
     {MemoryCategory::optimizer, "optimizer"},
     {MemoryCategory::activations, "activations"},
     {MemoryCategory::buffers, "buffers"}}};

// Bytes by category; index with MemoryCategory.
struct MemoryBytes {
  std::array<int64_t, kNumMemoryCategories> by_category{};
  int64_t& operator[](MemoryCategory c) { return by_category[static_cast<size_t>(c)]; }
  int64_t operator[](MemoryCategory c) const { return by_category[static_cast<size_t>(c)]; }
  int64_t total() const;
};

// An allocation the allocator could not satisfy: over the capacity it was given, or refused by the
// system. what() names the owner (e.g. "rank 3"), the category, the size and what was in use, so an
// MPI driver can print it and abort.
struct AllocationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where an allocator's blocks come from. Blocks are at least 64-byte aligned.
class MemorySource {
 public:
  virtual ~MemorySource() = default;
  virtual void* allocate(int64_t bytes) = 0;  // nullptr when the memory is full
  virtual void release(void* p) = 0;
  virtual void fill(void* p, int64_t bytes, unsigned char value) = 0;  // every byte `value`
};

// Host memory (std::aligned_alloc to a cache line, the widest SIMD load).
class HostMemory final : public MemorySource {
 public:
  void* allocate(int64_t bytes) override;
  void release(void* p) override;
  void fill(void* p, int64_t bytes, unsigned char value) override;
};

class TensorAllocator;

// An owning, 64-byte-aligned array of `count` elements charged to one category. Move-only.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer(std::move(o)).swap(*this);
    return *this;
  }
  ~Buffer();

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return count_; }
  int64_t bytes() const { return count_ * static_cast<int64_t>(sizeof(T)); }
  bool empty() const { return count_ == 0; }
  MemoryCategory category() const { return category_; }
  std::span<T> span() { return {data_, static_cast<size_t>(count_)}; }
  std::span<const T> span() const { return {data_, static_cast<size_t>(count_)}; }
  T& operator[](int64_t i) { return data_[i]; }
  const T& operator[](int64_t i) const { return data_[i]; }
  // The same block as bytes, charged as before: for code that moves or frees it untyped (pipeline
  // messages, releases after a stream's use).
  Buffer<std::byte> into_bytes() && {
    Buffer<std::byte> b;
    b.data_ = reinterpret_cast<std::byte*>(std::exchange(data_, nullptr));
    b.count_ = std::exchange(count_, 0) * static_cast<int64_t>(sizeof(T));
    b.category_ = category_;
    b.owner_ = std::exchange(owner_, nullptr);
    return b;
  }

 private:
  friend class TensorAllocator;
  template <class U>
  friend class Buffer;
  void swap(Buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    std::swap(category_, o.category_);
    std::swap(owner_, o.owner_);
  }
  T* data_ = nullptr;
  int64_t count_ = 0;
  MemoryCategory category_ = MemoryCategory::buffers;
  TensorAllocator* owner_ = nullptr;
};

class TensorAllocator {
 public:
  // `owner` names the rank in errors ("rank 3"); capacity_bytes = 0 means no limit beyond the
  // system's; `source` (which must outlive the allocator) defaults to host memory.
  explicit TensorAllocator(std::string owner = "", int64_t capacity_bytes = 0,
                           MemorySource* source = nullptr);
  TensorAllocator(const TensorAllocator&) = delete;
  TensorAllocator& operator=(const TensorAllocator&) = delete;
  ~TensorAllocator();  // asserts that every buffer was given back

  // `count` elements of T, zero-filled. `what` names the tensor in errors.
  template <class T>
  Buffer<T> allocate(MemoryCategory category, int64_t count, std::string_view what) {
    return allocate_filled<T>(category, count, what, Fill::zeros);
  }
  // `count` elements of T whose values are left unspecified, for a tensor its caller writes in
  // full before it reads any of it (C++20's make_unique_for_overwrite, PyTorch's torch.empty): a
  // layer's outputs. Zeroing them would be a pass over memory that no framework makes and the cost
  // model does not price.
  template <class T>
  Buffer<T> allocate_for_overwrite(MemoryCategory category, int64_t count, std::string_view what) {
    return allocate_filled<T>(category, count, what,
                              poison_for_overwrite_ ? Fill::poison : Fill::none);
  }
  // For tests: allocate_for_overwrite fills its buffers with all-ones bytes (NaN as floats, -1 as
  // integers), so a read before the caller's write shows in the results.
  void set_poison_for_overwrite(bool on) { poison_for_overwrite_ = on; }

  // Bytes counted are the bytes asked for (element count × element size), not the rounded-up
  // allocation, so that parameters, gradients and optimizer state match the cost model exactly.
  const MemoryBytes& current() const { return current_; }
  const MemoryBytes& peak_by_category() const { return peak_by_category_; }  // each its own maximum
  int64_t peak_bytes() const { return peak_total_; }
  // The categories at the moment the total peaked: these add up to peak_bytes(), as the cost
  // model's items add up to its peak.
  const MemoryBytes& at_peak() const { return at_peak_; }
  // Starts the peaks afresh from what is in use now (e.g. after the first, warm-up step).
  void reset_peaks();
  // Charges `b`'s bytes to `category` from now on: a tensor kept for a use other than the one it
  // was made for (a split backward's W keeps a layer's gradient buffers as activations).
  template <class T>
  void recharge(Buffer<T>& b, MemoryCategory category) {
    assert(b.owner_ == this);
    move_charge(b.category_, category, b.bytes());
    b.category_ = category;
  }
  // Bytes held in freed blocks kept for reuse (not in use by any buffer, so in no category).
  int64_t cached_bytes() const { return cached_bytes_; }

 private:
  template <class T>
  friend class Buffer;
  enum class Fill { zeros, none, poison };
  template <class T>
  Buffer<T> allocate_filled(MemoryCategory category, int64_t count, std::string_view what,
                            Fill fill) {
    Buffer<T> b;
    b.data_ = static_cast<T*>(
        allocate_bytes(category, count * static_cast<int64_t>(sizeof(T)), what, fill));
    b.count_ = count;
    b.category_ = category;
    b.owner_ = this;
    return b;
  }
  void* allocate_bytes(MemoryCategory category, int64_t bytes, std::string_view what, Fill fill);
  void release(void* p, MemoryCategory category, int64_t bytes);
  void move_charge(MemoryCategory from, MemoryCategory to, int64_t bytes);
  void note_peaks(MemoryCategory category);
  void free_cache();

  std::string owner_;
  int64_t capacity_bytes_ = 0;
  HostMemory host_;
  MemorySource* source_;
  MemoryBytes current_;
  MemoryBytes peak_by_category_;
  MemoryBytes at_peak_;
  int64_t peak_total_ = 0;
  std::multimap<int64_t, void*> cache_;  // freed blocks by their allocated (rounded-up) size
  int64_t cached_bytes_ = 0;
  bool poison_for_overwrite_ = false;
};

template <class T>
Buffer<T>::~Buffer() {
  if (owner_ != nullptr) owner_->release(data_, category_, bytes());
}

}  // namespace shardplan

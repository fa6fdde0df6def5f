// The accounting allocator: current and peak bytes by category and in total, the categories at the
// total's peak, RAII release and moves, and the error a full memory raises.
#include "executor/state/tensor_allocator.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace shardplan;

TEST_CASE("allocator: current and peak bytes by category", "[executor]") {
  TensorAllocator alloc("rank 0");
  Buffer<float> params = alloc.allocate<float>(MemoryCategory::parameters, 1000, "params");
  {
    Buffer<float> act1 = alloc.allocate<float>(MemoryCategory::activations, 500, "act1");
    Buffer<double> act2 = alloc.allocate<double>(MemoryCategory::activations, 100, "act2");
    CHECK(alloc.current()[MemoryCategory::activations] == 500 * 4 + 100 * 8);
    CHECK(alloc.current().total() == 4000 + 2800);
  }
  // Activations freed; a larger-than-before buffer allocation sets a new total peak.
  CHECK(alloc.current()[MemoryCategory::activations] == 0);
  Buffer<float> tmp = alloc.allocate<float>(MemoryCategory::buffers, 1000, "tmp");
  CHECK(alloc.peak_bytes() == 8000);
  CHECK(alloc.peak_by_category()[MemoryCategory::activations] == 2800);
  CHECK(alloc.peak_by_category()[MemoryCategory::buffers] == 4000);
  // At the total peak (8000 B) the activations were 0 and the buffers 4000 B: the items add up.
  CHECK(alloc.at_peak()[MemoryCategory::parameters] == 4000);
  CHECK(alloc.at_peak()[MemoryCategory::activations] == 0);
  CHECK(alloc.at_peak()[MemoryCategory::buffers] == 4000);
  CHECK(alloc.at_peak().total() == alloc.peak_bytes());
  // Bytes counted are the bytes asked for, not the 64-byte-rounded allocation.
  Buffer<float> odd = alloc.allocate<float>(MemoryCategory::gradients, 3, "odd");
  CHECK(alloc.current()[MemoryCategory::gradients] == 12);
  alloc.reset_peaks();
  CHECK(alloc.peak_bytes() == alloc.current().total());
}

TEST_CASE("allocator: buffers are zeroed, aligned, and move their charge", "[executor]") {
  TensorAllocator alloc;
  Buffer<float> a = alloc.allocate<float>(MemoryCategory::gradients, 37, "a");
  CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
  for (int64_t i = 0; i < a.size(); ++i) CHECK(a[i] == 0.0f);
  Buffer<float> b = std::move(a);
  CHECK(a.empty());
  CHECK(b.size() == 37);
  CHECK(alloc.current()[MemoryCategory::gradients] == 148);
  b = {};
  CHECK(alloc.current().total() == 0);
}

TEST_CASE("allocator: freed blocks are reused for the same size, zeroed again", "[executor]") {
  TensorAllocator alloc;
  float* first = nullptr;
  {
    Buffer<float> a = alloc.allocate<float>(MemoryCategory::activations, 100, "a");
    first = a.data();
    a[7] = 3.0f;
  }
  CHECK(alloc.cached_bytes() == 448);  // 400 bytes rounded up to 64-byte lines
  CHECK(alloc.current().total() == 0);
  Buffer<float> b = alloc.allocate<float>(MemoryCategory::buffers, 100, "b");
  CHECK(b.data() == first);
  CHECK(b[7] == 0.0f);
  CHECK(alloc.cached_bytes() == 0);
  Buffer<float> c = alloc.allocate<float>(MemoryCategory::buffers, 0, "empty");
  c = {};
  CHECK(alloc.cached_bytes() == 0);
}

TEST_CASE("allocator: a buffer for overwrite is not filled, or filled with NaN to check",
          "[executor]") {
  TensorAllocator alloc;
  {
    Buffer<float> a = alloc.allocate<float>(MemoryCategory::activations, 100, "a");
    a[7] = 3.0f;
  }
  // The cached block comes back as it was left: no pass over it.
  Buffer<float> b = alloc.allocate_for_overwrite<float>(MemoryCategory::activations, 100, "b");
  CHECK(b[7] == 3.0f);
  CHECK(alloc.current()[MemoryCategory::activations] == 400);
  b = {};
  alloc.set_poison_for_overwrite(true);
  Buffer<float> c = alloc.allocate_for_overwrite<float>(MemoryCategory::activations, 100, "c");
  for (int64_t i = 0; i < c.size(); ++i) CHECK(std::isnan(c[i]));
  Buffer<int32_t> tokens = alloc.allocate_for_overwrite<int32_t>(MemoryCategory::buffers, 4, "t");
  CHECK(tokens[0] == -1);
  // allocate still zeroes under poisoning.
  c = {};
  Buffer<float> d = alloc.allocate<float>(MemoryCategory::activations, 100, "d");
  CHECK(d[7] == 0.0f);
}

TEST_CASE("allocator: exceeding the capacity names rank, category, size and use", "[executor]") {
  TensorAllocator alloc("rank 3", 1000);
  Buffer<float> a = alloc.allocate<float>(MemoryCategory::parameters, 200, "wte");
  try {
    Buffer<float> b = alloc.allocate<float>(MemoryCategory::activations, 100, "layer 0 qkv");
    FAIL("no error");
  } catch (const AllocationError& e) {
    CHECK(std::string(e.what()) ==
          "rank 3: out of memory allocating 400 bytes of activations for layer 0 qkv: over the "
          "capacity of "
          "1000 bytes (800 bytes in use, 0 of them activations)");
  }
  CHECK(alloc.current().total() == 800);
}

TEST_CASE("allocator: a recharged buffer counts in its new category, and frees from it",
          "[executor]") {
  TensorAllocator a;
  {
    Buffer<float> b = a.allocate<float>(MemoryCategory::buffers, 100, "output gradient");
    a.recharge(b, MemoryCategory::activations);
    CHECK(a.current()[MemoryCategory::buffers] == 0);
    CHECK(a.current()[MemoryCategory::activations] == 400);
    CHECK(a.peak_by_category()[MemoryCategory::activations] == 400);
    CHECK(a.peak_bytes() == 400);
  }
  CHECK(a.current()[MemoryCategory::activations] == 0);
  CHECK(a.current().total() == 0);
}

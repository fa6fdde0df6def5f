// Counter-based random numbers: a value is a pure function of (seed, stream, index), so any rank
// can draw exactly the numbers the single-rank run draws for the elements or sequences it owns.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

namespace shardplan {

// SplitMix64's output function (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number
// generators", Fig. 1; the finaliser of java.util.SplittableRandom).
constexpr uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 64-bit FNV-1a of a name (Fowler, Noll & Vo; IETF draft-eastlake-fnv, §2), to make a stream id.
constexpr uint64_t hash_name(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return h;
}

constexpr uint64_t counter_hash(uint64_t seed, uint64_t stream, uint64_t index) {
  return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

// Uniform in (0, 1] with 53 random bits.
inline double counter_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<double>((counter_hash(seed, stream, index) >> 11) + 1) * 0x1.0p-53;
}

// Standard normal by the Box–Muller transform (Box & Muller 1958) of two counter uniforms.
inline double counter_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  const double u1 = counter_uniform(seed, stream, 2 * index);
  const double u2 = counter_uniform(seed, stream, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace shardplan

// The calibration profile: strict JSON in and out, validation, the overlay on a cluster, and the
// lookups the cost model makes (GEMM rate by shape, collective fit by group).
#include "core/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <set>
#include <tuple>

#include "core/json_reader.h"
#include "core/statistics.h"

namespace shardplan {

double CollectiveFit::time_s(int64_t bytes) const {
  const auto b = static_cast<double>(bytes);
  if (measured.empty()) return alpha_us * 1e-6 + b / (algbw_GBps * 1e9);
  if (bytes <= measured.front().bytes) return measured.front().time_us * 1e-6;
  const CollectivePoint& last = measured.back();
  if (bytes >= last.bytes)
    return last.time_us * 1e-6 + (b - static_cast<double>(last.bytes)) / (algbw_GBps * 1e9);
  const auto hi = std::lower_bound(measured.begin(), measured.end(), bytes,
                                   [](const CollectivePoint& p, int64_t v) { return p.bytes < v; });
  const auto lo = std::prev(hi);
  const double f =
      (b - static_cast<double>(lo->bytes)) / static_cast<double>(hi->bytes - lo->bytes);
  return (lo->time_us + f * (hi->time_us - lo->time_us)) * 1e-6;
}

namespace {

GemmRate read_gemm(ObjectReader r) {
  GemmRate g{r.positive_integer("m"), r.positive_integer("n"), r.positive_integer("k"),
             r.positive_number("tflops")};
  r.reject_unknown();
  return g;
}

KernelRate read_kernel(ObjectReader r) {
  KernelRate k{enum_field(r, "kernel", kMemoryKernelNames), r.positive_number("elements"),
               r.positive_number("elements_per_s")};
  r.reject_unknown();
  return k;
}

CollectivePoint read_point(ObjectReader r) {
  CollectivePoint p{r.positive_integer("bytes"), r.positive_number("time_us")};
  r.reject_unknown();
  return p;
}

CollectiveFit read_fit(ObjectReader r) {
  CollectiveFit f;
  f.collective = enum_field(r, "collective", kCollectiveNames);
  const int64_t level = r.integer("level");
  if (level < 0) r.fail("level", fmt::format("must not be negative, found {}", level));
  f.level = static_cast<size_t>(level);
  f.ranks = int_field(r, "ranks");
  f.cold_input = r.boolean_or("cold_input", false);
  f.alpha_us = r.number("alpha_us");  // validate_profile checks the sign
  f.algbw_GBps = r.positive_number("algbw_GBps");
  if (r.has("measured"))
    for (auto& p : r.objects("measured")) f.measured.push_back(read_point(std::move(p)));
  r.reject_unknown();
  return f;
}

}  // namespace

Profile profile_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file);
  r.ignore({"source"});  // how and when it was measured
  Profile p;
  p.backend = enum_field(r, "backend", kBackendNames);
  p.device = r.string("device");
  p.ranks = int_field(r, "ranks");
  p.dtype = enum_field(r, "dtype", kDtypeNames);
  p.memory_GBps = r.positive_number("memory_GBps");
  p.noise = r.number_or("noise", 0);
  for (auto& g : r.objects("gemm")) p.gemm.push_back(read_gemm(std::move(g)));
  if (r.has("kernels"))
    for (auto& k : r.objects("kernels")) p.kernels.push_back(read_kernel(std::move(k)));
  if (r.has("collectives"))
    for (auto& c : r.objects("collectives")) p.collectives.push_back(read_fit(std::move(c)));
  r.reject_unknown();
  validate_profile(p, file);
  return p;
}

nlohmann::json profile_to_json(const Profile& p) {
  nlohmann::json gemm = nlohmann::json::array();
  for (const auto& g : p.gemm)
    gemm.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"tflops", g.tflops}});
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : p.kernels)
    kernels.push_back({{"kernel", enum_name(k.kernel, kMemoryKernelNames)},
                       {"elements", k.elements},
                       {"elements_per_s", k.elements_per_s}});
  nlohmann::json collectives = nlohmann::json::array();
  for (const auto& f : p.collectives) {
    nlohmann::json measured = nlohmann::json::array();
    for (const CollectivePoint& m : f.measured)
      measured.push_back({{"bytes", m.bytes}, {"time_us", m.time_us}});
    collectives.push_back({{"collective", enum_name(f.collective, kCollectiveNames)},
                           {"level", f.level},
                           {"ranks", f.ranks},
                           {"cold_input", f.cold_input},
                           {"alpha_us", f.alpha_us},
                           {"algbw_GBps", f.algbw_GBps},
                           {"measured", measured}});
  }
  return {{"backend", enum_name(p.backend, kBackendNames)},
          {"device", p.device},
          {"ranks", p.ranks},
          {"dtype", enum_name(p.dtype, kDtypeNames)},
          {"memory_GBps", p.memory_GBps},
          {"noise", p.noise},
          {"gemm", gemm},
          {"kernels", kernels},
          {"collectives", collectives}};
}

Profile merge_compute_passes(const Profile& base, const std::vector<Profile>& passes,
                             const std::vector<std::string>& files) {
  assert(files.size() == passes.size());
  Profile out = base;
  for (size_t i = 0; i < passes.size(); ++i) {
    const Profile& p = passes[i];
    if (p.backend != base.backend || p.ranks != base.ranks || p.dtype != base.dtype)
      throw InputError(
          files[i], "backend",
          fmt::format("{} ranks of {} in {}, the profile {} of {} in {}", p.ranks,
                      enum_name(p.backend, kBackendNames), enum_name(p.dtype, kDtypeNames),
                      base.ranks, enum_name(base.backend, kBackendNames),
                      enum_name(base.dtype, kDtypeNames)),
          "take the passes as the profile was taken");
  }
  // Each entry of `list` in out: the median of its rate over out and the passes that measured it.
  const auto merge = [&](auto list, auto rate, auto same) {
    for (auto& entry : out.*list) {
      std::vector<double> rates{entry.*rate};
      for (const Profile& pass : passes) {
        const auto& measured = pass.*list;
        const auto it =
            std::ranges::find_if(measured, [&](const auto& x) { return same(x, entry); });
        if (it != measured.end()) rates.push_back((*it).*rate);
      }
      entry.*rate = median(std::move(rates));
    }
  };
  merge(&Profile::gemm, &GemmRate::tflops, [](const GemmRate& a, const GemmRate& b) {
    return a.m == b.m && a.n == b.n && a.k == b.k;
  });
  merge(&Profile::kernels, &KernelRate::elements_per_s,
        [](const KernelRate& a, const KernelRate& b) {
          return a.kernel == b.kernel && a.elements == b.elements;
        });
  std::vector<double> memory{base.memory_GBps}, noise{base.noise};
  for (const Profile& p : passes) memory.push_back(p.memory_GBps), noise.push_back(p.noise);
  out.memory_GBps = median(std::move(memory));
  out.noise = median(std::move(noise));
  return out;
}

Profile read_profile_file(const std::string& path) {
  return profile_from_json(read_json_file(path), path);
}

void validate_profile(const Profile& p, const std::string& file) {
  if (p.ranks < 1)
    throw InputError(file, "ranks", fmt::format("must be positive, found {}", p.ranks));
  if (!(p.memory_GBps > 0))
    throw InputError(file, "memory_GBps", fmt::format("must be positive, found {}", p.memory_GBps));
  if (!(p.noise > -1 && p.noise < 1))
    throw InputError(file, "noise", fmt::format("must be in (-1, 1), found {}", p.noise));
  if (p.gemm.empty())
    throw InputError(file, "gemm", "no GEMM rate", "run shardplan calibrate to measure some");
  std::set<std::tuple<int64_t, int64_t, int64_t>> shapes;
  for (size_t i = 0; i < p.gemm.size(); ++i) {
    const GemmRate& g = p.gemm[i];
    const std::string field = fmt::format("gemm[{}]", i);
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || !(g.tflops > 0))
      throw InputError(file, field, "sizes and tflops must be positive");
    if (!shapes.emplace(g.m, g.n, g.k).second)
      throw InputError(file, field, fmt::format("shape {}x{}x{} given twice", g.m, g.n, g.k));
  }
  std::set<std::pair<MemoryKernel, double>> kernels;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelRate& k = p.kernels[i];
    const std::string field = fmt::format("kernels[{}]", i);
    if (!(k.elements > 0) || !(k.elements_per_s > 0))
      throw InputError(file, field, "elements and elements_per_s must be positive");
    if (!kernels.emplace(k.kernel, k.elements).second)
      throw InputError(file, field,
                       fmt::format("{} over {} elements given twice",
                                   enum_name(k.kernel, kMemoryKernelNames), k.elements));
  }
  std::set<std::tuple<Collective, size_t, int, bool>> groups;
  for (size_t i = 0; i < p.collectives.size(); ++i) {
    const CollectiveFit& f = p.collectives[i];
    const std::string field = fmt::format("collectives[{}]", i);
    if (f.ranks < 2 || f.ranks > p.ranks)
      throw InputError(
          file, field + ".ranks",
          fmt::format("must be between 2 and the profile's {} ranks, found {}", p.ranks, f.ranks));
    if (!(f.alpha_us >= 0) || !(f.algbw_GBps > 0))
      throw InputError(file, field,
                       "alpha_us must not be negative and algbw_GBps must be positive");
    for (size_t j = 1; j < f.measured.size(); ++j)
      if (f.measured[j].bytes <= f.measured[j - 1].bytes)
        throw InputError(file, fmt::format("{}.measured[{}].bytes", field, j),
                         "sizes must be ascending");
    if (!groups.emplace(f.collective, f.level, f.ranks, f.cold_input).second)
      throw InputError(file, field,
                       fmt::format("{} on level {} over {} ranks{} given twice",
                                   enum_name(f.collective, kCollectiveNames), f.level, f.ranks,
                                   f.cold_input ? " with cold input" : ""));
  }
}

Cluster apply_profile(Cluster c, const Profile& p, const std::string& file) {
  c.device.memory_GBps = p.memory_GBps;
  for (size_t i = 0; i < p.collectives.size(); ++i) {
    if (p.collectives[i].level < c.levels.size()) continue;
    throw InputError(
        file, fmt::format("collectives[{}].level", i),
        fmt::format("cluster {} has {} interconnect levels, the profile measured level {}", c.name,
                    c.levels.size(), p.collectives[i].level),
        "calibrate on a machine this cluster describes");
  }
  for (size_t level = 0; level < c.levels.size(); ++level) {
    const CollectiveFit* link = nullptr;  // the smallest send_recv group on this level
    for (const auto& f : p.collectives)
      if (f.collective == Collective::send_recv && !f.cold_input && f.level == level &&
          (!link || f.ranks < link->ranks))
        link = &f;
    if (!link) continue;
    InterconnectLevel& l = c.levels[level];
    l.latency_us = link->alpha_us;
    (l.is_scale_out() ? l.nic_GBps : l.bandwidth_GBps) = link->algbw_GBps;
  }
  return c;
}

double gemm_rate_flops(const Profile& p, int64_t m, int64_t n, int64_t k) {
  assert(!p.gemm.empty() && m > 0 && n > 0 && k > 0);
  constexpr size_t kNeighbours = 8;  // the corners of a trilinear cell
  const auto lg = [](int64_t x) { return std::log2(static_cast<double>(x)); };
  std::vector<std::pair<double, double>> by_distance;  // (squared distance, rate)
  const auto distance2 = [&](int64_t gm, int64_t gn, int64_t gk) {
    const double dm = lg(m) - lg(gm), dn = lg(n) - lg(gn), dk = lg(k) - lg(gk);
    return dm * dm + dn * dn + dk * dk;
  };
  for (const auto& g : p.gemm) {
    const double d2 = std::min(distance2(g.m, g.n, g.k), distance2(g.n, g.m, g.k));
    if (d2 == 0) return g.tflops * 1e12;
    by_distance.emplace_back(d2, g.tflops * 1e12);
  }
  const size_t used = std::min(kNeighbours, by_distance.size());
  std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(used),
                    by_distance.end());
  double weights = 0, weighted = 0;
  for (size_t i = 0; i < used; ++i) {
    weights += 1 / by_distance[i].first;
    weighted += by_distance[i].second / by_distance[i].first;
  }
  return weighted / weights;
}

double kernel_rate_per_s(const Profile& p, MemoryKernel kernel, double elements) {
  const KernelRate *below = nullptr, *above = nullptr;  // the nearest measured sizes around it
  for (const auto& k : p.kernels) {
    if (k.kernel != kernel) continue;
    if (k.elements <= elements && (!below || k.elements > below->elements)) below = &k;
    if (k.elements >= elements && (!above || k.elements < above->elements)) above = &k;
  }
  if (!below || !above) return below ? below->elements_per_s : above ? above->elements_per_s : 0;
  if (below == above) return below->elements_per_s;
  const double f =
      std::log2(elements / below->elements) / std::log2(above->elements / below->elements);
  return below->elements_per_s + f * (above->elements_per_s - below->elements_per_s);
}

const CollectiveFit* find_collective_fit(const Profile& p, Collective c, size_t level, int ranks,
                                         bool cold_input) {
  for (const auto& f : p.collectives)
    if (f.collective == c && f.level == level && f.ranks == ranks && f.cold_input == cold_input)
      return &f;
  return nullptr;
}

}  // namespace shardplan

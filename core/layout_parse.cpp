// The layout as users type it: the compact string and Megatron-LM's flags. Both go through one
// table of settings, so a value means the same thing and fails the same way in either form.
#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/layout.h"

namespace shardplan {

namespace {

// Where a value came from, for errors: "--layout" and "layout.tp", or "--tp" and "layout.tp".
struct Origin {
  std::string source;
  std::string field;

  [[noreturn]] void fail(const std::string& reason, const std::string& hint = "") const {
    throw InputError(source, field, reason, hint);
  }
};

int64_t parse_count(std::string_view text, int64_t min, int64_t max, const Origin& at) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const char* expected = min > 0 ? "a positive integer" : "a non-negative integer";
  if (ec != std::errc() || end != text.data() + text.size() || v < min)
    at.fail(fmt::format("expected {}, found \"{}\"", expected, text));
  if (v > max) at.fail(fmt::format("{} is out of range (at most {})", v, max));
  return v;
}

template <class T>
void assign(std::optional<T>& slot, T value, const Origin& at) {
  if (slot) at.fail("given more than once");
  slot = std::move(value);
}

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

template <std::optional<int> LayoutSpec::*M>
void set_positive(LayoutSpec& s, std::string_view v, const Origin& at) {
  assign(s.*M, static_cast<int>(parse_count(v, 1, kIntMax, at)), at);
}

// The ZeRO stage may be 0; its range (0..3) is validate_layout's rule.
void set_zero(LayoutSpec& s, std::string_view v, const Origin& at) {
  assign(s.zero, static_cast<int>(parse_count(v, 0, kIntMax, at)), at);
}

void set_global_batch(LayoutSpec& s, std::string_view v, const Origin& at) {
  assign(s.global_batch, parse_count(v, 1, std::numeric_limits<int64_t>::max(), at), at);
}

void set_sequence_parallel(LayoutSpec& s, std::string_view v, const Origin& at) {
  if (v != "0" && v != "1" && v != "true" && v != "false")
    at.fail(fmt::format("expected 0, 1, true or false, found \"{}\"", v));
  assign(s.sequence_parallel, v == "1" || v == "true", at);
}

template <class E, size_t N, const EnumNames<E, N>& Names, std::optional<E> LayoutSpec::*M>
void set_enum(LayoutSpec& s, std::string_view v, const Origin& at) {
  const std::optional<E> value = enum_from_name(v, Names);
  if (!value) at.fail(fmt::format("unknown value \"{}\"", v), "expected " + enum_choices(Names));
  assign(s.*M, *value, at);
}

// The permutation is checked by validate_layout (validate_rank_order), once the layout is whole.
void set_rank_order(LayoutSpec& s, std::string_view v, const Origin& at) {
  assign(s.rank_order, std::string(v), at);
}

struct Setting {
  std::string_view key;       // the compact key, also the name in errors ("layout.tp")
  std::string_view long_key;  // the layout JSON's name, accepted too; "" when the same
  void (*set)(LayoutSpec&, std::string_view, const Origin&);
};

constexpr Setting kSettings[] = {
    {"tp", "", set_positive<&LayoutSpec::tp>},
    {"pp", "", set_positive<&LayoutSpec::pp>},
    {"dp", "", set_positive<&LayoutSpec::dp>},
    {"cp", "", set_positive<&LayoutSpec::cp>},
    {"ep", "", set_positive<&LayoutSpec::ep>},
    {"zero", "", set_zero},
    {"mbs", "micro_batch", set_positive<&LayoutSpec::micro_batch>},
    {"gbs", "global_batch", set_global_batch},
    {"gas", "num_microbatches", set_positive<&LayoutSpec::num_microbatches>},
    {"sp", "sequence_parallel", set_sequence_parallel},
    {"vpp", "", set_positive<&LayoutSpec::vpp>},
    {"recompute", "", set_enum<Recompute, 3, kRecomputeNames, &LayoutSpec::recompute>},
    {"schedule", "", set_enum<Schedule, 3, kScheduleNames, &LayoutSpec::schedule>},
    {"order", "rank_order", set_rank_order},
};

const Setting* find_setting(std::string_view key) {
  for (const Setting& s : kSettings)
    if (s.key == key || s.long_key == key) return &s;
  return nullptr;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Whether `longer` is `shorter` followed by a word separator ("pp_size" and "pp").
bool extends(std::string_view longer, std::string_view shorter) {
  return longer.size() > shorter.size() && longer.starts_with(shorter) &&
         (longer[shorter.size()] == '_' || longer[shorter.size()] == '-');
}

// A near miss of one of `names`: one word longer or shorter ("pp_size", "zero_stage",
// "sequence"), or at most a third of the word mistyped ("ordr", "--micro-bach-size").
std::string_view closest(std::string_view word, const std::vector<std::string_view>& names) {
  std::string_view best;
  for (std::string_view n : names)
    if ((extends(word, n) || extends(n, word)) && n.size() > best.size()) best = n;
  if (!best.empty()) return best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (std::string_view n : names) {
    const size_t d = edit_distance(word, n);
    if (d < best_distance && d < word.size()) best = n, best_distance = d;
  }
  return best;
}

std::string unknown_hint(std::string_view word, const std::vector<std::string_view>& names) {
  std::string accepted;
  for (std::string_view n : names) accepted += (accepted.empty() ? "" : ", ") + std::string(n);
  const std::string_view near = closest(word, names);
  if (near.empty()) return "accepted: " + accepted;
  return fmt::format("did you mean \"{}\"? accepted: {}", near, accepted);
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Megatron-LM's flag names (megatron/training/arguments.py) for the settings above; a flag
// without a value stands for `fixed`.
struct Flag {
  std::string_view name;
  std::string_view alias;
  std::string_view setting;  // the compact key it sets
  std::string_view fixed;    // the value a switch stands for; "" when the flag takes a value
};

constexpr Flag kFlags[] = {
    {"--tensor-model-parallel-size", "--tp", "tp", ""},
    {"--pipeline-model-parallel-size", "--pp", "pp", ""},
    {"--context-parallel-size", "--cp", "cp", ""},
    {"--expert-model-parallel-size", "--ep", "ep", ""},
    {"--sequence-parallel", "", "sp", "1"},
    {"--micro-batch-size", "", "mbs", ""},
    {"--global-batch-size", "", "gbs", ""},
    {"--num-virtual-stages-per-pipeline-rank", "", "vpp", ""},
    {"--recompute-granularity", "", "recompute", ""},
    // Megatron-LM: "--recompute-activations" sets recompute_granularity = 'selective'.
    {"--recompute-activations", "", "recompute", "selective"},
    // DeepSpeed's name for the stage; Megatron's distributed optimizer shards the fp32 master
    // weights and optimizer states over dp (docs/source/api-guide/dist_optimizer.md): ZeRO-1.
    {"--zero-stage", "", "zero", ""},
    {"--use-distributed-optimizer", "", "zero", "1"},
};
// Megatron-LM: virtual_pipeline_model_parallel_size = (num_layers / pp) / this.
constexpr std::string_view kLayersPerVirtualStage = "--num-layers-per-virtual-pipeline-stage";

// Every name and alias in a table, for "accepted: ..." hints.
template <class T, size_t N>
std::vector<std::string_view> names_of(const T (&table)[N], std::string_view T::*name,
                                       std::string_view T::*alias) {
  std::vector<std::string_view> names;
  for (const T& row : table) {
    names.push_back(row.*name);
    if (!(row.*alias).empty()) names.push_back(row.*alias);
  }
  return names;
}

const Flag* find_flag(std::string_view name) {
  for (const Flag& f : kFlags)
    if (f.name == name || f.alias == name) return &f;
  return nullptr;
}

}  // namespace

LayoutSpec parse_layout_string(std::string_view s, const std::string& source) {
  LayoutSpec spec;
  if (trim(s).empty()) return spec;
  while (true) {
    const size_t comma = s.find(',');
    const std::string_view item = trim(s.substr(0, comma));
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(source, "", fmt::format("expected key=value, found \"{}\"", item),
                       "items are separated by commas: \"tp=8,pp=4,mbs=1\"");
    const std::string_view key = trim(item.substr(0, eq));
    const Origin at{source, "layout." + std::string(key)};
    const Setting* setting = find_setting(key);
    if (!setting)
      at.fail("unknown key",
              unknown_hint(key, names_of(kSettings, &Setting::key, &Setting::long_key)));
    setting->set(spec, trim(item.substr(eq + 1)), at);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return spec;
}

LayoutSpec parse_megatron_flags(const std::vector<std::string>& args, const Model& model) {
  LayoutSpec spec;
  std::optional<int> layers_per_virtual_stage;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--"))
      throw InputError(arg, "", "expected a Megatron-LM flag (--name value or --name=value)");
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Flag* flag = find_flag(name);
    if (!flag && name != kLayersPerVirtualStage) {
      std::vector<std::string_view> names = names_of(kFlags, &Flag::name, &Flag::alias);
      names.push_back(kLayersPerVirtualStage);
      throw InputError(name, "", "unknown Megatron-LM flag", unknown_hint(name, names));
    }
    // Fields by the layout JSON's names ("layout.micro_batch"), as validate_layout names them.
    const Setting* setting = find_setting(flag ? flag->setting : "vpp");
    const Origin at{name, "layout." + std::string(setting->long_key.empty() ? setting->key
                                                                            : setting->long_key)};
    std::string value;
    if (flag && !flag->fixed.empty()) {
      if (eq != std::string::npos) at.fail("takes no value");
      value = flag->fixed;
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 == args.size()) at.fail("missing value");
      value = args[++i];
    }
    if (flag)
      setting->set(spec, value, at);
    else
      assign(layers_per_virtual_stage, static_cast<int>(parse_count(value, 1, kIntMax, at)), at);
  }
  if (layers_per_virtual_stage) {
    const Origin at{std::string(kLayersPerVirtualStage), "layout.vpp"};
    const int64_t per_pipeline_rank = int64_t{spec.pp.value_or(1)} * *layers_per_virtual_stage;
    if (model.num_layers % per_pipeline_rank != 0)
      at.fail(fmt::format(
          "pp={} × {} layers per virtual stage = {} does not divide num_hidden_layers={}",
          spec.pp.value_or(1), *layers_per_virtual_stage, per_pipeline_rank, model.num_layers));
    assign(spec.vpp, static_cast<int>(model.num_layers / per_pipeline_rank), at);
  }
  return spec;
}

}  // namespace shardplan

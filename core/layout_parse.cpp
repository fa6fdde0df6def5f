// The layout as users type it: the compact string and Megatron-LM's flags. Both go through one
// table of settings, so a value means the same thing and fails the same way in either form.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/layout.h"
#include "core/presets.h"
#include "core/stage_split.h"

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

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

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
  if (!value) at.fail(fmt::format("unknown value \"{}\"", v), "one of: " + enum_choices(Names));
  assign(s.*M, *value, at);
}

// The permutation is checked by validate_layout (validate_rank_order), once the layout is whole.
void set_rank_order(LayoutSpec& s, std::string_view v, const Origin& at) {
  assign(s.rank_order, std::string(v), at);
}

// Layer counts per virtual stage, "8*14" for 14 stages of 8 (split_string's runs); their sum and
// number are check_split's, once pp and vpp are known.
void set_stages(LayoutSpec& s, std::string_view v, const Origin& at) {
  constexpr int64_t kMaxStages = 1 << 20;
  std::vector<int> stages;
  while (true) {
    const size_t comma = v.find(',');
    const std::string_view item = trim(v.substr(0, comma));
    const size_t star = item.find('*');
    const auto layers = static_cast<int>(parse_count(trim(item.substr(0, star)), 0, kIntMax, at));
    const int64_t times = star == std::string_view::npos
                              ? 1
                              : parse_count(trim(item.substr(star + 1)), 1, kMaxStages, at);
    if (std::ssize(stages) + times > kMaxStages) at.fail("too many stages");
    stages.insert(stages.end(), static_cast<size_t>(times), layers);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  assign(s.stages, std::move(stages), at);
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
    {"schedule", "", set_enum<Schedule, 6, kScheduleNames, &LayoutSpec::schedule>},
    {"order", "rank_order", set_rank_order},
    {"stages", "", set_stages},
};

const Setting* find_setting(std::string_view key) {
  for (const Setting& s : kSettings)
    if (s.key == key || s.long_key == key) return &s;
  return nullptr;
}

// Whether `longer` is `shorter` followed by a word separator ("pp_size" and "pp").
bool extends(std::string_view longer, std::string_view shorter) {
  return longer.size() > shorter.size() && longer.starts_with(shorter) &&
         (longer[shorter.size()] == '_' || longer[shorter.size()] == '-');
}

// "did you mean": a known name with a suffix added ("pp_size", "zero_stage"), else the near
// misses closest_names finds ("ordr", "sequence", "--micro-bach-size").
std::string unknown_hint(std::string_view word, const std::vector<std::string>& names) {
  std::vector<std::string> near;
  for (const std::string& n : names)
    if (extends(word, n)) near.push_back(n);
  if (near.empty()) near = closest_names(std::string(word), names);
  const std::string accepted = fmt::format("accepted: {}", fmt::join(names, ", "));
  if (near.empty()) return accepted;
  return fmt::format("did you mean {}? {}", fmt::join(near, " or "), accepted);
}

// Every name and alias in a table, for "accepted: ..." hints.
template <class T, size_t N>
std::vector<std::string> names_of(const T (&table)[N], std::string_view T::*name,
                                  std::string_view T::*alias) {
  std::vector<std::string> names;
  for (const T& row : table) {
    names.emplace_back(row.*name);
    if (!(row.*alias).empty()) names.emplace_back(row.*alias);
  }
  return names;
}

// What a Megatron-LM flag does: set one of the compact string's settings, or one of the few
// things only Megatron-LM spells (virtual stages by layers, the recompute method, the dtype).
enum class FlagAction {
  setting,
  layers_per_virtual_stage,
  recompute_method,
  recompute_num_layers,
  dtype,
  first_stage_layers,
  last_stage_layers,
  account_for_embedding,
  account_for_loss,
  pipeline_layout,
  fp8_format,
  fp8_recipe,
  framework_behaviour
};

// Megatron-LM's flag names (megatron/training/arguments.py); a switch stands for `fixed`.
struct Flag {
  std::string_view name;
  std::string_view alias;
  FlagAction action = FlagAction::setting;
  std::string_view setting;  // the compact key it sets (action == setting)
  std::string_view fixed;    // the value a switch stands for; "" when the flag takes a value
};

constexpr Flag kFlags[] = {
    {"--tensor-model-parallel-size", "--tp", FlagAction::setting, "tp", ""},
    {"--pipeline-model-parallel-size", "--pp", FlagAction::setting, "pp", ""},
    {"--context-parallel-size", "--cp", FlagAction::setting, "cp", ""},
    {"--expert-model-parallel-size", "--ep", FlagAction::setting, "ep", ""},
    {"--sequence-parallel", "", FlagAction::setting, "sp", "1"},
    {"--micro-batch-size", "", FlagAction::setting, "mbs", ""},
    {"--global-batch-size", "", FlagAction::setting, "gbs", ""},
    {"--num-virtual-stages-per-pipeline-rank", "", FlagAction::setting, "vpp", ""},
    // Megatron-LM: virtual_pipeline_model_parallel_size = (num_layers / pp) / this.
    {"--num-layers-per-virtual-pipeline-stage", "", FlagAction::layers_per_virtual_stage, "vpp",
     ""},
    {"--recompute-granularity", "", FlagAction::setting, "recompute", ""},
    // Megatron-LM: "--recompute-activations" sets recompute_granularity = 'selective'.
    {"--recompute-activations", "", FlagAction::setting, "recompute", "selective"},
    {"--recompute-method", "", FlagAction::recompute_method, "recompute", ""},
    {"--recompute-num-layers", "", FlagAction::recompute_num_layers, "recompute", ""},
    // DeepSpeed's name for the stage. Megatron-LM's distributed optimizer shards the fp32 master
    // weights and optimizer states over dp (docs/source/api-guide/dist_optimizer.md): ZeRO-1;
    // torch FSDP2 shards parameters, gradients and optimizer states: ZeRO-3.
    {"--zero-stage", "", FlagAction::setting, "zero", ""},
    {"--use-distributed-optimizer", "", FlagAction::setting, "zero", "1"},
    {"--use-torch-fsdp2", "", FlagAction::setting, "zero", "3"},
    {"--bf16", "", FlagAction::dtype, "dtype", "bf16"},
    {"--fp16", "", FlagAction::dtype, "dtype", "fp16"},
    // Transformer Engine's FP8 linears (core/dtype.h: Fp8Recipe): E4M3 forward and E5M2
    // gradients, by Megatron-LM's recipe names (tensorwise is current scaling).
    {"--fp8-format", "", FlagAction::fp8_format, "fp8", ""},
    {"--fp8-recipe", "", FlagAction::fp8_recipe, "fp8", ""},
    // How the framework runs the step, which the framework profile (--framework) says for
    // pricing; accepted so that an exported command line reads back.
    {"--overlap-grad-reduce", "", FlagAction::framework_behaviour, "", "1"},
    {"--overlap-param-gather", "", FlagAction::framework_behaviour, "", "1"},
    {"--tp-comm-overlap", "", FlagAction::framework_behaviour, "", "1"},
    // The uneven split (core/stage_split.h), resolved once pp and vpp are read.
    {"--decoder-first-pipeline-num-layers", "", FlagAction::first_stage_layers, "stages", ""},
    {"--decoder-last-pipeline-num-layers", "", FlagAction::last_stage_layers, "stages", ""},
    {"--account-for-embedding-in-pipeline-split", "", FlagAction::account_for_embedding, "stages",
     "1"},
    {"--account-for-loss-in-pipeline-split", "", FlagAction::account_for_loss, "stages", "1"},
    {"--pipeline-model-parallel-layout", "", FlagAction::pipeline_layout, "stages", ""},
};

const Flag* find_flag(std::string_view name) {
  for (const Flag& f : kFlags)
    if (f.name == name || f.alias == name) return &f;
  return nullptr;
}

// The error field of a flag: the layout JSON's name ("layout.micro_batch"), as validate_layout
// names it.
std::string flag_field(const Flag& f) {
  const Setting* s = find_setting(f.setting);
  if (!s) return "layout." + std::string(f.setting);
  return "layout." + std::string(s->long_key.empty() ? s->key : s->long_key);
}

// What the flags say beyond a LayoutSpec, checked once all are read.
struct MegatronExtras {
  std::optional<int> layers_per_virtual_stage;
  std::optional<std::string> recompute_method;
  std::optional<int> recompute_num_layers;
  std::optional<int> first_stage_layers, last_stage_layers;
  std::optional<bool> account_for_embedding, account_for_loss;
  std::optional<std::string> pipeline_layout;
  std::optional<std::string> fp8_format, fp8_recipe;
};

void apply_flag(const Flag& f, std::string_view value, const Origin& at, LayoutSpec& spec,
                MegatronExtras& extras) {
  switch (f.action) {
    case FlagAction::setting:
      find_setting(f.setting)->set(spec, value, at);
      return;
    case FlagAction::layers_per_virtual_stage:
      assign(extras.layers_per_virtual_stage, static_cast<int>(parse_count(value, 1, kIntMax, at)),
             at);
      return;
    // Full recompute as priced here checkpoints every layer's input (Narayanan et al. 2021, §3.5):
    // Megatron-LM's "uniform" method with one layer per group. "block" recomputes only some
    // layers of each stage, and larger groups keep fewer checkpoints; neither is modelled.
    case FlagAction::recompute_method:
      if (value != "uniform")
        at.fail(fmt::format("\"{}\" is not modelled", value),
                "full recompute is priced as --recompute-method uniform --recompute-num-layers 1");
      assign(extras.recompute_method, std::string(value), at);
      return;
    case FlagAction::recompute_num_layers:
      if (parse_count(value, 1, kIntMax, at) != 1)
        at.fail(fmt::format("{} layers per recompute group are not modelled", value),
                "full recompute is priced as --recompute-method uniform --recompute-num-layers 1");
      assign(extras.recompute_num_layers, 1, at);
      return;
    case FlagAction::dtype:
      assign(spec.dtype, *enum_from_name(value, kDtypeNames), at);
      return;
    case FlagAction::first_stage_layers:
      assign(extras.first_stage_layers, static_cast<int>(parse_count(value, 0, kIntMax, at)), at);
      return;
    case FlagAction::last_stage_layers:
      assign(extras.last_stage_layers, static_cast<int>(parse_count(value, 0, kIntMax, at)), at);
      return;
    case FlagAction::account_for_embedding:
      assign(extras.account_for_embedding, true, at);
      return;
    case FlagAction::account_for_loss:
      assign(extras.account_for_loss, true, at);
      return;
    case FlagAction::pipeline_layout:
      assign(extras.pipeline_layout, std::string(value), at);
      return;
    case FlagAction::fp8_format:
      if (value != "hybrid" && value != "e4m3")
        at.fail(fmt::format("\"{}\" is not modelled", value),
                "FP8 linears are priced as hybrid (E4M3 forward, E5M2 gradients) or e4m3");
      assign(extras.fp8_format, std::string(value), at);
      return;
    case FlagAction::fp8_recipe: {
      const std::optional<Fp8Recipe> r = enum_from_name(value, kMegatronFp8RecipeNames);
      if (!r)
        at.fail(fmt::format("\"{}\" is not modelled", value),
                "one of: " + enum_choices(kMegatronFp8RecipeNames));
      assign(extras.fp8_recipe, std::string(value), at);
      assign(spec.fp8, *r, at);
      return;
    }
    case FlagAction::framework_behaviour:
      return;
  }
}

// The split the uneven-pipeline flags give, on the pp and vpp the other flags gave.
void resolve_split(const MegatronExtras& extras, const Model& model, LayoutSpec& spec) {
  const bool first_last = extras.first_stage_layers || extras.last_stage_layers;
  const bool accounted = extras.account_for_embedding || extras.account_for_loss;
  const std::string flag = extras.first_stage_layers  ? "--decoder-first-pipeline-num-layers"
                           : extras.last_stage_layers ? "--decoder-last-pipeline-num-layers"
                           : extras.account_for_embedding
                               ? "--account-for-embedding-in-pipeline-split"
                           : extras.account_for_loss ? "--account-for-loss-in-pipeline-split"
                                                     : "--pipeline-model-parallel-layout";
  const Origin at{flag, "layout.stages"};
  // Megatron-LM (arguments.py) takes one of the three ways at a time.
  if (int{first_last} + int{accounted} + int{extras.pipeline_layout.has_value()} > 1)
    at.fail("takes no other uneven-pipeline flag",
            "give --decoder-first/last-pipeline-num-layers, the --account-for-* flags, or "
            "--pipeline-model-parallel-layout");
  const int pp = spec.pp.value_or(1), vpp = spec.vpp.value_or(1);
  std::string why;
  std::vector<int> stages;
  if (extras.pipeline_layout) {
    stages = parse_megatron_layout_string(*extras.pipeline_layout, why);
    if (!why.empty()) at.fail(why);
    // Megatron-Core: the layout's stages are pp·vpp, which gives vpp.
    if (stages.size() % static_cast<size_t>(pp) != 0)
      at.fail(fmt::format("{} stages do not divide over pp={}", stages.size(), pp));
    const int implied_vpp = static_cast<int>(stages.size()) / pp;
    if (spec.vpp && *spec.vpp != implied_vpp)
      at.fail(fmt::format("{} stages over pp={} give vpp={}, found vpp={}", stages.size(), pp,
                          implied_vpp, *spec.vpp));
    spec.vpp = implied_vpp;
  } else if (first_last) {
    stages =
        megatron_first_last_split(model.num_layers, pp, vpp, extras.first_stage_layers.value_or(-1),
                                  extras.last_stage_layers.value_or(-1), why);
  } else {
    stages = megatron_accounted_split(model.num_layers, pp, vpp,
                                      extras.account_for_embedding.value_or(false),
                                      extras.account_for_loss.value_or(false), why);
  }
  if (stages.empty()) at.fail(why);
  assign(spec.stages, std::move(stages), at);
}

void check_extras(const MegatronExtras& extras, const Model& model, LayoutSpec& spec) {
  // Megatron-LM trains in FP8 once --fp8-format is given, by its --fp8-recipe (default delayed).
  if (extras.fp8_recipe && !extras.fp8_format)
    Origin{"--fp8-recipe", "layout.fp8"}.fail("takes effect with --fp8-format only",
                                              "add --fp8-format hybrid");
  if (extras.fp8_format && !spec.fp8) spec.fp8 = Fp8Recipe::delayed;
  if (extras.recompute_method || extras.recompute_num_layers) {
    const std::string flag =
        extras.recompute_method ? "--recompute-method" : "--recompute-num-layers";
    // Megatron-LM: a recompute method applies to full granularity only.
    if (spec.recompute != Recompute::full)
      Origin{flag, "layout.recompute"}.fail(
          fmt::format("applies to --recompute-granularity full, found {}",
                      enum_name(spec.recompute.value_or(Recompute::none), kRecomputeNames)));
  }
  if (extras.first_stage_layers || extras.last_stage_layers || extras.account_for_embedding ||
      extras.account_for_loss || extras.pipeline_layout) {
    if (extras.layers_per_virtual_stage)
      Origin{"--num-layers-per-virtual-pipeline-stage", "layout.vpp"}.fail(
          "is for an even split", "with an uneven one give --num-virtual-stages-per-pipeline-rank");
    resolve_split(extras, model, spec);
  }
  if (!extras.layers_per_virtual_stage) return;
  const Origin at{"--num-layers-per-virtual-pipeline-stage", "layout.vpp"};
  const int pp = spec.pp.value_or(1);
  const int64_t per_pipeline_rank = int64_t{pp} * *extras.layers_per_virtual_stage;
  if (model.num_layers % per_pipeline_rank != 0)
    at.fail(
        fmt::format("pp={} × {} layers per virtual stage = {} does not divide num_hidden_layers={}",
                    pp, *extras.layers_per_virtual_stage, per_pipeline_rank, model.num_layers));
  assign(spec.vpp, static_cast<int>(model.num_layers / per_pipeline_rank), at);
}

}  // namespace

LayoutSpec parse_layout_string(std::string_view s, const std::string& source) {
  LayoutSpec spec;
  if (trim(s).empty()) return spec;
  std::vector<std::string_view> items;
  while (true) {
    const size_t comma = s.find(',');
    items.push_back(trim(s.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string_view item = items[i];
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(source, "", fmt::format("expected key=value, found \"{}\"", item),
                       "items are separated by commas: \"tp=8,pp=4,mbs=1\"");
    const std::string_view key = trim(item.substr(0, eq));
    if (key.empty())
      throw InputError(source, "layout", fmt::format("\"{}\" has no key before its =", item),
                       "write key=value, as in \"tp=8\"");
    const Origin at{source, "layout." + std::string(key)};
    const Setting* setting = find_setting(key);
    if (!setting)
      at.fail("unknown key",
              unknown_hint(key, names_of(kSettings, &Setting::key, &Setting::long_key)));
    std::string value(trim(item.substr(eq + 1)));
    // A list goes on over the items without a key that follow it: "stages=7,8,8,7,tp=8".
    if (setting->set == set_stages)
      while (i + 1 < items.size() && items[i + 1].find('=') == std::string_view::npos) {
        value.push_back(',');
        value.append(items[++i]);
      }
    setting->set(spec, value, at);
  }
  return spec;
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

LayoutSpec parse_megatron_flags(const std::vector<std::string>& args, const Model& model) {
  LayoutSpec spec;
  MegatronExtras extras;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--"))
      throw InputError(arg, "", "expected a Megatron-LM flag (--name value or --name=value)");
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Flag* flag = find_flag(name);
    if (!flag)
      throw InputError(name, "", "unknown Megatron-LM flag",
                       unknown_hint(name, names_of(kFlags, &Flag::name, &Flag::alias)));
    const Origin at{name, flag_field(*flag)};
    std::string value;
    if (!flag->fixed.empty()) {
      if (eq != std::string::npos) at.fail("takes no value");
      value = flag->fixed;
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 == args.size()) at.fail("missing value");
      value = args[++i];
    }
    apply_flag(*flag, value, at, spec, extras);
  }
  check_extras(extras, model, spec);
  return spec;
}

}  // namespace shardplan

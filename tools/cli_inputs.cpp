#include "tools/cli_inputs.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <utility>
#include <vector>

#include "core/error.h"
#include "core/human_format.h"
#include "core/json_reader.h"
#include "core/layout.h"
#include "core/presets.h"

namespace shardplan::cli {

void add_input_options(CLI::App* app, InputOptions& o, LayoutInput layout) {
  app->add_option("--model,-m", o.model,
                  "Model: preset name, our JSON, or a Hugging Face config.json (or its folder)");
  app->add_option("--cluster,-c", o.cluster,
                  "Cluster: preset name from topologies/ or a JSON path");
  app->add_option("--nodes,-n", o.nodes, "Number of nodes of the cluster's node description")
      ->check(kPositive);
  app->add_option("--training", o.training_file,
                  "Training JSON (batch, sequence, dtype, optimizer)");
  app->add_option("--gbs", o.gbs, "Global batch size in sequences")->check(kPositive);
  app->add_option("--seq", o.seq, "Sequence length in tokens")->check(kPositive);
  app->add_option("--dtype", o.dtype,
                  "Compute dtype: bf16 (default), fp16, fp32 (with fp32 gradients and no master "
                  "copy)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "tf32"}));
  app->add_option("--fp8", o.fp8,
                  "The linear layers' GEMMs in FP8, as Transformer Engine runs them: none "
                  "(default), delayed (per-tensor scales from past amaxes, Hopper's default), "
                  "current (per-tensor scales from the tensor's own amax), mxfp8 (a scale per "
                  "32 elements, Blackwell)")
      ->check(CLI::IsMember({"none", "delayed", "current", "mxfp8"}));
  app->add_option("--profile", o.profile_file,
                  "Price with what `shardplan calibrate` measured (GEMM rates by shape, kernel "
                  "rates, memory bandwidth, collective fits) instead of the datasheet "
                  "efficiencies; a cpu profile also prices the layers as the cpu executor runs "
                  "them (one thread per rank in program order, unfused attention and biases)");
  if (layout == LayoutInput::none) return;
  auto* opt = app->add_option("--layout,-l", o.layout,
                              "Compact layout, e.g. "
                              "\"tp=8,pp=4,dp=32,zero=1,mbs=1,sp=1,vpp=2,recompute=selective,"
                              "schedule=1f1b\" (dp may be left out)");
  app->add_option(
      "--megatron", o.megatron,
      "The layout as Megatron-LM flags in one string: \"--tp 8 --pp 4 --sequence-parallel\"");
  app->add_option("--deepspeed-config", o.deepspeed_config,
                  "A DeepSpeed config JSON (ZeRO stage, batch sizes)");
  if (layout == LayoutInput::required) opt->needs(app->get_option("--model"));
}

void add_plan_options(CLI::App* app, InputOptions& o) {
  app->add_option("plan", o.plan_file, "A plan JSON (instead of --model/--cluster/--layout)");
  add_input_options(app, o, LayoutInput::optional);
}

const CLI::Validator kPositive(
    [](std::string& text) -> std::string {
      double value = 0;
      if (CLI::detail::lexical_cast(text, value) && value > 0) return "";
      return (text.size() > 40 ? text.substr(0, 40) + "..." : text) + " is not a number above 0";
    },
    "POSITIVE", "positive");

void add_report_options(CLI::App* app, ReportOptions& o) {
  app->add_option("--json", o.json_file, "Also write every figure as JSON to this file");
  app->add_option("--format", o.format, "table (default) or json on stdout")
      ->check(CLI::IsMember({"table", "json"}));
  app->add_flag("--wide", o.wide,
                "Print tables whole, one line a row, however wide (default: they fit 100 "
                "columns, long cells wrapped)");
}

void emit_report(const ReportOptions& o, const nlohmann::json& j, const std::string& text) {
  if (!o.json_file.empty()) write_json_file(o.json_file, j);
  if (o.format == "json")
    fmt::print("{}\n", j.dump(2));
  else
    fmt::print("{}", text);
}

int print_report(const ReportOptions& o, const Plan& p, const nlohmann::json& j,
                 const std::string& table, bool fits) {
  // The title's full layout string runs past 100 columns: wrapped at its commas unless --wide.
  const std::string title = fmt::format("{}: {} on {} x {} ({} devices)", to_string(p.layout),
                                        p.model.name, p.cluster.name, p.cluster.nodes,
                                        p.cluster.world());
  emit_report(o, j,
              (o.wide ? title + "\n" : row_with_wrapped_last("", title)) + "\n" + table);
  return static_cast<int>(fits ? ExitCode::ok : ExitCode::nothing_fits);
}

void add_framework_option(CLI::App* app, std::string& framework) {
  app->add_option("--framework", framework,
                  "How the layers run: a framework profile from frameworks/ or a path to one")
      ->default_val(kDefaultFramework);
}

namespace {

Training resolve_training(const InputOptions& o, const Model& model) {
  Training t;
  if (!o.training_file.empty())
    t = training_from_json(read_json_file(o.training_file), o.training_file);
  if (o.gbs) t.global_batch = *o.gbs;
  if (o.seq) t.seq_len = *o.seq;
  if (!o.dtype.empty()) t = with_compute_dtype(t, *enum_from_name(o.dtype, kDtypeNames));
  if (!o.fp8.empty()) t.fp8 = *enum_from_name(o.fp8, kFp8RecipeNames);
  if (t.seq_len == 0)
    throw InputError("--seq", "training.seq_len", "not given",
                     "pass --seq 4096, or seq_len in --training FILE");
  if (t.global_batch != 0)  // plan may take it from --fix
    validate_training(t, o.training_file.empty() ? "--gbs/--seq" : o.training_file);
  if (t.seq_len > model.max_seq)
    throw InputError(
        "--seq", "training.seq_len",
        "is " + std::to_string(t.seq_len) +
            ", longer than the model's max_position_embeddings=" + std::to_string(model.max_seq));
  return t;
}

}  // namespace

Inputs resolve_inputs(const InputOptions& o) {
  if (o.model.empty())
    throw InputError("--model", "", "not given", "a preset name such as llama3-8b, or a path");
  if (o.cluster.empty())
    throw InputError("--cluster", "", "not given", "a preset name such as dgx-h100, or a path");
  Inputs in{load_model(o.model), load_cluster(o.cluster, o.nodes), {}};
  in.training = resolve_training(o, in.model);
  return in;
}

Plan resolve_plan(const InputOptions& o, const std::string& framework) {
  if (!o.plan_file.empty()) return load_plan(o.plan_file);
  Inputs in = resolve_inputs(o);
  if (!framework.empty()) in.training = run_by(in.training, load_framework(framework));
  LayoutSpec spec;
  std::string source = "--layout";
  if (!o.deepspeed_config.empty()) {
    spec =
        merge(spec, layout_from_deepspeed(read_json_file(o.deepspeed_config), o.deepspeed_config));
    source = o.deepspeed_config;
  }
  bool megatron_split = false;
  if (!o.megatron.empty()) {
    const LayoutSpec flags = parse_megatron_flags(split_words(o.megatron), in.model);
    megatron_split = flags.stages.has_value();
    spec = merge(spec, flags);
    source = "--megatron";
  }
  if (!o.layout.empty()) {
    const LayoutSpec given = parse_layout_string(o.layout, "--layout");
    megatron_split = megatron_split && !given.stages;
    spec = merge(spec, given);
    source = "--layout";
  }
  // Megatron-LM's split flags count layers per pipeline rank in its interleaved placement.
  if (megatron_split && spec.schedule && v_placement(*spec.schedule))
    throw InputError("--megatron", "layout.stages",
                     "Megatron-LM's layer-split flags place chunks as its interleaved schedule "
                     "does, not in the V of schedule=" +
                         std::string(enum_name(*spec.schedule, kScheduleNames)),
                     "give each virtual stage's layers with stages= instead");
  if (o.gbs && spec.global_batch && *spec.global_batch != *o.gbs)
    throw InputError(source, "layout.global_batch",
                     fmt::format("is {} but --gbs is {}", *spec.global_batch, *o.gbs),
                     "give the global batch once");
  Layout layout = resolve_layout(spec, in.model, in.cluster, in.training, source);
  return Plan{std::move(in.model), std::move(in.cluster), in.training, std::move(layout),
              nlohmann::json::object()};
}

void check_profile_dtype(const Profile& p, const std::string& file, const Training& training) {
  if (p.dtype == training.dtype) return;
  throw InputError(
      file, "dtype",
      fmt::format("the profile measured {} GEMMs, the training computes in {}",
                  enum_name(p.dtype, kDtypeNames), enum_name(training.dtype, kDtypeNames)),
      fmt::format("pass --dtype {}, or calibrate in {}", enum_name(p.dtype, kDtypeNames),
                  enum_name(training.dtype, kDtypeNames)));
}

std::optional<Profile> apply_profile_option(const InputOptions& o, Cluster& cluster,
                                            const Training& training) {
  if (o.profile_file.empty()) return std::nullopt;
  Profile p = read_profile_file(o.profile_file);
  check_profile_dtype(p, o.profile_file, training);
  cluster = apply_profile(std::move(cluster), p, o.profile_file);
  return p;
}

ExecutionOptions priced_execution(const std::string& framework, Training& training,
                                  const std::optional<Profile>& profile) {
  if (profile && profile->backend == Backend::cpu) {
    ExecutionOptions x = cpu_executor_options();
    x.profile = &*profile;
    return x;
  }
  const Framework f = load_framework(framework);
  training = run_by(training, f);
  ExecutionOptions x = execution_options(f);
  x.profile = profile ? &*profile : nullptr;
  return x;
}

}  // namespace shardplan::cli

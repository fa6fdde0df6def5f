// A plan as the training frameworks take it: Megatron-LM command-line flags and a DeepSpeed config,
// with names exactly as those projects spell them, and what each framework cannot run.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/layout.h"
#include "core/plan.h"

namespace shardplan {

enum class ExportFormat { megatron, deepspeed };
inline constexpr EnumNames<ExportFormat, 2> kExportFormatNames{
    {{ExportFormat::megatron, "megatron"}, {ExportFormat::deepspeed, "deepspeed"}}};

// Why `format` cannot run the layout as shardplan prices it, or nullopt when it can.
std::optional<std::string> unsupported_by(ExportFormat format, const Layout& l);

// Megatron-LM's flags (megatron/training/arguments.py), one token each:
// {"--tensor-model-parallel-size", "8", ..., "--bf16"}. The layout must be supported.
std::vector<std::string> megatron_flags(const Plan& p);

// The flags for what a DeepSpeed config cannot hold (tp, pp, cp, ep, sp, recompute), as
// Megatron-DeepSpeed takes them next to --deepspeed_config.
std::vector<std::string> megatron_parallel_flags(const Plan& p);

// DeepSpeed's config (deepspeed/runtime/config.py): train_batch_size,
// train_micro_batch_size_per_gpu, gradient_accumulation_steps, zero_optimization.stage, and
// bf16.enabled or fp16.enabled. The layout must be supported.
nlohmann::json deepspeed_config(const Plan& p);

// Flags joined by spaces, a line per flag with its value, ready for a launch script.
std::string format_flags(const std::vector<std::string>& flags);

}  // namespace shardplan

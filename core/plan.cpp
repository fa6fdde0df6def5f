#include "core/plan.h"

#include "core/json_reader.h"
#include "core/stage_split.h"

namespace shardplan {

namespace {
// Reads one section of the plan with its description's own reader, whose errors name fields
// relative to the section; they are re-thrown with the section's name in front
// ("training.seq_len").
template <class Read>
auto read_section(ObjectReader& plan, std::string_view key, Read read) {
  const nlohmann::json& section = plan.raw(key);
  try {
    return read(section, plan.file());
  } catch (const InputError& e) {
    const std::string field = e.field.empty() ? std::string(key) : std::string(key) + "." + e.field;
    throw InputError(e.file, field, e.reason, e.hint);
  }
}
}  // namespace

Plan plan_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file);
  Plan p;
  p.model = read_section(r, "model", model_from_json);
  p.cluster = read_section(r, "cluster", cluster_from_json);
  p.training = read_section(r, "training", training_from_json);
  // The layout's reader names its fields "layout.*" itself, as every layout error does.
  p.layout = layout_from_json(r.raw("layout"), file);
  if (r.has("prediction")) {
    p.prediction = r.raw("prediction");
    if (!p.prediction.is_object())
      r.fail("prediction", std::string("expected an object, found ") + p.prediction.type_name());
  } else {
    r.ignore({"prediction"});
  }
  r.reject_unknown();
  validate_layout(p.layout, p.model, p.cluster, p.training, file);
  p.layout.stages = canonical_split(std::move(p.layout.stages));
  return p;
}

nlohmann::json plan_to_json(const Plan& p) {
  return {{"model", model_to_json(p.model)},
          {"cluster", cluster_to_json(p.cluster)},
          {"training", training_to_json(p.training)},
          {"layout", layout_to_json(p.layout)},
          {"prediction", p.prediction}};
}

Plan load_plan(const std::string& path) {
  return plan_from_json(read_json_file(path), path);
}

}  // namespace shardplan

// Adam's hyperparameters (the optimizer is adam.h; each backend's update kernel reads these).
#pragma once

namespace shardplan {

// Defaults: Kingma & Ba 2015, Algorithm 1 (β1 = 0.9, β2 = 0.999, ε = 1e-8); weight_decay > 0 is
// AdamW's decoupled decay (Loshchilov & Hutter 2019, Algorithm 2).
struct AdamConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

}  // namespace shardplan

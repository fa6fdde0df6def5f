// Models, clusters and trainings built directly as structs for the layout, training and plan
// tests, with the published shapes of Llama 2 70B, Llama 3 8B and Mixtral 8x7B (their Hugging
// Face config.json files).
#pragma once

#include <stdexcept>
#include <string>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/training.h"

namespace shardplan::test {

inline Model llama2_70b() {
  Model m;
  m.name = "llama2-70b";
  m.num_layers = 80;
  m.hidden = 8192;
  m.num_heads = 64;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 28672;
  m.vocab = 32000;
  m.max_seq = 4096;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position_embedding = PositionEmbedding::rope;
  return m;
}

inline Model llama3_8b() {
  Model m = llama2_70b();
  m.name = "llama3-8b";
  m.num_layers = 32;
  m.hidden = 4096;
  m.num_heads = 32;
  m.ffn_hidden = 14336;
  m.vocab = 128256;
  m.max_seq = 8192;
  return m;
}

inline Model mixtral_8x7b() {
  Model m = llama3_8b();
  m.name = "mixtral-8x7b";
  m.vocab = 32000;
  m.max_seq = 32768;
  m.moe = Moe{.num_experts = 8, .top_k = 2, .expert_ffn_hidden = 14336, .layer_freq = 1};
  return m;
}

// `nodes` DGX H100 nodes: 8 GPUs on NVLink 4 (450 GB/s per direction), 8 × 400 Gb/s InfiniBand
// NICs (50 GB/s each) per node (NVIDIA DGX H100 datasheet).
inline Cluster dgx_h100(int nodes) {
  Cluster c;
  c.name = "dgx-h100";
  c.nodes = nodes;
  c.devices_per_node = 8;
  c.device = Device{.name = "H100-SXM5-80GB",
                    .memory_GiB = 80,
                    .memory_GBps = 3350,
                    .peak_tflops_fp32 = 67,
                    .peak_tflops_tf32 = 494.5,
                    .peak_tflops_bf16 = 989.5,
                    .peak_tflops_fp16 = 989.5};
  c.levels = {InterconnectLevel{.name = "nvlink",
                                .kind = LinkKind::nvlink,
                                .span_devices = 8,
                                .bandwidth_GBps = 450,
                                .latency_us = 3},
              InterconnectLevel{.name = "infiniband",
                                .kind = LinkKind::infiniband,
                                .span_devices = 0,
                                .nics_per_node = 8,
                                .nic_GBps = 50,
                                .latency_us = 5}};
  return c;
}

inline Training training(int64_t global_batch, int64_t seq_len) {
  Training t;
  t.global_batch = global_batch;
  t.seq_len = seq_len;
  return t;
}

// The InputError `f` throws; a test failure when it throws none.
template <class F>
InputError error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  throw std::logic_error("expected an InputError, none was thrown");
}

}  // namespace shardplan::test

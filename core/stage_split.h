// How many transformer layers each pipeline stage (each virtual stage, with vpp > 1) holds. Layers
// that do not divide over pp·vpp go unevenly, as Megatron-LM, nanotron and torchtitan run them:
// Llama 3 405B's 126 layers over 16 stages, the first and last a layer short (Llama 3 paper
// §3.3.2).
#pragma once

#include <string>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "core/training.h"

namespace shardplan {

// The layers of each virtual stage (pp·vpp entries, virtual-stage order: chunk c of pipeline
// rank r is virtual stage c·pp + r): the layout's own split, or the even one when it gives none.
std::vector<int> stage_split(const Model& m, const Layout& l);

// `layers` over `chunks` as evenly as possible once the first chunk is charged `first_extra`
// layers' worth of work and the last `last_extra` (Megatron-LM's
// --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split count the
// embedding and the loss as one layer each): each layer goes to the least loaded chunk, among
// equals the one farthest from the ends, and of two as far the earlier. With no extras the split
// is even when `chunks` divides `layers`, and otherwise the ends are a layer short, the last
// first: it holds the final norm, the LM head and the loss, the first the embedding. Empty when
// a chunk other than the ends would hold no layer.
std::vector<int> balanced_split(int layers, int chunks, int first_extra = 0, int last_extra = 0);

// The LM head's work in layers, 1 to 3: its h·V weights over a dense layer's, as a token's matmul
// FLOPs go with the weights it meets (2 per weight, Kaplan et al. 2020 §2.1).
int head_layers(const Model& m);

// The splits the planner prices for `chunks` virtual stages: the balanced one, then with the loss,
// the loss and the embedding, and the head's work (head_layers) counted as layers on the ends (a
// large vocabulary makes the last stage heavy: layers off it can shorten the step), each in
// canonical form and once.
std::vector<std::vector<int>> candidate_splits(const Model& m, int chunks);

// The layout's form of a split: empty when every stage holds the same number of layers (the even
// split, which is what an empty `stages` means), so that layouts compare equal either way.
std::vector<int> canonical_split(std::vector<int> stages);

// Megatron-LM's rules on a split (get_num_layers_to_build): pp·vpp entries summing to
// num_hidden_layers, each at least 1 but the first and last virtual stage, which may hold only the
// embedding or the loss. Errors name `source` and "layout.stages".
void check_split(const std::vector<int>& stages, const Model& m, const Layout& l,
                 const std::string& source);

// nanotron's split over `pp` pipeline ranks (src/nanotron/models/base.py build_model, costed by
// LlamaForTraining.get_block_compute_costs): the blocks in order (the embedding, each decoder
// layer at 4·heads·(h/heads)·h + 3·ffn·h, the final norm, the LM head at V·h, the loss; the others
// cost nothing) go to rank r until their running cost passes (r + 1)/pp of the total, the block
// that passes it included. The LM head's cost moves layers onto the first ranks, and the last
// ranks may be left without any: Ultra-Scale's 1B over 8 ranks runs 3,3,2,3,2,3,0,0 (the seventh
// holds the final norm and the head, the eighth the loss; the schedule puts both on the last).
std::vector<int> cost_balanced_split(const Model& m, int pp);

// The layout as the training's framework runs it (Training::layer_split): with cost_balanced, a
// pipelined layout that gives no split gets cost_balanced_split's, in canonical form
// (resolve_layout and validate's rows ask for it). validate_layout refuses what that framework
// would not run: a split other than its own, virtual stages.
Layout split_as_run(Layout l, const Model& m, const Training& t);

// Megatron-LM's split from --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers
// (-1: not given): the remaining layers evenly over the other pipeline ranks, every rank's layers
// evenly over its vpp chunks. Empty, with `why` set, when Megatron-LM refuses them.
std::vector<int> megatron_first_last_split(int layers, int pp, int vpp, int first, int last,
                                           std::string& why);

// Megatron-LM's split with the embedding and/or the loss counted as a layer: (layers + counted)/pp
// per rank, /vpp per chunk, less one on the first (last) virtual stage. Empty, with `why` set,
// when Megatron-LM refuses it.
std::vector<int> megatron_accounted_split(int layers, int pp, int vpp, bool embedding, bool loss,
                                          std::string& why);

// Megatron-Core's --pipeline-model-parallel-layout for a split: virtual stages separated by "|",
// "E" the embedding, "t*N" N decoder layers, "L" the loss, runs of equal stages repeated
// ("Et*7|(t*8|)*14,t*7,L").
std::string megatron_layout_string(const std::vector<int>& stages);

// The decoder layers of each stage of a --pipeline-model-parallel-layout string, read as
// Megatron-Core's PipelineParallelLayerLayout reads it (commas cosmetic, as are quotes a shell
// would have taken off; "(...)*n" and "x*n" repeated; "E" first, "L" last, each once; "m", MTP,
// is not modelled). Empty, with `why` set, when it is malformed.
std::vector<int> parse_megatron_layout_string(const std::string& layout, std::string& why);

// The compact string's form, runs of three or more as count*times: "7,8*14,7".
std::string split_string(const std::vector<int>& stages);

}  // namespace shardplan

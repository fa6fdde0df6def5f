#!/usr/bin/env bash
# The checks that need a GPU, in one pass, for a machine with at least one CUDA device and a build
# with the CUDA backend (tools/setup.sh builds it where nvcc is found):
#   1. the CUDA tests (CTest's "cuda" tests: kernels against the CPU's, the interpreter on one rank
#      against the CPU backend, the CLI's execute and calibrate on one GPU);
#   2. calibrate one GPU in bf16 at a ~1B GPT's layer shapes, plan that model for one GPU with the
#      profile, execute the plan on the GPU and compare it with the prediction, with the profile
#      and with the datasheet figures (the loop on a GPU);
#   3. calibrate Llama 3 8B's layer GEMMs in bf16 at tp 1, 2, 4, 8 (cuBLAS's rate at a training
#      run's shapes, to set beside device.efficiency.matmul);
#   4. calibrate the Ultra-Scale grid's 1B, 3B and 8B (data/fidelity/ultrascale_dev.json) at the
#      shares its runs took, tp 1-16 (the small GEMMs its H100 rows run, for the cost model's
#      shape efficiency), then the loop of 2. on the 1B (a Llama-style layer).
# Every step runs even when one before it failed; the summary at the end says which failed.
# STEPS, a regular expression, picks steps by name (default: all): ctest, calibrate_xl, plan_xl,
# execute_xl, compare_xl_profile, compare_xl_datasheet, calibrate_llama3_8b,
# calibrate_ultrascale_{1b,3b,8b}, plan_us1b, execute_us1b, compare_us1b_profile and
# compare_us1b_datasheet.
# usage: tools/gpu_check.sh [BUILD_DIR=build] [OUT_DIR=out/gpu_check] [STEPS=.]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-out/gpu_check}
only=${3:-.}
mkdir -p "$out"
sp=$build/tools/shardplan
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -a failed=()
step() {  # step NAME TIMEOUT_S COMMAND...: runs and logs one check, noting a failure
  local name=$1 limit=$2
  shift 2
  [[ $name =~ $only ]] || return 0
  echo "=== $name: $*"
  local start=$SECONDS
  # Line-buffered (stdbuf, inherited through mpirun), so that a check cut off by its limit has
  # logged how far it got.
  timeout "$limit" stdbuf -oL -eL "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc after $((SECONDS - start)) s"
  [[ $rc == 0 ]] || failed+=("$name (exit $rc)")
}

nvidia-smi -L || { echo "gpu_check: no CUDA device (nvidia-smi -L failed)"; exit 1; }

step ctest 240 ctest --test-dir "$build" -R cuda --output-on-failure --timeout 120

# One GPU as a cluster: the DGX H100 description with one device per node (an H100 SXM).
python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
cluster = json.load(open("topologies/dgx-h100.json"))
cluster["name"] = "one-h100"
cluster["devices_per_node"] = 1
json.dump(cluster, open(f"{out}/one-h100.json", "w"), indent=1)
# A 1.3B GPT (GPT-3 XL's shape, Brown et al. 2020 table 2.1) on byte tokens: hidden 2048, 24 layers.
model = {"name": "gpt-xl-bytes", "num_hidden_layers": 24, "hidden_size": 2048,
         "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 8192,
         "vocab_size": 256, "max_position_embeddings": 1024, "hidden_act": "gelu",
         "norm": "layernorm", "position_embedding": "learned", "tie_word_embeddings": True,
         "qkv_bias": True, "out_bias": True, "mlp_bias": True}
json.dump(model, open(f"{out}/gpt-xl-bytes.json", "w"), indent=1)
# The Ultra-Scale grid's models as its benchmark built them: Llama's layer with multi-head attention.
grid = json.load(open("data/fidelity/ultrascale_dev.json"))["models"]
llama = {}
for size in ("1B", "3B", "8B"):
    shape = {k: grid[size][k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads",
             "num_key_value_heads", "intermediate_size", "vocab_size", "tie_word_embeddings")}
    llama[size] = {"name": f"ultrascale-{size.lower()}", **shape, "max_position_embeddings": 4096,
                   "hidden_act": "swiglu", "norm": "rmsnorm", "position_embedding": "rope"}
    json.dump(llama[size], open(f"{out}/ultrascale-{size.lower()}.json", "w"), indent=1)
# The 1B for the executor, which learns its positions (its layer GEMMs are the same).
loop = dict(llama["1B"], name="ultrascale-1b-learned-positions", position_embedding="learned")
json.dump(loop, open(f"{out}/ultrascale-1b-loop.json", "w"), indent=1)
EOF
model=$out/gpt-xl-bytes.json
cluster=$out/one-h100.json
shape=(--model "$model" --cluster "$cluster" --gbs 16 --seq 1024 --dtype bf16)
step calibrate_xl 120 "$sp" calibrate --backend cuda --dtype bf16 --ranks 1 --model "$model" --tp 1 \
  --micro-batch 1 2 4 8 16 --seq 1024 --out "$out/profile_xl.json"
step plan_xl 30 "$sp" plan "${shape[@]}" --fix tp=1,pp=1 --profile "$out/profile_xl.json" \
  --out "$out/plan_xl.json"
step execute_xl 120 "$sp" execute "$out/plan_xl.json" --backend cuda --steps 4 \
  --out "$out/measured_xl.json"
step compare_xl_profile 30 "$sp" compare "$out/plan_xl.json" "$out/measured_xl.json" \
  --profile "$out/profile_xl.json"
step compare_xl_datasheet 30 "$sp" compare "$out/plan_xl.json" "$out/measured_xl.json"
step calibrate_llama3_8b 120 "$sp" calibrate --backend cuda --dtype bf16 --ranks 1 \
  --model llama3-8b --tp 1 2 4 8 --micro-batch 1 --seq 4096 --out "$out/profile_llama3_8b.json"
for size in 1b 3b 8b; do
  step "calibrate_ultrascale_$size" 120 "$sp" calibrate --backend cuda --dtype bf16 --ranks 1 \
    --model "$out/ultrascale-$size.json" --tp 1 2 4 8 16 --micro-batch 1 4 --seq 4096 \
    --max-bytes 4194304 --out "$out/profile_ultrascale_$size.json"
done
# The loop on a Llama-style layer (SwiGLU, RMSNorm, a 131072-word head): the grid's 1B on one GPU,
# four micro-batches of one 4096-token sequence, priced from its profile.
us1b=(--model "$out/ultrascale-1b-loop.json" --cluster "$cluster" --gbs 4 --seq 4096 --dtype bf16)
step plan_us1b 30 "$sp" plan "${us1b[@]}" --fix tp=1,pp=1,mbs=1,recompute=none \
  --profile "$out/profile_ultrascale_1b.json" --out "$out/plan_us1b.json"
step execute_us1b 150 "$sp" execute "$out/plan_us1b.json" --backend cuda --steps 4 \
  --out "$out/measured_us1b.json"
step compare_us1b_profile 30 "$sp" compare "$out/plan_us1b.json" "$out/measured_us1b.json" \
  --profile "$out/profile_ultrascale_1b.json"
step compare_us1b_datasheet 30 "$sp" compare "$out/plan_us1b.json" "$out/measured_us1b.json"

echo "=== gpu_check: ${#failed[@]} failed${failed:+: ${failed[*]}}"
[[ ${#failed[@]} == 0 ]]

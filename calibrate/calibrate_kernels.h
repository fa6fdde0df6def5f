// Memory-bound kernel microbenchmarks: every kernel of core/memory_kernel.h the executor runs,
// through the executor's own kernels (Kernels: a CPU core's or a GPU's) on the shapes of a model's
// layers (a tp rank's share, a micro-batch), every rank at once. On a CPU core several of them are
// bound by their arithmetic (GELU's tanh, softmax's and cross entropy's exponentials, Adam's square
// roots), not by memory, so STREAM's bandwidth alone would price them several times too fast.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "calibrate/calibrate_options.h"
#include "calibrate/calibrate_timing.h"
#include "core/memory_kernel.h"
#include "core/profile.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

struct KernelTiming {
  MemoryKernel kernel = MemoryKernel::norm_forward;
  double elements = 0;  // per call, as core/memory_kernel.h counts them
  double time_s = 0;    // per call
  std::string what;     // the shape it ran on ("gpt-small tp=2 mbs=1")
};

// Times the kernels of one rank share `d` of a model's layer (its norm, activation, biases,
// residual, attention softmax, embedding, cross entropy over `vocab_rows` rows, Adam over
// `parameters`, none if 0) on `dev`, with operands from `alloc` (the device's memory); `label` names
// the shape. Every rank of `comm` calls it at once. The softmax only where `dev` times its GEMMs
// (MatmulStats seconds), the rest of attention's calls being its GEMMs.
// T: the storage type the kernels run on (float, or bf16 for a mixed-precision profile, with the
// cross entropy in fp32 and Adam through fp32 master weights, as training runs them).
template <class T>
std::vector<KernelTiming> time_kernels(const LayerDims& d, int64_t vocab_rows, int64_t parameters,
                                       const std::string& label, const TimingOptions& t,
                                       MPI_Comm comm, Kernels<T>& dev, TensorAllocator& alloc);

// time_kernels over every share (calibrate_options.h's layer_shares), Adam once per distinct size
// of a share's parameters, at most kMaxOptimizerElements.
template <class T>
std::vector<KernelTiming> model_kernel_timings(const std::vector<LayerShare>& shares,
                                               const TimingOptions& t, MPI_Comm comm,
                                               Kernels<T>& dev, TensorAllocator& alloc);

// One rate per kernel and size: the elements of its timings of that size over their summed time.
std::vector<KernelRate> kernel_rates(const std::vector<KernelTiming>& timings);

void print_kernel_timings(std::FILE* out, const std::vector<KernelTiming>& timings);

}  // namespace shardplan

// SHARDPLAN_HD marks inline functions that compile for the host and, under nvcc, for the device:
// the per-element math (elementwise.h) and index math (token_positions.h) that the CPU loops and
// the CUDA kernels share.
#pragma once

#if defined(__CUDACC__)
#define SHARDPLAN_HD __host__ __device__
#else
#define SHARDPLAN_HD
#endif

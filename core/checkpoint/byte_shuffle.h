// The byte-shuffle filter of HDF5 and Blosc ("shuffle"): byte k of every element stored
// together, so that the slowly varying sign and exponent bytes of float32 tensors sit
// next to each other and compress (issue 7: zstd level 1 on the seed CNN's weights, ratio
// 1.08 without, 1.17 with it).
#pragma once

#include <cstddef>

namespace plexus::checkpoint {

/// dst[k * n + i] = src[i * element_size + k] for n = bytes / element_size elements;
/// `bytes` must be a multiple of element_size. Buffers must not overlap. Thread-safe.
void byte_shuffle(const std::byte* src, std::byte* dst, size_t bytes, size_t element_size);
/// The inverse of byte_shuffle.
void byte_unshuffle(const std::byte* src, std::byte* dst, size_t bytes, size_t element_size);

}  // namespace plexus::checkpoint

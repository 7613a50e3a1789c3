// --weights-out of every C++ sample: the trained parameters, float32 little-endian (the
// host's order; every supported host is little-endian), concatenated in the order given,
// no header. The tests and bench/ scripts compare these files across configurations.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace samples {

/// Writes `arrays` one after the other to `path` (nothing when `path` is empty). Throws
/// std::runtime_error naming the path when it cannot be opened or fully written.
inline void write_weights(const std::string& path, const std::vector<std::vector<float>>& arrays) {
  if (path.empty()) return;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f != nullptr;
  for (const std::vector<float>& a : arrays) ok = ok && std::fwrite(a.data(), sizeof(float), a.size(), f) == a.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok) throw std::runtime_error("cannot write weights to '" + path + "'");
}

}  // namespace samples

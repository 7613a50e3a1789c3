// Writes a sample's metrics as JSON (--metrics-out FILE).
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>

namespace samples {

inline void write_metrics(const std::string& path, const nlohmann::json& metrics) {
  if (path.empty()) return;
  std::ofstream out(path);
  out << metrics.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write metrics to '" + path + "'");
}

}  // namespace samples

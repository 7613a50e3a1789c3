// plexus-ckpt diff: the largest absolute difference between the values of each tensor of
// two checkpoints, or why a tensor cannot be compared.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "core/ir/dtype_dispatch.h"
#include "tools/plexus_ckpt/cli.h"

namespace plexus::tools::ckpt {

namespace {

using checkpoint::CheckpointReader;
using checkpoint::TensorEntry;

// |x - y| as a double; 0 when equal or both NaN, infinity when only one is NaN.
double element_difference(float x, float y) {
  if (x == y || (std::isnan(x) && std::isnan(y))) return 0;
  const double d = std::fabs(static_cast<double>(x) - static_cast<double>(y));
  return std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
}

// |x - y|, exact in a double for 32-bit integers.
template <std::integral T>
double element_difference(T x, T y) {
  return std::fabs(static_cast<double>(x) - static_cast<double>(y));
}

template <class T>
double max_difference(std::span<const std::byte> a, std::span<const std::byte> b) {
  double worst = 0;
  for (size_t at = 0; at < a.size(); at += sizeof(T)) {
    T x, y;
    std::memcpy(&x, a.data() + at, sizeof(T));
    std::memcpy(&y, b.data() + at, sizeof(T));
    worst = std::max(worst, element_difference(ir::load(x), ir::load(y)));
  }
  return worst;
}

// The largest |a[i] - b[i]| over the values of two tensors of type `dtype` and equal size.
double max_difference(ir::DType dtype, std::span<const std::byte> a, std::span<const std::byte> b) {
  return ir::visit_any(dtype, [&](auto tag) { return max_difference<typename decltype(tag)::type>(a, b); });
}

// Integers exactly ("3"), other values with float precision ("0.000123"), "inf".
std::string format_difference(double d) {
  char text[40];
  const bool integral = d == std::floor(d) && d < 0x1p53;
  std::snprintf(text, sizeof text, integral ? "%.0f" : "%.9g", d);
  return text;
}

// One tensor name's result: the difference when compared, else why not.
struct Comparison {
  std::string text;
  double difference = 0;
  bool compared = false;
};

Comparison compare(const CheckpointReader& a, const CheckpointReader& b, const std::string& name) {
  const TensorEntry* ea = a.find(name);
  const TensorEntry* eb = b.find(name);
  if (!eb) return {"only in A"};
  if (!ea) return {"only in B"};
  if (ea->dtype != eb->dtype || ea->shape != eb->shape) {
    return {"dtype or shape differs: " + std::string(ir::dtype_name(ea->dtype)) + " " + ir::shape_string(ea->shape) +
            " vs " + std::string(ir::dtype_name(eb->dtype)) + " " + ir::shape_string(eb->shape)};
  }
  if (ea->rows != eb->rows) return {"rows differ: " + std::to_string(ea->rows) + " vs " + std::to_string(eb->rows)};
  const double d = max_difference(ea->dtype, a.read(*ea), b.read(*eb));
  return {format_difference(d), d, true};
}

// Names of A's tensors in A's order, then those only in B in B's order.
std::vector<std::string> all_names(const CheckpointReader& a, const CheckpointReader& b) {
  std::vector<std::string> names;
  for (const TensorEntry& e : a.manifest().tensors) names.push_back(e.name);
  for (const TensorEntry& e : b.manifest().tensors) {
    if (!a.find(e.name)) names.push_back(e.name);
  }
  return names;
}

}  // namespace

int run_diff(const std::vector<std::string>& args) {
  CommandLine command_line(
      "Usage: plexus-ckpt diff A B [options]\n"
      "Compares the tensors of checkpoints A and B by name: for each, the maximum absolute difference\n"
      "of its values (float32 as floats, NaN equal to NaN; int32 and uint8 as integers), or 'only in A',\n"
      "'only in B', 'dtype or shape differs', 'rows differ'. The last line is 'max abs difference: V'\n"
      "over the compared tensors. Exit status 0 when both files could be read, even if they differ.");
  bool fail_on_difference = false;
  command_line.add_options()
      ("fail-on-difference", po::bool_switch(&fail_on_difference),
       "exit with status 2 when a tensor differs or is not in both files (for scripts)");
  command_line.add_argument("a", "A");
  command_line.add_argument("b", "B");
  po::variables_map vm;
  if (!command_line.parse(args, vm)) return kExitOk;

  const CheckpointReader a(vm["a"].as<std::string>()), b(vm["b"].as<std::string>());
  std::cout << "A: " << a.path() << " (" << a.manifest().tensors.size() << " tensors)\n"
            << "B: " << b.path() << " (" << b.manifest().tensors.size() << " tensors)\n";
  std::vector<std::vector<std::string>> rows{{"tensor", "max abs difference"}};
  double worst = 0;
  bool differs = false;
  for (const std::string& name : all_names(a, b)) {
    const Comparison c = compare(a, b, name);
    rows.push_back({name, c.text});
    worst = std::max(worst, c.difference);
    differs = differs || !c.compared || c.difference > 0;
  }
  print_table(std::cout, rows, "ll");
  std::cout << "max abs difference: " << format_difference(worst) << "\n";
  return fail_on_difference && differs ? kExitDifferent : kExitOk;
}

}  // namespace plexus::tools::ckpt

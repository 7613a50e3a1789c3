// Shared command-line handling for the samples (Boost.Program_options): --help, parse
// errors reported as "error: ..." with exit status 2, and range checks on options.
#pragma once

#include <boost/program_options.hpp>

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

namespace samples {

namespace po = boost::program_options;

/// Thrown for a bad option value; main() prints it and exits with status 2.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Parses argv into `vm`. Returns false (after printing usage) for --help.
inline bool parse_command_line(int argc, char** argv, const po::options_description& desc, po::variables_map& vm,
                               const std::string& usage) {
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << usage << "\n\n" << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return true;
}

/// Throws UsageError unless value >= minimum.
template <class T>
void require_at_least(const std::string& option, T value, T minimum) {
  if (value < minimum) {
    throw UsageError("--" + option + " must be >= " + std::to_string(minimum) + ", got " + std::to_string(value));
  }
}

}  // namespace samples

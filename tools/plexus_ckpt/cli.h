// plexus-ckpt: lists, verifies and compares Plexus checkpoint files (core/checkpoint;
// docs/design.md "Checkpoints"). One command per file (list.cpp, verify.cpp, diff.cpp) and
// main.cpp choosing among them; this header holds what they share: exit statuses, the
// command-line parser of one command (Boost.Program_options) and a table printer.
#pragma once

#include <boost/program_options.hpp>

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plexus::tools::ckpt {

namespace po = boost::program_options;

/// Exit statuses of plexus-ckpt.
inline constexpr int kExitOk = 0;          ///< the command did its work (verify: every file is good)
inline constexpr int kExitError = 1;       ///< bad command line, or a file that cannot be read or is damaged
inline constexpr int kExitDifferent = 2;   ///< diff --fail-on-difference found a difference

/// A bad command line (unknown option, bad value, missing or extra argument). main()
/// prints it after the command's name and exits with kExitError.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The command line of one command: a usage text, options (with --help added) and
/// required positional arguments. Not thread-safe (used from main's thread only).
class CommandLine {
 public:
  /// `usage`: what --help prints before the options ("Usage: plexus-ckpt list FILE ...").
  explicit CommandLine(std::string usage);

  /// Adds options shown by --help: add_options()("level", po::value<int>(...), "...").
  po::options_description_easy_init add_options() { return options_.add_options(); }

  /// Declares the next positional argument, stored in the variables map as `name` (a
  /// std::string, or a std::vector<std::string> when `many`: it takes every remaining
  /// word) and called `metavar` in errors ("missing FILE"). Every argument is required.
  void add_argument(const std::string& name, std::string metavar, bool many = false);

  /// Parses `args` (the words after the command's name) into `vm`. Returns false after
  /// printing the help to stdout when --help is among them. Throws UsageError for an
  /// unknown option, a bad option value, a missing or an extra argument.
  bool parse(const std::vector<std::string>& args, po::variables_map& vm);

 private:
  std::string usage_;
  po::options_description options_{"Options"};
  po::options_description arguments_;
  po::positional_options_description positional_;
  std::vector<std::pair<std::string, std::string>> required_;  ///< (name, metavar)
};

/// Prints `rows` (the first is the heading) as columns separated by two spaces, each as
/// wide as its widest cell. `align` has one letter per column: 'l' pads on the right,
/// 'r' on the left (for numbers). Every row must have align.size() cells.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows, std::string_view align);

/// `plexus-ckpt list FILE [--ratios] [--level L]`: the file's header facts, then one line
/// per tensor (layout when saved, sizes and compression ratio) and a total line; with
/// --ratios, each float32 tensor recompressed at level L with and without the byte-shuffle
/// filter. `args` are the words after "list". Returns kExitOk. Throws UsageError for a bad
/// command line, ir::Error naming the file and what is wrong for an unreadable or damaged
/// file.
int run_list(const std::vector<std::string>& args);

/// `plexus-ckpt verify FILE...`: checks each file's header, manifest and every tensor's
/// checksums, printing "FILE: OK (N tensors, X bytes)" (X: the file's size) to stdout or
/// the error to stderr, and going on with the next file. Returns kExitOk when every file
/// is good, kExitError otherwise. Throws UsageError for a bad command line.
int run_verify(const std::vector<std::string>& args);

/// `plexus-ckpt diff A B [--fail-on-difference]`: for each tensor name in A or B, the
/// maximum absolute difference of its values (float32 as floats, int32 and uint8 as
/// integers) or why they cannot be compared ("only in A", "only in B", "dtype or shape
/// differs", "rows differ"); then "max abs difference: V" over the compared tensors.
/// Returns kExitOk, or kExitDifferent with --fail-on-difference when anything differs.
/// Throws UsageError for a bad command line, ir::Error for an unreadable or damaged file.
int run_diff(const std::vector<std::string>& args);

}  // namespace plexus::tools::ckpt

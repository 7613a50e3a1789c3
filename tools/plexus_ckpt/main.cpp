// plexus-ckpt: the command-line tool for Plexus checkpoint files.
//
//   plexus-ckpt list model.ckpt --ratios
//   plexus-ckpt verify *.ckpt
//   plexus-ckpt diff before.ckpt after.ckpt --fail-on-difference
//
// Every error (bad command line, missing, unreadable or damaged file) is one message on
// stderr naming the file and what is wrong, and exit status 1; see cli.h for the others.
#include <array>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/plexus_ckpt/cli.h"

namespace {

using namespace plexus::tools::ckpt;

struct Command {
  std::string_view name, summary;
  int (*run)(const std::vector<std::string>& args);
};

constexpr std::array<Command, 3> kCommands{{
    {"list", "print the header facts and one line per tensor (layout, sizes, compression ratio)", run_list},
    {"verify", "check the header, manifest and every tensor's checksums of one or more files", run_verify},
    {"diff", "compare the tensors of two files (maximum absolute difference per tensor)", run_diff},
}};

void print_usage(std::ostream& out) {
  out << "Usage: plexus-ckpt COMMAND [ARGS...]\n"
         "Lists, verifies and compares Plexus checkpoint files.\n\nCommands:\n";
  for (const Command& c : kCommands) out << "  " << c.name << std::string(8 - c.name.size(), ' ') << c.summary << "\n";
  out << "\n'plexus-ckpt COMMAND --help' describes a command. Exit status: 0 success, 1 error\n"
         "(bad command line, missing or damaged file), 2 differences found by diff --fail-on-difference.\n";
}

std::string command_names() {
  std::string names;
  for (const Command& c : kCommands) names += (names.empty() ? "" : ", ") + std::string(c.name);
  return names;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Runs `command`, turning every exception into a message on stderr and kExitError.
int run_command(const Command& command, const std::vector<std::string>& args) {
  const std::string prefix = "plexus-ckpt " + std::string(command.name) + ": ";
  try {
    return command.run(args);
  } catch (const UsageError& e) {
    std::cerr << prefix << e.what() << "\nTry 'plexus-ckpt " << command.name << " --help'.\n";
  } catch (const std::exception& e) {
    std::cerr << prefix << e.what() << "\n";
  }
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) {
    std::cerr << "plexus-ckpt: missing command\n\n";
    print_usage(std::cerr);
    return kExitError;
  }
  if (words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
    print_usage(std::cout);
    return kExitOk;
  }
  const Command* command = find_command(words[0]);
  if (!command) {
    std::cerr << "plexus-ckpt: unknown command '" << words[0] << "' (commands: " << command_names()
              << "; see 'plexus-ckpt --help')\n";
    return kExitError;
  }
  return run_command(*command, std::vector<std::string>(words.begin() + 1, words.end()));
}

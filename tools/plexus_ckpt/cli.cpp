#include "tools/plexus_ckpt/cli.h"

#include <algorithm>
#include <iostream>

namespace plexus::tools::ckpt {

CommandLine::CommandLine(std::string usage) : usage_(std::move(usage)) {
  options_.add_options()("help,h", "print this help");
}

void CommandLine::add_argument(const std::string& name, std::string metavar, bool many) {
  if (many) {
    arguments_.add_options()(name.c_str(), po::value<std::vector<std::string>>());
  } else {
    arguments_.add_options()(name.c_str(), po::value<std::string>());
  }
  positional_.add(name.c_str(), many ? -1 : 1);
  required_.emplace_back(name, std::move(metavar));
}

bool CommandLine::parse(const std::vector<std::string>& args, po::variables_map& vm) {
  po::options_description all;
  all.add(options_).add(arguments_);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional_).run(), vm);
    if (vm.count("help")) {
      std::cout << usage_ << "\n\n" << options_ << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  for (const auto& [name, metavar] : required_) {
    if (!vm.count(name)) throw UsageError("missing " + metavar);
  }
  return true;
}

void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows, std::string_view align) {
  std::vector<size_t> width(align.size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += align[c] == 'r' ? pad + row[c] : row[c] + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  }
}

}  // namespace plexus::tools::ckpt

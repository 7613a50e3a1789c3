// plexus-ckpt verify: every check the reader has (header, manifest checksum and contents,
// each tensor's zstd frame, content checksum and crc32) on one or more files.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "tools/plexus_ckpt/cli.h"

namespace plexus::tools::ckpt {

namespace {

// Opens `path` and reads every tensor; prints "PATH: OK (...)" or the error. True when good.
bool verify_file(const std::string& path) {
  try {
    const checkpoint::CheckpointReader reader(path);
    for (const checkpoint::TensorEntry& e : reader.manifest().tensors) reader.read(e);
    std::cout << path << ": OK (" << reader.manifest().tensors.size() << " tensors, " << reader.file_size() << " bytes)\n";
    return true;
  } catch (const std::exception& e) {
    std::cerr << "plexus-ckpt verify: " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int run_verify(const std::vector<std::string>& args) {
  CommandLine command_line(
      "Usage: plexus-ckpt verify FILE... [options]\n"
      "Checks each file's header, manifest and every tensor (zstd frames and checksums), printing\n"
      "'FILE: OK (N tensors, X bytes)' (X: the file's size) or what is wrong. Exit status 0 only\n"
      "when every file is good.");
  command_line.add_argument("files", "FILE", true);
  po::variables_map vm;
  if (!command_line.parse(args, vm)) return kExitOk;
  bool all_good = true;
  for (const std::string& path : vm["files"].as<std::vector<std::string>>()) all_good = verify_file(path) && all_good;
  return all_good ? kExitOk : kExitError;
}

}  // namespace plexus::tools::ckpt

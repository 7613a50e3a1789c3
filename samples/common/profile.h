// Every sample's --profile (samples/common/options.h): the session records its runs
// (plx_session_options.profile, set by common_session_options), and after training the
// sample writes the last run's Chrome trace and, beside it, the session's memory report
// (docs/profiling.md), then prints both paths. plexus-report draws the two files.
#pragma once

#include <plexus/plexus.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "samples/common/options.h"

namespace samples {

/// What write_profile wrote: the files' paths, and the trace's text (for a sample that
/// prints numbers from it, as mnist_pipeline prints the bubble fraction).
struct ProfileFiles {
  std::string trace_path;   ///< <--profile-dir>/<name>.json: Chrome Trace Event JSON
  std::string memory_path;  ///< <--profile-dir>/<name>.memory.json: schema plexus.memory_report
  std::string trace;        ///< the trace's JSON text
};

/// Writes the last run of `session` (created with --profile, so it recorded its runs) as
/// <--profile-dir>/<name>.json and its memory report beside it as <name>.memory.json,
/// creating the folder, and prints both paths. `name` is the session's role: "training",
/// "inference". Throws std::runtime_error naming a file it cannot write, plx::Error
/// when the session has no trace (profile off, or no run yet).
inline ProfileFiles write_profile(const CommonOptions& o, const plx::Session& session, const std::string& name) {
  ProfileFiles files{o.profile_dir + "/" + name + ".json", o.profile_dir + "/" + name + ".memory.json",
                     session.trace()};
  std::filesystem::create_directories(o.profile_dir);
  const auto write = [](const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error("--profile-dir: cannot write '" + path + "'");
  };
  write(files.trace_path, files.trace);
  write(files.memory_path, session.memory_report());
  std::printf("%s profile: %s (open in https://ui.perfetto.dev or chrome://tracing), memory report beside it: %s "
              "(docs/profiling.md; plexus-report draws both)\n",
              name.c_str(), files.trace_path.c_str(), files.memory_path.c_str());
  return files;
}

/// The files of `files` for a metrics JSON: {"file": trace path, "memory_report": its path}.
inline nlohmann::json profile_json(const ProfileFiles& files) {
  return {{"file", files.trace_path}, {"memory_report", files.memory_path}};
}

}  // namespace samples

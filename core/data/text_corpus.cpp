#include "core/data/text_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>

#include "core/ir/error.h"

namespace plexus::data {

using ir::ErrorCode;
using ir::fail;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> corpus_files(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    const std::string hint = path == kFortunesDir ? " (install the Debian package 'fortunes')" : "";
    fail(ErrorCode::NotFound, "text corpus: '" + path + "' does not exist" + hint);
  }
  if (!fs::is_directory(status)) return {path};
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    if (e.is_symlink() || !e.is_regular_file() || e.path().extension() == ".dat") continue;
    files.push_back(e.path().string());
  }
  if (ec) fail(ErrorCode::Io, "text corpus: cannot list '" + path + "': " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in.is_open()) fail(ErrorCode::Io, "text corpus: cannot open '" + file + "'");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) fail(ErrorCode::Io, "text corpus: cannot read '" + file + "'");
  return text;
}

// Calls add(document) for each non-empty document of `text`, in order.
template <class F>
void for_each_document(std::string_view text, F add) {
  size_t begin = 0, line = 0;
  while (line < text.size()) {
    const size_t end = std::min(text.find('\n', line), text.size() - 1) + 1;  // past the line's newline
    const std::string_view l = text.substr(line, end - line);
    if (l == "%\n" || l == "%") {
      if (line > begin) add(text.substr(begin, line - begin));
      begin = end;
    }
    line = end;
  }
  if (text.size() > begin) add(text.substr(begin));
}

}  // namespace

TextCorpus read_text_corpus(const std::string& path, int64_t validation_every) {
  if (validation_every < 2) {
    fail(ErrorCode::InvalidArgument, "text corpus: validation_every is " + std::to_string(validation_every) + ", must be >= 2");
  }
  TextCorpus corpus;
  corpus.files = corpus_files(path);
  for (const std::string& file : corpus.files) {
    for_each_document(read_file(file), [&](std::string_view doc) {
      std::string& split = corpus.documents % validation_every == validation_every - 1 ? corpus.validation : corpus.train;
      split.append(doc);
      ++corpus.documents;
    });
  }
  if (corpus.train.empty() || corpus.validation.empty()) {
    fail(ErrorCode::InvalidArgument, "text corpus: '" + path + "' has " + std::to_string(corpus.documents) +
                                         " document(s) in " + std::to_string(corpus.files.size()) +
                                         " file(s); at least " + std::to_string(validation_every) +
                                         " are needed for non-empty training and validation texts");
  }
  return corpus;
}

}  // namespace plexus::data

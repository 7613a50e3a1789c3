// A plain-text corpus read as bytes and split into training and validation text by a fixed
// rule (issue 20's character model). The format is strfile's, the Debian package
// `fortunes`'s: documents separated by lines holding only "%"; any text file is a corpus
// of one document per file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plexus::data {

/// Where the Debian package `fortunes` installs its corpus.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// A corpus split in two. Bytes, not characters: a model of it predicts bytes (256 tokens).
struct TextCorpus {
  std::vector<std::string> files;  ///< the files read, in order
  std::string train;               ///< the training documents, joined in order
  std::string validation;          ///< the validation documents, joined in order
  int64_t documents = 0;           ///< documents in both
};

/**
 * Reads the corpus at `path`: a file, or a directory's regular files (symlinks and strfile's
 * `*.dat` indexes skipped) in the byte order of their names. Each file's documents are the
 * text between lines holding only "%" (the separators and empty documents dropped; each
 * keeps its final newline). Document k, counted from 0 over all files, goes to the
 * validation text when k % validation_every == validation_every - 1, else to the training
 * text: every 10th document with the default, the same split on every machine.
 *
 * Throws ir::Error: NotFound naming `path` (and the package `fortunes` when it is
 * kFortunesDir) when it does not exist; Io naming the file that cannot be read;
 * InvalidArgument for validation_every < 2, and when a split would be empty (naming
 * `path` and the number of documents found). Thread-safe (no shared state).
 */
TextCorpus read_text_corpus(const std::string& path, int64_t validation_every = 10);

}  // namespace plexus::data

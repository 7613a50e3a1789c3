// C API: text corpora (core/data/text_corpus.h) and loaders over their windows
// (core/data/text_windows.h).
#include <string>

#include "abi/src/handles.h"
#include "core/data/text_windows.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace plexus::abi {

const std::string& text_split(const plx_text& text, int32_t split, const char* function) {
  if (split == PLX_TEXT_TRAIN) return text.corpus.train;
  if (split == PLX_TEXT_VALIDATION) return text.corpus.validation;
  ir::fail(ir::ErrorCode::InvalidArgument, std::string(function) + ": split is " + std::to_string(split) +
                                               ", must be PLX_TEXT_TRAIN (0) or PLX_TEXT_VALIDATION (1)");
}

}  // namespace plexus::abi

extern "C" {

PLX_API plx_status plx_text_load(const char* path, int64_t validation_every, plx_text** out_text) {
  return guarded([&] {
    require(path, "plx_text_load", "path");
    require(out_text, "plx_text_load", "out_text");
    *out_text = new plx_text{data::read_text_corpus(path, validation_every)};
  });
}

PLX_API void plx_text_destroy(plx_text* text) { delete text; }

PLX_API plx_status plx_text_get_split(const plx_text* text, int32_t split, const char** out_bytes,
                                      size_t* out_size, int64_t* out_documents) {
  return guarded([&] {
    require(text, "plx_text_get_split", "text");
    const std::string& bytes = abi::text_split(*text, split, "plx_text_get_split");
    if (out_bytes) *out_bytes = bytes.data();
    if (out_size) *out_size = bytes.size();
    if (out_documents) *out_documents = text->corpus.documents;
  });
}

}  // extern "C"

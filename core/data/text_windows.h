// Windows of a byte text as a Loader's samples (issue 20's character model; nanoGPT's
// get_batch without its random offsets): sample i is the context + 1 bytes from
// i * context, its tokens the first context bytes and its targets the last context.
#pragma once

#include <cstdint>
#include <string>

#include "core/data/sample_source.h"

namespace plexus::data {

/**
 * Sample i in [0, (size - 1) / context): tokens = int32 [context], bytes
 * [i * context, i * context + context) of `text` (each 0..255); targets = int32 [context],
 * bytes [i * context + 1, i * context + context]. Consecutive windows share one byte (the
 * last target of one is the first token of the next), so every byte but the first is a
 * target exactly once per epoch. Tokens are served to LoaderRole::Images, targets to
 * LoaderRole::Labels.
 *
 * `text` is borrowed and must outlive the source; `name` names it in messages. Throws
 * InvalidArgument for context < 1, or a text shorter than context + 1 bytes (naming it,
 * its size and the context). Thread-safe once built.
 */
class TextWindows final : public SampleSource {
 public:
  TextWindows(const std::string& text, int64_t context, std::string name);

  int64_t num_samples() const override { return windows_; }
  const SampleField& field(LoaderRole role) const override { return role == LoaderRole::Images ? tokens_ : targets_; }
  void write(LoaderRole role, int64_t index, std::byte* dst) const override;
  std::string describe() const override { return "the text (" + name_ + ")"; }

 private:
  const std::string& text_;
  int64_t context_ = 1, windows_ = 0;
  std::string name_;
  SampleField tokens_, targets_;
};

}  // namespace plexus::data

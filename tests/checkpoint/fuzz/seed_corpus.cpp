// Writes the reader fuzzer's seed corpus: three small valid checkpoints, written by
// write_checkpoint, into the directory given as the only argument.
//   empty.ckpt   no tensors, counters and options only
//   one.ckpt     one byte-shuffled float32 tensor
//   mixed.ckpt   float32, int32 and uint8 tensors, multi-row, a scalar, every kind and
//                layout field away from its default, shuffled and not
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "core/ir/error.h"

namespace {

using plexus::checkpoint::Manifest;
using plexus::checkpoint::TensorEntry;
using plexus::ir::DType;

// Values with some structure, so that zstd emits compressed blocks, not only raw ones.
std::vector<std::byte> values(const TensorEntry& e) {
  std::vector<std::byte> out(e.bytes());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>((i * i / 7 + i % 5) & 0xff);
  if (e.dtype == DType::Float32) {
    for (size_t i = 0; i < out.size() / 4; ++i) {
      const float v = 0.125f * static_cast<float>(i % 17) - 1.0f;
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  }
  return out;
}

void write(const std::string& path, const Manifest& m, int level) {
  std::vector<std::vector<std::byte>> data;
  std::vector<std::span<const std::byte>> spans;
  for (const TensorEntry& e : m.tensors) data.push_back(values(e));
  for (const auto& d : data) spans.emplace_back(d);
  plexus::checkpoint::write_checkpoint(path, m, spans, {level, 1});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  try {
    Manifest empty;
    empty.step = 3;
    empty.counters = {{"epoch", 1}};
    empty.options = {{"strategy", "replicated"}};
    write(dir + "/empty.ckpt", empty, 1);

    Manifest one;
    one.tensors.push_back(TensorEntry::variable("w", DType::Float32, {4, 6}, 1, true));
    write(dir + "/one.ckpt", one, 3);

    Manifest mixed;
    mixed.replication_factor = 4;
    mixed.step = 100;
    mixed.counters = {{"epoch", 2}, {"loader_run", 7}};
    mixed.tensors.push_back(TensorEntry::variable("conv.w", DType::Float32, {2, 3, 3}, 2, true));
    mixed.tensors.back().group_size = 2;
    mixed.tensors.back().group_stride = 2;
    mixed.tensors.push_back(TensorEntry::variable("ids", DType::Int32, {40}, 1, false));
    mixed.tensors.back().kind = "remote_variable";
    mixed.tensors.back().retrieval = "all_replicas";
    mixed.tensors.push_back(TensorEntry::variable("pixels", DType::UInt8, {2, 5, 5}, 4, true));
    mixed.tensors.back().kind = "remote_buffer_slot";
    mixed.tensors.push_back(TensorEntry::variable("fc.w", DType::Float32, {5}, 1, false));
    mixed.tensors.back().shard_over = 4;
    mixed.tensors.back().padding = 3;
    mixed.tensors.push_back(TensorEntry::variable("lr", DType::Float32, {}, 1, false));
    write(dir + "/mixed.ckpt", mixed, 9);
  } catch (const plexus::ir::Error& e) {
    std::fprintf(stderr, "checkpoint_seed_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}

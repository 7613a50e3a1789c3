// plexus-ckpt list: the header facts of a checkpoint and one line per tensor; with
// --ratios, what the byte-shuffle filter gains on each float32 tensor (issue 7).
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"
#include "core/checkpoint/header.h"
#include "core/checkpoint/tensor_codec.h"
#include "tools/plexus_ckpt/cli.h"

namespace plexus::tools::ckpt {

namespace {

using checkpoint::CheckpointReader;
using checkpoint::TensorEntry;

using Row = std::vector<std::string>;

// plain / stored as "3.21", or "-" when nothing is stored.
std::string format_ratio(uint64_t plain, uint64_t stored) {
  if (stored == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(plain) / static_cast<double>(stored));
  return text;
}

// "epoch=3, loader_run=7", or "none".
std::string format_counters(const std::map<std::string, int64_t>& counters) {
  std::string text;
  for (const auto& [name, value] : counters) text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return text.empty() ? "none" : text;
}

void print_header_facts(const CheckpointReader& reader) {
  const checkpoint::Manifest& m = reader.manifest();
  // The reader refuses every other version, so an open file has this one.
  std::cout << "checkpoint '" << reader.path() << "': format version " << checkpoint::kFormatVersion << ", "
            << reader.file_size() << " bytes\n"
            << "replication factor " << m.replication_factor << ", step " << m.step
            << ", counters: " << format_counters(m.counters) << "\n"
            << "options: " << m.options.dump() << "\n";
}

Row heading(bool ratios, int level) {
  Row row{"name", "kind", "dtype", "shape", "rows", "group/stride", "retrieval", "shard/pad", "shuffle", "bytes", "stored", "ratio"};
  if (ratios) {
    row.push_back("shuffled@" + std::to_string(level));
    row.push_back("plain@" + std::to_string(level));
  }
  return row;
}

// The layout the tensor had when saved, its sizes and its compression ratio.
Row layout_cells(const TensorEntry& e) {
  return {e.name,
          e.kind,
          std::string(ir::dtype_name(e.dtype)),
          ir::shape_string(e.shape),
          std::to_string(e.rows),
          std::to_string(e.group_size) + "/" + std::to_string(e.group_stride),
          e.retrieval,
          e.shard_over == 1 ? "-" : std::to_string(e.shard_over) + "/" + std::to_string(e.padding),
          e.shuffle ? "on" : "off",
          std::to_string(e.bytes()),
          std::to_string(e.size),
          format_ratio(e.bytes(), e.size)};
}

// Bytes of the zstd frame of `data` (the values of `entry`) at zstd `level`, byte-shuffled
// first when `shuffle`.
uint64_t frame_bytes(TensorEntry entry, std::span<const std::byte> data, bool shuffle, int level) {
  entry.shuffle = shuffle;
  std::vector<std::byte> frame;
  checkpoint::encode_tensor(entry, data, level, frame);
  return frame.size();
}

// Sums over the float32 tensors recompressed by --ratios.
struct ShuffleGain {
  uint64_t plain = 0, shuffled = 0, unshuffled = 0;
};

// Appends the ratios of `e` recompressed with and without the shuffle filter ("-" for
// tensors of other dtypes, whose bytes do not vary slowly per position) and adds them up.
void add_shuffle_ratios(Row& row, const CheckpointReader& reader, const TensorEntry& e, int level, ShuffleGain& gain) {
  if (e.dtype != ir::DType::Float32) {
    row.insert(row.end(), {"-", "-"});
    return;
  }
  const std::vector<std::byte> data = reader.read(e);
  const uint64_t shuffled = frame_bytes(e, data, true, level), unshuffled = frame_bytes(e, data, false, level);
  row.push_back(format_ratio(data.size(), shuffled));
  row.push_back(format_ratio(data.size(), unshuffled));
  gain.plain += data.size();
  gain.shuffled += shuffled;
  gain.unshuffled += unshuffled;
}

void print_shuffle_total(const ShuffleGain& gain, int level) {
  if (gain.plain == 0) {
    std::cout << "no float32 tensors to recompress\n";
    return;
  }
  std::cout << "float32 tensors recompressed at level " << level << ": ratio " << format_ratio(gain.plain, gain.shuffled)
            << " with shuffle, " << format_ratio(gain.plain, gain.unshuffled) << " without\n";
}

}  // namespace

int run_list(const std::vector<std::string>& args) {
  CommandLine command_line(
      "Usage: plexus-ckpt list FILE [options]\n"
      "Prints the checkpoint's format version, replication factor, step and counters, then one line\n"
      "per tensor: name, kind, dtype, shape of one row, rows, replica grouping (group size/stride),\n"
      "retrieval mode, RTS shard_over/padding ('-' when not sharded), byte shuffle, uncompressed\n"
      "bytes, stored bytes and compression ratio; then the totals.");
  bool ratios = false;
  int level = 3;
  command_line.add_options()
      ("ratios", po::bool_switch(&ratios),
       "also recompress each float32 tensor with and without the byte-shuffle filter and print both ratios")
      ("level", po::value<int>(&level)->default_value(level), "zstd level (1 .. 19) for --ratios");
  command_line.add_argument("file", "FILE");
  po::variables_map vm;
  if (!command_line.parse(args, vm)) return kExitOk;
  if (level < 1 || level > 19) throw UsageError("--level must be in 1 .. 19, got " + std::to_string(level));

  const CheckpointReader reader(vm["file"].as<std::string>());
  print_header_facts(reader);
  std::vector<Row> rows{heading(ratios, level)};
  uint64_t plain = 0, stored = 0;
  ShuffleGain gain;
  for (const TensorEntry& e : reader.manifest().tensors) {
    rows.push_back(layout_cells(e));
    if (ratios) add_shuffle_ratios(rows.back(), reader, e, level, gain);
    plain += e.bytes();
    stored += e.size;
  }
  print_table(std::cout, rows, ratios ? "llllrllllrrrrr" : "llllrllllrrr");
  std::cout << "total: " << reader.manifest().tensors.size() << " tensors, " << plain << " bytes, " << stored
            << " stored, ratio " << format_ratio(plain, stored) << "\n";
  if (ratios) print_shuffle_total(gain, level);
  return kExitOk;
}

}  // namespace plexus::tools::ckpt

// ckpt_writer: writes small checkpoints with checkpoint::write_checkpoint for the tests
// of plexus-ckpt (plexus_ckpt_test.sh) and the crash test (crash_test.sh).
//
//   ckpt_writer FILE [--seed S] [--megabytes M] [--variant V]   one file
//   ckpt_writer FILE --loop --seed S --alternate-seed T ...      S, T, S, ... until killed
//
// The contents are a fixed set of tensors covering every kind, dtype and layout field
// (replica grouping, retrieval mode, RTS shard_over and padding, shuffle on and off),
// with values drawn from --seed, plus a float32 tensor "big" of --megabytes MiB so that a
// write takes a while. --variant changes one thing against "base", for diff to find.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint_file.h"

namespace {

namespace po = boost::program_options;
using plexus::checkpoint::Manifest;
using plexus::checkpoint::TensorEntry;
using plexus::ir::DType;

// The manifest and each tensor's bytes, as write_checkpoint takes them.
struct State {
  Manifest manifest;
  std::vector<std::vector<std::byte>> data;

  TensorEntry& entry(const std::string& name) {
    return *std::find_if(manifest.tensors.begin(), manifest.tensors.end(), [&](auto& e) { return e.name == name; });
  }
  std::vector<std::byte>& bytes(const std::string& name) { return data[&entry(name) - manifest.tensors.data()]; }
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <class T>
std::vector<std::byte> random_values(size_t count, uint64_t stream, T (*from_bits)(uint64_t)) {
  std::vector<std::byte> out(count * sizeof(T));
  for (size_t i = 0; i < count; ++i) {
    const T v = from_bits(splitmix64(stream ^ i));
    std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
  }
  return out;
}

// Values for tensor number `index` of state `seed`: floats are multiples of 1/64 in
// [-15.625, 15.625] (so adding 0.25 is exact), int32 in [0, 1000), any uint8 (any bytes
// for the other dtypes).
std::vector<std::byte> values(const TensorEntry& e, int seed, uint64_t index) {
  const uint64_t stream = (static_cast<uint64_t>(seed) << 48) ^ (index << 40);
  const size_t count = e.bytes() / plexus::ir::dtype_size(e.dtype);
  switch (e.dtype) {
    case DType::Float32:
      return random_values<float>(count, stream, [](uint64_t r) { return static_cast<float>(static_cast<int>(r % 2001) - 1000) / 64; });
    case DType::Int32:
      return random_values<int32_t>(count, stream, [](uint64_t r) { return static_cast<int32_t>(r % 1000); });
    default:  // uint8, and any bytes for the other dtypes
      return random_values<uint8_t>(e.bytes(), stream, [](uint64_t r) { return static_cast<uint8_t>(r); });
  }
  return {};
}

// bytes, read as T values, with `delta` added to value number `index`.
template <class T>
void add_at(std::vector<std::byte>& bytes, size_t index, T delta) {
  T v;
  std::memcpy(&v, bytes.data() + index * sizeof(T), sizeof(T));
  v += delta;
  std::memcpy(bytes.data() + index * sizeof(T), &v, sizeof(T));
}

TensorEntry entry(std::string name, std::string kind, DType dtype, plexus::ir::Shape shape, int64_t rows) {
  TensorEntry e;
  e.name = std::move(name);
  e.kind = std::move(kind);
  e.dtype = dtype;
  e.shape = std::move(shape);
  e.rows = rows;
  e.shuffle = dtype == DType::Float32;
  return e;
}

State make_state(int seed, int megabytes) {
  State s;
  s.manifest.replication_factor = 4;
  s.manifest.step = 100 * seed;
  s.manifest.counters = {{"epoch", seed}, {"loader_run", 7}};
  s.manifest.options = {{"optimizer", "sgd"}};
  auto& tensors = s.manifest.tensors;
  tensors.push_back(entry("layer0/weight", "variable", DType::Float32, {64, 32}, 2));
  tensors.back().group_size = 2;
  tensors.push_back(entry("layer0/bias", "variable", DType::Float32, {30}, 1));
  tensors.back().group_size = 4;
  tensors.back().shard_over = 4;
  tensors.back().padding = 2;
  tensors.push_back(entry("optimizer/count", "remote_variable", DType::Int32, {16}, 4));
  tensors.back().retrieval = "all_replicas";
  tensors.push_back(entry("buffer/slot", "remote_buffer_slot", DType::UInt8, {100}, 4));
  tensors.back().retrieval = "all_replicas";
  if (megabytes > 0) tensors.push_back(entry("big", "variable", DType::Float32, {megabytes, 256 * 1024}, 1));
  for (size_t i = 0; i < tensors.size(); ++i) s.data.push_back(values(tensors[i], seed, i));
  return s;
}

// Changes the layout of tensor `name` (shape, rows or dtype) and gives it new values of
// the new size.
void change_layout(State& s, const std::string& name, const std::function<void(TensorEntry&)>& change) {
  TensorEntry& e = s.entry(name);
  change(e);
  s.bytes(name) = values(e, 99, 0);
}

// Each variant changes one thing against "base".
const std::map<std::string, std::function<void(State&)>>& variants() {
  static const std::map<std::string, std::function<void(State&)>> table{
      {"base", [](State&) {}},
      {"bump",  // layer0/weight[5] += 0.25, optimizer/count[3] += 3
       [](State& s) {
         add_at<float>(s.bytes("layer0/weight"), 5, 0.25f);
         add_at<int32_t>(s.bytes("optimizer/count"), 3, 3);
       }},
      {"drop",  // without buffer/slot
       [](State& s) {
         const auto at = &s.entry("buffer/slot") - s.manifest.tensors.data();
         s.manifest.tensors.erase(s.manifest.tensors.begin() + at);
         s.data.erase(s.data.begin() + at);
       }},
      {"dtype", [](State& s) { change_layout(s, "optimizer/count", [](TensorEntry& e) { e.dtype = DType::Float32; }); }},
      {"shape", [](State& s) { change_layout(s, "layer0/weight", [](TensorEntry& e) { e.shape = {32, 64}; }); }},
      {"rows", [](State& s) { change_layout(s, "buffer/slot", [](TensorEntry& e) { e.rows = 2; }); }},
  };
  return table;
}

void write(const std::string& path, const State& s, int level) {
  const std::vector<std::span<const std::byte>> spans(s.data.begin(), s.data.end());
  plexus::checkpoint::write_checkpoint(path, s.manifest, spans, {level, 1});
}

int run(int argc, char** argv) {
  std::string path, variant = "base";
  int seed = 1, alternate_seed = 2, megabytes = 0, level = 1;
  bool loop = false;
  po::options_description options("Options");
  options.add_options()("help,h", "print this help")
      ("file", po::value(&path)->required(), "the checkpoint to write")
      ("seed", po::value(&seed)->default_value(seed), "values of the tensors (and the step: 100 x seed)")
      ("megabytes", po::value(&megabytes)->default_value(megabytes), "MiB of the float32 tensor 'big' (0: none)")
      ("variant", po::value(&variant)->default_value(variant), "base, bump, drop, dtype, shape or rows")
      ("level", po::value(&level)->default_value(level), "zstd level")
      ("loop", po::bool_switch(&loop), "write --seed, --alternate-seed, --seed, ... until killed")
      ("alternate-seed", po::value(&alternate_seed)->default_value(alternate_seed), "the second state of --loop");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << "Usage: ckpt_writer FILE [options]\n\n" << options << "\n";
    return 0;
  }
  po::notify(vm);
  const auto v = variants().find(variant);
  if (v == variants().end()) throw std::invalid_argument("unknown variant '" + variant + "'");
  State first = make_state(seed, megabytes);
  v->second(first);
  write(path, first, level);
  if (!loop) return 0;
  State second = make_state(alternate_seed, megabytes);
  v->second(second);
  for (;;) {
    write(path, second, level);
    write(path, first, level);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ckpt_writer: " << e.what() << "\n";
    return 1;
  }
}

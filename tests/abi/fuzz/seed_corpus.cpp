// Writes the C API decoding fuzzer's seed corpus into the directory given as the only
// argument, in fuzz_input.h's format:
//   options-<struct_size>.bin   session options with every field away from its default, as
//                               a caller of each C API version passes them (struct_size 32,
//                               48, 112, 128, 144, 152 and today's); options-null-*.bin with
//                               a NULL stages array and a NULL block name
//   op-*.bin                    plx_ir_add_op calls on the fuzzer's ops: every kind of
//                               attribute given, an int for a float, defaults, the remote
//                               buffer attribute, and refusals (a required attribute missing,
//                               an unknown one, a bad kind, an unknown op)
// Usage: c_api_decode_seed_corpus <corpus directory>   (see this folder's CMakeLists.txt)
#include <plexus/plexus.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_input.h"

namespace {

using plexus::test::FuzzInputWriter;
using plexus::test::FuzzMode;
using plexus::test::kNullArray;

// Two stages of one block each; `null` makes the array or the second name NULL instead.
enum class Stages { Valid, NullArray, NullBlockName };

FuzzInputWriter options_seed(uint64_t struct_size, Stages stages) {
  FuzzInputWriter w;
  w.put(static_cast<uint8_t>(FuzzMode::SessionOptions)).put(struct_size);
  w.put<int64_t>(4).put<uint64_t>(1 << 20).put<int32_t>(2).string("local").put<int64_t>(5000).put<int64_t>(2);
  if (stages == Stages::NullArray) {
    w.put(kNullArray);
  } else {
    w.put<uint8_t>(2).put<uint8_t>(1).string("encoder").put<int64_t>(0);
    w.put<uint8_t>(1).string(stages == Stages::NullBlockName ? nullptr : "decoder").put<int64_t>(-1);
  }
  w.string("pipelined").string("fill_drain").put<int32_t>(PLX_OUTPUT_EVERY_N).put<int64_t>(2);
  w.put<int32_t>(1).put<int32_t>(1).put<int64_t>(3).put<int32_t>(2).put<int64_t>(2).put<int64_t>(1).put<int32_t>(1);
  return w.put<uint16_t>(3);  // replication factor 4
}

struct Attr {
  const char* name;
  int32_t kind;
  int64_t i = 0;
  double f = 0;
  std::vector<int64_t> ints = {};
  const char* s = nullptr;
};

// A call of fuzz op `op` (0..2; 3: `other_op` by name) on the IR's variable and constant.
FuzzInputWriter op_seed(uint8_t op, const std::vector<Attr>& attrs, const char* other_op = nullptr) {
  FuzzInputWriter w;
  w.put(static_cast<uint8_t>(FuzzMode::OpAttributes)).put(op);
  if (op > 2) w.string(other_op);
  w.put<uint8_t>(2).put<uint8_t>(0).put<uint8_t>(1);
  w.put(static_cast<uint8_t>(attrs.size()));
  for (const Attr& a : attrs) {
    w.string(a.name).put(a.kind).put(a.i).put(a.f).put(static_cast<uint8_t>(a.ints.size()));
    for (int64_t v : a.ints) w.put(v);
    w.string(a.s);
  }
  return w.put<uint8_t>(4);  // max_outputs
}

std::vector<std::pair<std::string, FuzzInputWriter>> seeds() {
  std::vector<std::pair<std::string, FuzzInputWriter>> out;
  for (const uint64_t size : {32, 48, 112, 128, 144, 152}) {
    out.emplace_back("options-" + std::to_string(size), options_seed(size, Stages::Valid));
  }
  out.emplace_back("options-" + std::to_string(sizeof(plx_session_options)), options_seed(sizeof(plx_session_options), Stages::Valid));
  out.emplace_back("options-null-stages", options_seed(sizeof(plx_session_options), Stages::NullArray));
  out.emplace_back("options-null-block", options_seed(sizeof(plx_session_options), Stages::NullBlockName));
  const Attr count{"count", PLX_ATTR_INT, 2}, mode{"mode", PLX_ATTR_STRING, 0, 0, {}, "max"};
  const Attr scale{"scale", PLX_ATTR_FLOAT, 0, 0.25}, dims{"dims", PLX_ATTR_INTS, 0, 0, {3, 4}};
  const Attr buffer{"buffer", PLX_ATTR_INT, 0};  // 0: the IR's remote buffer (the fuzzer XORs it in)
  out.emplace_back("op-every-kind", op_seed(0, {count, scale, dims, mode, buffer}));
  out.emplace_back("op-int-for-float", op_seed(0, {count, mode, {"scale", PLX_ATTR_INT, 3}}));
  out.emplace_back("op-required-missing", op_seed(0, {count, scale}));
  out.emplace_back("op-unknown-attribute", op_seed(1, {count}));
  out.emplace_back("op-defaults", op_seed(2, {}));
  out.emplace_back("op-bad-kind", op_seed(2, {{"count", 7, 1}}));
  out.emplace_back("op-unknown-op", op_seed(3, {count}, "matmul"));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  for (const auto& [name, seed] : seeds()) {
    const std::string path = std::string(argv[1]) + "/" + name + ".bin";
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(seed.bytes().data()), static_cast<std::streamsize>(seed.bytes().size()));
    if (!f.good()) {
      std::fprintf(stderr, "c_api_decode_seed_corpus: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}

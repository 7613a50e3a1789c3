// libFuzzer target over the IDX reader (core/data/idx_reader). Build and run: see this
// folder's CMakeLists.txt; scripts/test.sh runs it for PLEXUS_FUZZ_SECONDS.
//
// The input is an IDX file, raw or gzip (zlib tells them apart, as for users' files). It is
// written to a temporary file of this process and read with read_idx, which may refuse it
// only with ir::Error; an array it returns must be consistent (rank 1..kMaxRank, dims >= 1,
// as many bytes as the shape declares). read_idx_dataset then reads the file as both images
// and labels, which must succeed exactly when the array has rank 1. Mutations of gzip bytes
// rarely get past the deflate stream to the IDX header, so an input that is not gzip is
// also read gzipped (made here) and must give the same array or the same error. Anything
// else escaping (libFuzzer reports an uncaught exception as a crash), a crash, a sanitizer
// report, a leak or a file descriptor left open (checked after every read) is a bug.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/data/idx_reader.h"
#include "core/ir/error.h"
#include "fuzz_temp_file.h"

namespace {

using plexus::data::IdxArray;
using plexus::ir::Error;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "idx_reader_fuzzer: %s\n", what.c_str());
  std::abort();
}

// What one read gave: the array or the refusal.
struct Outcome {
  std::optional<IdxArray> array;
  std::optional<Error> error;
};

void check_consistent(const IdxArray& a) {
  if (a.shape.empty() || a.shape.size() > plexus::ir::kMaxRank) bug("read_idx gave rank " + std::to_string(a.shape.size()));
  uint64_t count = 1;
  for (const int64_t d : a.shape) {
    if (d < 1) bug("read_idx gave dim " + std::to_string(d));
    count *= static_cast<uint64_t>(d);
  }
  if (a.data.size() != count * plexus::ir::dtype_size(a.dtype)) {
    bug("read_idx gave " + std::to_string(a.data.size()) + " bytes for shape " + plexus::ir::shape_string(a.shape));
  }
}

// read_idx_dataset(path, path): the labels must be rank 1, and then they agree with the images.
void check_dataset(const std::string& path, const IdxArray& a) {
  bool accepted = true;
  try {
    (void)plexus::data::read_idx_dataset(path, path);
  } catch (const Error&) {
    accepted = false;
  }
  if (accepted != (a.shape.size() == 1)) {
    bug("read_idx_dataset of a rank-" + std::to_string(a.shape.size()) + " file as its own labels " +
        (accepted ? "accepted" : "refused") + " it");
  }
}

Outcome read(plexus::test::FuzzTempFile& file, const uint8_t* data, size_t size) {
  const std::string& path = file.hold(data, size);
  Outcome out;
  try {
    out.array = plexus::data::read_idx(path);
  } catch (const Error& e) {
    out.error = e;
  }
  file.check_closed_by_reader();
  if (out.array) {
    check_consistent(*out.array);
    check_dataset(path, *out.array);
    file.check_closed_by_reader();
  }
  return out;
}

std::vector<uint8_t> gzip(const uint8_t* data, size_t size) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) bug("deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&z, static_cast<uLong>(size)));
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) bug("deflate did not finish");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void check_same(const Outcome& raw, const Outcome& gz) {
  if (raw.array.has_value() != gz.array.has_value()) {
    bug(std::string("the raw file was ") + (raw.array ? "accepted" : "refused: " + std::string(raw.error->what())) +
        ", its gzipped copy " + (gz.array ? "accepted" : "refused: " + std::string(gz.error->what())));
  }
  if (raw.array) {
    if (raw.array->dtype != gz.array->dtype || raw.array->shape != gz.array->shape || raw.array->data != gz.array->data) {
      bug("the raw file and its gzipped copy gave different arrays");
    }
  } else if (raw.error->code() != gz.error->code() || std::string(raw.error->what()) != gz.error->what()) {
    bug(std::string("the raw file and its gzipped copy were refused differently: '") + raw.error->what() + "' and '" +
        gz.error->what() + "'");
  }
}

bool is_gzip(const uint8_t* data, size_t size) { return size >= 2 && data[0] == 0x1f && data[1] == 0x8b; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static plexus::test::FuzzTempFile file("idx-reader-fuzzer");
  const Outcome raw = read(file, data, size);
  if (is_gzip(data, size)) return 0;
  const std::vector<uint8_t> compressed = gzip(data, size);
  check_same(raw, read(file, compressed.data(), compressed.size()));
  return 0;
}

// Reader for the IDX format of MNIST and Fashion-MNIST (yann.lecun.com/exdb/mnist):
// a big-endian header (two zero bytes, an element-type byte, a rank byte, one uint32 per
// dim) followed by the elements. Raw and gzip-compressed files are both accepted (zlib
// detects which).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/shape.h"

namespace plexus::data {

/// One IDX file in host memory, elements converted to host byte order.
struct IdxArray {
  std::string path;
  ir::DType dtype = ir::DType::UInt8;
  ir::Shape shape;
  std::vector<std::byte> data;
};

/// Reads `path`. Element types: 0x08 unsigned byte -> uint8, 0x0C int -> int32,
/// 0x0D float -> float32. Throws ir::Error naming the file: Io when it cannot be opened
/// or read; BadFormat for a wrong magic number, an unsupported element type, a zero dim,
/// a size beyond 4 GiB, truncated data or trailing bytes.
IdxArray read_idx(const std::string& path);

/// An images file and its labels file (first dims equal: one label per image).
struct IdxDataset {
  IdxArray images;
  IdxArray labels;
  int64_t num_samples() const { return images.shape.empty() ? 0 : images.shape[0]; }
};

/// Reads both files and throws BadFormat, naming both files, when the labels are not a
/// rank-1 array with one label per image.
IdxDataset read_idx_dataset(const std::string& images_path, const std::string& labels_path);

}  // namespace plexus::data

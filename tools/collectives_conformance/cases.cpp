#include "cases.h"

#include <cstdlib>
#include <cstring>

namespace conformance {

namespace {

// PLEXUS_SANITIZED=1 (Plexus's own sanitizer builds, scripts/test.sh): a memory check
// needs each code path once, not the value check's every layout, and a 1<<20-element case
// costs 0.35-1.5 s there (40 of the 71 s of a single-process run were these 112 cases). So
// the 1<<20-element cases run on the last large layout only, in the first dtype and op: both
// dtypes are 4 bytes, so the buffers' sizes and the plugins' chunking are the same for every
// dtype and op, and each dtype x op's kernel runs at 1, 7 and 1000 elements on every layout.
bool sanitized() {
  const char* value = std::getenv("PLEXUS_SANITIZED");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

std::vector<DataCase> make_cases(Ops ops_wanted, Placement placement,
                                 const std::vector<std::string>& layouts,
                                 const std::vector<std::string>& large_layouts) {
  const bool with_ops = ops_wanted == Ops::all;
  const bool in_place = placement == Placement::in_place;
  const std::vector<plx_dtype> dtypes{PLX_DTYPE_FLOAT32, PLX_DTYPE_INT32};
  const std::vector<plx_reduce_op> ops =
      with_ops ? std::vector<plx_reduce_op>{PLX_REDUCE_SUM, PLX_REDUCE_MEAN, PLX_REDUCE_MAX,
                                            PLX_REDUCE_MIN}
               : std::vector<plx_reduce_op>{PLX_REDUCE_SUM};
  std::vector<DataCase> cases;
  for (const Layout& layout : standard_layouts()) {
    if (!layouts.empty() && !layout_in(layout, layouts)) continue;
    const bool large = sanitized() ? !large_layouts.empty() && layout.name == large_layouts.back()
                                   : layout_in(layout, large_layouts);
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
      for (plx_dtype dtype : dtypes) {
        for (plx_reduce_op op : ops)
          cases.push_back({layout, count, dtype, with_ops, op, in_place});
      }
    }
    if (!large) continue;
    for (plx_dtype dtype : sanitized() ? std::vector<plx_dtype>{dtypes.front()} : dtypes) {
      for (plx_reduce_op op : sanitized() ? std::vector<plx_reduce_op>{ops.front()} : ops)
        cases.push_back({layout, kLargeCount, dtype, with_ops, op, in_place});
    }
  }
  return cases;
}

std::vector<DataCase> huge_cases(Ops ops, Placement placement) {
  const bool with_ops = ops == Ops::all;
  const bool in_place = placement == Placement::in_place;
  return {{single_group(2), kHugeCount, PLX_DTYPE_FLOAT32, with_ops, PLX_REDUCE_SUM, in_place},
          {single_group(2), kHugeCount, PLX_DTYPE_INT32, with_ops, PLX_REDUCE_MAX, in_place}};
}

std::string case_name(const testing::TestParamInfo<DataCase>& info) {
  const DataCase& c = info.param;
  std::string name = c.layout.name + "_" + dtype_name(c.dtype);
  if (c.reduction) name += "_" + op_name(c.op);
  name += "_n" + std::to_string(c.count);
  if (c.in_place) name += "_in_place";
  return name;
}

}  // namespace conformance

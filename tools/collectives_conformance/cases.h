// The parameter grids of the data tests: layouts x element counts x dtypes (x ops for the
// reductions). The 1<<20-element counts run on a subset of layouts only, to keep the
// suite fast, but every collective sees them with every dtype and op.
#ifndef PLEXUS_TESTS_PLUGINS_CONFORMANCE_CASES_H
#define PLEXUS_TESTS_PLUGINS_CONFORMANCE_CASES_H

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "harness.h"

namespace conformance {

struct DataCase {
  Layout layout;
  size_t count = 1;
  plx_dtype dtype = PLX_DTYPE_FLOAT32;
  bool reduction = false;  // op matters (all_reduce, reduce_scatter)
  plx_reduce_op op = PLX_REDUCE_SUM;
  bool in_place = false;  // all_reduce and broadcast only
};

enum class Ops { none, all };                 // all: one case per reduce op
enum class Placement { separate, in_place };  // in_place: send == recv

inline constexpr size_t kLargeCount = size_t{1} << 20;

/**
 * Above 8 MiB per member, where a plugin may change strategy (the local plugin switches to
 * streaming stores); odd, so that chunks start at unaligned addresses.
 */
inline constexpr size_t kHugeCount = (size_t{1} << 21) + 3;

/** A few cases of kHugeCount elements on 2 replicas (float32 sum, int32 max). */
std::vector<DataCase> huge_cases(Ops ops, Placement placement);

/**
 * The cases of a grid: `layouts` (names; empty = all of standard_layouts()) x counts
 * {1, 7, 1000} x dtypes (x ops), + 1<<20 elements on `large_layouts` x dtypes (x ops); when
 * the environment has PLEXUS_SANITIZED=1, 1<<20 elements on the last of them in the first
 * dtype (and op) only.
 */
std::vector<DataCase> make_cases(Ops ops, Placement placement,
                                 const std::vector<std::string>& layouts,
                                 const std::vector<std::string>& large_layouts);

/** "R8_g2_s4_float32_sum_n1000" (op only for reductions; "_in_place" when in place). */
std::string case_name(const testing::TestParamInfo<DataCase>& info);

}  // namespace conformance

#endif  // PLEXUS_TESTS_PLUGINS_CONFORMANCE_CASES_H

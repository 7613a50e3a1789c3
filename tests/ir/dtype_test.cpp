// Element types (core/ir/dtype.cpp): sizes, names and the check of raw C values, which
// must match the C API's PLX_DTYPE_* constants.
#include "core/ir/dtype.h"

#include <gtest/gtest.h>

#include <plexus/types.h>

namespace plexus::ir {
namespace {

TEST(DType, SizesAreTheElementBytes) {
  EXPECT_EQ(dtype_size(DType::Float32), 4u);
  EXPECT_EQ(dtype_size(DType::Int32), 4u);
  EXPECT_EQ(dtype_size(DType::UInt8), 1u);
  EXPECT_EQ(dtype_size(DType::Float16), 2u);
  EXPECT_EQ(dtype_size(DType::Int8), 1u);
  EXPECT_EQ(dtype_size(DType::UInt32), 4u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_EQ(dtype_size(static_cast<DType>(8)), 0u);
}

TEST(DType, NamesAreNumpysAndInvalidForOtherValues) {
  EXPECT_EQ(dtype_name(DType::Float32), "float32");
  EXPECT_EQ(dtype_name(DType::Int32), "int32");
  EXPECT_EQ(dtype_name(DType::UInt8), "uint8");
  EXPECT_EQ(dtype_name(DType::Float16), "float16");
  EXPECT_EQ(dtype_name(DType::Int8), "int8");
  EXPECT_EQ(dtype_name(DType::UInt32), "uint32");
  EXPECT_EQ(dtype_name(DType::Bool), "bool");
  EXPECT_EQ(dtype_name(static_cast<DType>(0)), "invalid");
  EXPECT_EQ(dtype_name(static_cast<DType>(8)), "invalid");
}

TEST(DType, ValuesEqualTheCApisConstants) {
  EXPECT_EQ(static_cast<int32_t>(DType::Float32), PLX_DTYPE_FLOAT32);
  EXPECT_EQ(static_cast<int32_t>(DType::Int32), PLX_DTYPE_INT32);
  EXPECT_EQ(static_cast<int32_t>(DType::UInt8), PLX_DTYPE_UINT8);
  EXPECT_EQ(static_cast<int32_t>(DType::Float16), PLX_DTYPE_FLOAT16);
  EXPECT_EQ(static_cast<int32_t>(DType::Int8), PLX_DTYPE_INT8);
  EXPECT_EQ(static_cast<int32_t>(DType::UInt32), PLX_DTYPE_UINT32);
  EXPECT_EQ(static_cast<int32_t>(DType::Bool), PLX_DTYPE_BOOL);
}

TEST(DType, OnlyTheEnumsValuesAreValidRawInput) {
  for (int32_t raw : {1, 2, 3, 4, 5, 6, 7}) EXPECT_TRUE(is_valid_dtype(raw)) << raw;
  for (int32_t raw : {0, 8, -1, 99, INT32_MIN, INT32_MAX}) EXPECT_FALSE(is_valid_dtype(raw)) << raw;
  for (DType t : kAllDTypes) EXPECT_TRUE(is_valid_dtype(static_cast<int32_t>(t))) << dtype_name(t);
}

}  // namespace
}  // namespace plexus::ir

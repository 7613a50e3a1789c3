#include "core/ir/attributes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/error.h"

namespace plexus::ir {
namespace {

using ::testing::HasSubstr;

const std::vector<AttrSpec> kSpecs = {{"axis", AttrKind::Int, AttrValue{int64_t{-1}}},
                                      {"scale", AttrKind::Float, std::nullopt},
                                      {"perm", AttrKind::Ints, AttrValue{std::vector<int64_t>{}}}};

TEST(Attributes, FillsDefaultsAndConvertsIntToFloat) {
  Attributes a;
  a.set("scale", int64_t{2});
  a.validate("op", kSpecs);
  EXPECT_EQ(a.get_int("axis"), -1);
  EXPECT_DOUBLE_EQ(a.get_float("scale"), 2.0);
  EXPECT_TRUE(a.get_ints("perm").empty());
}

TEST(Attributes, MissingRequiredAttributeIsNamed) {
  Attributes a;
  try {
    a.validate("scale_op", kSpecs);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("required attribute 'scale' (float) is missing"));
  }
}

TEST(Attributes, UnknownNameListsTheKnownOnes) {
  Attributes a;
  a.set("scale", 1.0);
  a.set("axes", int64_t{1});
  try {
    a.validate("my_op", kSpecs);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'my_op' has no attribute 'axes' (it takes: axis, scale, perm)"));
  }
}

TEST(Attributes, WrongKindIsRefused) {
  Attributes a;
  a.set("scale", 1.0);
  a.set("axis", std::string("last"));
  try {
    a.validate("my_op", kSpecs);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("attribute 'axis' must be int, got string"));
  }
}

}  // namespace
}  // namespace plexus::ir

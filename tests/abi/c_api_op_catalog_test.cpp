// plx_runtime_get_ops (PLX_API_VERSION 11): the op catalog the Python package builds
// plexus.ops from. Every op of docs/ops.md is listed with its input counts and attributes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <plexus/plexus.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

nlohmann::json catalog() {
  size_t size = 0;
  EXPECT_EQ(plx_runtime_get_ops(nullptr, 0, &size), PLX_ERR_BUFFER_TOO_SMALL);
  std::string text(size, '\0');
  EXPECT_EQ(plx_runtime_get_ops(text.data(), text.size(), &size), PLX_OK);
  text.resize(size - 1);
  return nlohmann::json::parse(text);
}

const nlohmann::json& op(const nlohmann::json& c, const std::string& name) {
  for (const nlohmann::json& o : c["ops"]) {
    if (o["name"] == name) return o;
  }
  throw std::runtime_error("op not in the catalog: " + name);
}

TEST(CApiOpCatalog, ListsEveryOpWithItsInputsAndAttributes) {
  const nlohmann::json c = catalog();
  EXPECT_GE(c["ops"].size(), 37u);  // docs/ops.md lists 37 today
  const nlohmann::json& matmul = op(c, "matmul");
  EXPECT_EQ(matmul["min_inputs"], 2);
  EXPECT_EQ(matmul["max_inputs"], 2);
  EXPECT_EQ(matmul["differentiable"], true);
  ASSERT_EQ(matmul["attrs"].size(), 2u);
  EXPECT_EQ(matmul["attrs"][0]["name"], "transpose_a");
  EXPECT_EQ(matmul["attrs"][0]["kind"], "int");
  EXPECT_EQ(matmul["attrs"][0]["default"], 0);
  const nlohmann::json& conv = op(c, "conv2d");
  EXPECT_EQ(conv["min_inputs"], 2);
  EXPECT_EQ(conv["max_inputs"], 3);
  const nlohmann::json& reshape = op(c, "reshape");
  EXPECT_EQ(reshape["attrs"][0]["name"], "shape");
  EXPECT_EQ(reshape["attrs"][0]["required"], true);
  EXPECT_FALSE(reshape["attrs"][0].contains("default"));
  EXPECT_EQ(op(c, "scaled_add_")["inplace"], true);
  EXPECT_EQ(op(c, "replicated_all_reduce")["communicates"], true);
  EXPECT_EQ(op(c, "adamw_")["attrs"].size(), 5u);
}

TEST(CApiOpCatalog, BufferProtocol) {
  size_t size = 0;
  ASSERT_EQ(plx_runtime_get_ops(nullptr, 0, &size), PLX_ERR_BUFFER_TOO_SMALL);
  std::vector<char> small(8);
  EXPECT_EQ(plx_runtime_get_ops(small.data(), small.size(), &size), PLX_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(plx_runtime_get_ops(nullptr, 16, &size), PLX_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(plx_last_error(), testing::HasSubstr("buffer"));
}

}  // namespace

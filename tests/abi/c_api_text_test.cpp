// Text corpora through the C API (plx_text_*, plx_loader_create_text; PLX_API_VERSION 12)
// and the C++ wrapper (plx::Text, plx::Loader over a Text): the split by the fixed rule,
// the windows a loader's callbacks serve, and every refusal with its status and message.
#include <plexus/plexus.h>

#include <plexus/plexus.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

struct TextDeleter {
  void operator()(plx_text* p) const { plx_text_destroy(p); }
};
using TextPtr = std::unique_ptr<plx_text, TextDeleter>;
struct LoaderDeleter {
  void operator()(plx_loader* p) const { plx_loader_destroy(p); }
};
using LoaderPtr = std::unique_ptr<plx_loader, LoaderDeleter>;

// A corpus of 4 documents: with validation_every 2, training "abcdefgh\n" + "ijklmnop\n",
// validation "ABC\n" + "DEF\n".
class CApiText : public CApiDatasetFiles {
 protected:
  void SetUp() override {
    CApiDatasetFiles::SetUp();
    path_ = (dir_ / "corpus").string();
    std::ofstream(path_, std::ios::binary) << "abcdefgh\n%\nABC\n%\nijklmnop\n%\nDEF\n";
  }
  TextPtr load() const {
    plx_text* raw = nullptr;
    EXPECT_EQ(plx_text_load(path_.c_str(), 2, &raw), PLX_OK) << plx_last_error();
    return TextPtr(raw);
  }
  std::string path_;
};

TEST_F(CApiText, LoadSplitsEveryNthDocumentToValidation) {
  TextPtr text = load();
  const char* bytes = nullptr;
  size_t size = 0;
  int64_t documents = 0;
  ASSERT_PLX_OK(plx_text_get_split(text.get(), PLX_TEXT_TRAIN, &bytes, &size, &documents));
  EXPECT_EQ(std::string(bytes, size), "abcdefgh\nijklmnop\n");
  EXPECT_EQ(documents, 4);
  ASSERT_PLX_OK(plx_text_get_split(text.get(), PLX_TEXT_VALIDATION, &bytes, &size, nullptr));
  EXPECT_EQ(std::string(bytes, size), "ABC\nDEF\n");
}

TEST_F(CApiText, BadArgumentsAreRefusedNamingThem) {
  plx_text* raw = nullptr;
  EXPECT_PLX_ERROR(plx_text_load(nullptr, 10, &raw), PLX_ERR_INVALID_ARGUMENT, "plx_text_load", "path");
  EXPECT_PLX_ERROR(plx_text_load(path_.c_str(), 10, nullptr), PLX_ERR_INVALID_ARGUMENT, "out_text");
  EXPECT_PLX_ERROR(plx_text_load((dir_ / "missing").string().c_str(), 10, &raw), PLX_ERR_NOT_FOUND,
                   "missing' does not exist");
  EXPECT_PLX_ERROR(plx_text_load(path_.c_str(), 10, &raw), PLX_ERR_INVALID_ARGUMENT, "has 4 document(s)");
  EXPECT_PLX_ERROR(plx_text_load(path_.c_str(), 1, &raw), PLX_ERR_INVALID_ARGUMENT, "validation_every is 1");
  EXPECT_EQ(raw, nullptr);
  TextPtr text = load();
  EXPECT_PLX_ERROR(plx_text_get_split(nullptr, PLX_TEXT_TRAIN, nullptr, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "text");
  EXPECT_PLX_ERROR(plx_text_get_split(text.get(), 2, nullptr, nullptr, nullptr),
                   PLX_ERR_INVALID_ARGUMENT, "split is 2");
  plx_loader_options o;
  plx_loader_options_init(&o);
  plx_loader* loader = nullptr;
  EXPECT_PLX_ERROR(plx_loader_create_text(text.get(), PLX_TEXT_TRAIN, 0, &o, &loader), PLX_ERR_INVALID_ARGUMENT,
                   "plx_loader_create_text", "context is 0");
  EXPECT_PLX_ERROR(plx_loader_create_text(text.get(), PLX_TEXT_VALIDATION, 8, &o, &loader), PLX_ERR_INVALID_ARGUMENT,
                   "the text (validation split) has 8 bytes, fewer than one window of context + 1 = 9");
  o.batch_size = 0;
  EXPECT_PLX_ERROR(plx_loader_create_text(text.get(), PLX_TEXT_TRAIN, 4, &o, &loader), PLX_ERR_INVALID_ARGUMENT,
                   "batch_size is 0");
  EXPECT_PLX_ERROR(plx_loader_create_text(nullptr, PLX_TEXT_TRAIN, 4, &o, &loader), PLX_ERR_INVALID_ARGUMENT, "text");
  EXPECT_EQ(loader, nullptr);
}

TEST_F(CApiText, TheCallbacksServeTokensAndNextTokenTargets) {
  TextPtr text = load();
  plx_loader_options o;
  plx_loader_options_init(&o);
  o.batch_size = 2;
  o.shuffle = 0;
  plx_loader* raw = nullptr;
  ASSERT_PLX_OK(plx_loader_create_text(text.get(), PLX_TEXT_TRAIN, 4, &o, &raw));  // 18 bytes: 4 windows
  LoaderPtr loader(raw);
  int64_t runs = 0;
  ASSERT_PLX_OK(plx_loader_get_runs_per_epoch(loader.get(), &runs));
  EXPECT_EQ(runs, 2);
  plx_stream_callback callbacks[2];
  ASSERT_PLX_OK(plx_loader_get_callbacks(loader.get(), 7, 8, callbacks));
  ASSERT_PLX_OK(plx_loader_begin_run(loader.get(), 0, 1));
  std::vector<int32_t> tokens(8), targets(8);
  ASSERT_PLX_OK(callbacks[0].fill(callbacks[0].user_data, 7, 0, 0, tokens.data(), 32));
  ASSERT_PLX_OK(callbacks[1].fill(callbacks[1].user_data, 8, 0, 0, targets.data(), 32));
  const std::string train = "abcdefgh\nijklmnop\n";
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(tokens[i], train[8 + i]) << i;   // windows 2 and 3 start at bytes 8 and 12
    EXPECT_EQ(targets[i], train[9 + i]) << i;
  }
  EXPECT_PLX_ERROR(callbacks[1].fill(callbacks[1].user_data, 8, 0, 0, targets.data(), 8), PLX_ERR_SHAPE_MISMATCH,
                   "targets callback of stream 8", "8 bytes", "32 expected", "batch_size 2 x 4 int32");
}

TEST_F(CApiText, CppWrapperReadsAndServesAndThrowsOnErrors) {
  plx::Text text(path_, 2);
  EXPECT_EQ(text.bytes(PLX_TEXT_VALIDATION), "ABC\nDEF\n");
  EXPECT_EQ(text.documents(), 4);
  plx_loader_options o = plx::Loader::default_options();
  plx::Loader loader(text, PLX_TEXT_TRAIN, 4, o);
  EXPECT_EQ(loader.runs_per_epoch(), 4);
  try {
    plx::Loader bad(text, PLX_TEXT_TRAIN, 100, o);
    ADD_FAILURE() << "no error";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("fewer than one window"));
  }
}

}  // namespace

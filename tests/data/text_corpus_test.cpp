// Tests of core/data/text_corpus: strfile's format (documents between "%" lines), the file
// selection of a directory, the fixed split rule, every refusal, and the real Debian
// `fortunes` corpus when it is installed.
#include "core/data/text_corpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/error_of.h"

namespace plexus::data {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;

// A fresh directory under the test's temporary directory, removed at the end.
struct TempDir {
  fs::path path = fs::path(::testing::TempDir()) / ("text_corpus_" + std::to_string(::getpid()) + "_" +
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

TEST(TextCorpus, DocumentsAreSplitByTheFixedRuleOverAllFilesInNameOrder) {
  TempDir dir;
  dir.write("b", "plain text\nof one document\n");
  dir.write("a", "one\n%\ntwo\nlines\n%\nthree\n%\n");
  dir.write("a.dat", "strfile index: skipped");
  fs::create_symlink(dir.path / "a", dir.path / "a.u8");  // Debian's *.u8 links: skipped
  const TextCorpus c = read_text_corpus(dir.path.string(), 2);
  EXPECT_EQ(c.files, (std::vector<std::string>{(dir.path / "a").string(), (dir.path / "b").string()}));
  EXPECT_EQ(c.documents, 4);
  EXPECT_EQ(c.train, "one\nthree\n");                                  // documents 0 and 2
  EXPECT_EQ(c.validation, "two\nlines\nplain text\nof one document\n");  // documents 1 and 3
}

TEST(TextCorpus, EmptyDocumentsAndAFinalSeparatorWithoutNewlineAreDropped) {
  TempDir dir;
  const std::string file = dir.write("f", "%\nx\n%\n%\ny\n%\nz %\n%");
  const TextCorpus c = read_text_corpus(file, 3);
  EXPECT_EQ(c.documents, 3);  // "x\n", "y\n", "z %\n" ("%" inside a line is text)
  EXPECT_EQ(c.train, "x\ny\n");
  EXPECT_EQ(c.validation, "z %\n");
}

TEST(TextCorpus, BadPathsAndTooFewDocumentsAreClearErrors) {
  TempDir dir;
  const ir::Error missing = error_of([&] { read_text_corpus((dir.path / "nothing").string()); });
  EXPECT_EQ(missing.code(), ir::ErrorCode::NotFound);
  EXPECT_THAT(missing.what(), HasSubstr("nothing' does not exist"));
  const std::string file = dir.write("few", "a\n%\nb\n");
  const ir::Error few = error_of([&] { read_text_corpus(file); });
  EXPECT_EQ(few.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(few.what(), HasSubstr("has 2 document(s) in 1 file(s); at least 10 are needed"));
  const ir::Error empty = error_of([&] { read_text_corpus(dir.write("empty", "")); });
  EXPECT_THAT(empty.what(), HasSubstr("has 0 document(s)"));
  const ir::Error every = error_of([&] { read_text_corpus(file, 1); });
  EXPECT_EQ(every.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(every.what(), HasSubstr("validation_every is 1, must be >= 2"));
}

TEST(TextCorpus, TheFortunesPackageSplitsNineToOne) {
  if (!fs::exists(kFortunesDir)) GTEST_SKIP() << kFortunesDir << " is missing (Debian package 'fortunes')";
  const TextCorpus c = read_text_corpus(kFortunesDir);
  EXPECT_GT(c.documents, 1000);
  EXPECT_GT(c.train.size(), 1000000u);
  const double share = static_cast<double>(c.validation.size()) / static_cast<double>(c.train.size() + c.validation.size());
  EXPECT_NEAR(share, 0.1, 0.03);
  EXPECT_EQ(c.train.find("\n%\n"), std::string::npos);  // no separator left
}

}  // namespace
}  // namespace plexus::data

// FileTransaction: several files change all-or-nothing. A rename that fails after others took
// effect puts the earlier files back; a dropped transaction leaves no temp file; a commit keeps
// a symlinked target a symlink.
#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <filesystem>

#include "core/atomic_file.hpp"
#include "core/file_transaction.hpp"

namespace moetune::core {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> names_in(std::string const& dir) {
  std::vector<std::string> out;
  for (auto const& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FileTransaction, CommitReplacesEveryFile) {
  std::string const dir = moetune::testing::unique_temp_dir("tx_ok");
  ASSERT_TRUE(write_file_atomic(dir + "/a", "old a").ok());
  FileTransaction tx;
  ASSERT_TRUE(tx.stage(dir + "/a", "new a").ok());
  ASSERT_TRUE(tx.stage(dir + "/b", "new b").ok());
  EXPECT_EQ(*read_file(dir + "/a"), "old a");  // staging changes nothing
  ASSERT_TRUE(tx.commit().ok());
  EXPECT_EQ(*read_file(dir + "/a"), "new a");
  EXPECT_EQ(*read_file(dir + "/b"), "new b");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"a", "b"}));  // no temp, no backup left
  fs::remove_all(dir);
}

// The last rename fails (its target is a non-empty directory): the files renamed before it get
// their old content back, a file that did not exist is gone again, and no temp remains.
TEST(FileTransaction, AFailedRenamePutsBackTheFilesAlreadyReplaced) {
  std::string const dir = moetune::testing::unique_temp_dir("tx_fail");
  ASSERT_TRUE(write_file_atomic(dir + "/a", "old a").ok());
  fs::create_directories(dir + "/blocked/inside");
  FileTransaction tx;
  ASSERT_TRUE(tx.stage(dir + "/a", "new a").ok());
  ASSERT_TRUE(tx.stage(dir + "/new", "new file").ok());
  ASSERT_TRUE(tx.stage(dir + "/blocked", "cannot land").ok());
  Status const st = tx.commit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kIo);
  EXPECT_EQ(st.error().where, dir + "/blocked");
  EXPECT_NE(st.error().message.find("no file of the set was changed"), std::string::npos);
  EXPECT_EQ(*read_file(dir + "/a"), "old a");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"a", "blocked"}));
  fs::remove_all(dir);
}

TEST(FileTransaction, ADroppedTransactionLeavesNoTempFile) {
  std::string const dir = moetune::testing::unique_temp_dir("tx_drop");
  {
    FileTransaction tx;
    ASSERT_TRUE(tx.stage(dir + "/a", "never committed").ok());
    EXPECT_EQ(names_in(dir).size(), 1u);  // the temp
  }
  EXPECT_TRUE(names_in(dir).empty());
  fs::remove_all(dir);
}

TEST(FileTransaction, RemovalsAndSymlinkedTargets) {
  std::string const dir = moetune::testing::unique_temp_dir("tx_links");
  ASSERT_TRUE(write_file_atomic(dir + "/real", "old").ok());
  fs::create_symlink("real", dir + "/link");
  ASSERT_TRUE(write_file_atomic(dir + "/stale", "x").ok());
  FileTransaction tx;
  ASSERT_TRUE(tx.stage(dir + "/link", "new").ok());
  tx.stage_removal(dir + "/stale");
  tx.stage_removal(dir + "/absent");
  ASSERT_TRUE(tx.commit().ok());
  EXPECT_TRUE(fs::is_symlink(dir + "/link"));  // the link stays a link; its target changes
  EXPECT_EQ(*read_file(dir + "/real"), "new");
  EXPECT_FALSE(fs::exists(dir + "/stale"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moetune::core

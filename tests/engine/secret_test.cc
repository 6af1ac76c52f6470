// Secrets come from a file only its owner may read, of at least 32 bytes, or the environment.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "rig/engine/secret.h"

namespace rig::engine {
namespace {

class SecretFile : public ::testing::Test {
 protected:
  // Writes `text` to a file in a fresh private folder with `mode`; returns its path.
  std::string write(const std::string& text, mode_t mode) {
    const std::string path = own_.path() + ".test";
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    written_ = path;
    return path;
  }
  void TearDown() override {
    if (!written_.empty()) std::remove(written_.c_str());
  }
  static std::string message_of(const std::string& path) {
    try {
      read_secret_file(path);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  PrivateSecretFile own_;
  std::string written_;
};

TEST_F(SecretFile, AFileOnlyItsOwnerReadsGivesItsBytesWithoutTheTrailingNewline) {
  const std::string text(40, 'k');
  const Secret s = read_secret_file(write(text + "\n", 0600));
  EXPECT_EQ(std::string(s.bytes.begin(), s.bytes.end()), text);
  EXPECT_NE(s.source.find(written_), std::string::npos);
}

TEST_F(SecretFile, AFileOthersOrItsGroupMayReadIsRefusedWithTheCause) {
  for (mode_t mode : {0644, 0640, 0604, 0620}) {
    const std::string why = message_of(write(std::string(40, 'k'), mode));
    EXPECT_NE(why.find("group or others"), std::string::npos) << std::oct << mode << ": " << why;
  }
}

TEST_F(SecretFile, ASecretShorterThan32BytesIsRefused) {
  const std::string why = message_of(write(std::string(31, 'k') + "\n", 0600));
  EXPECT_NE(why.find("holds 31 bytes"), std::string::npos) << why;
  EXPECT_NO_THROW(read_secret_file(write(std::string(32, 'k'), 0600)));
}

TEST_F(SecretFile, AMissingFileIsRefusedWithErrnosText) {
  const std::string why = message_of(own_.path() + ".missing");
  EXPECT_NE(why.find("No such file"), std::string::npos) << why;
}

TEST_F(SecretFile, APrivateSecretFileIsTheOwnersAloneAndGoesWithTheObject) {
  std::string path;
  {
    PrivateSecretFile f;
    path = f.path();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_GE(read_secret_file(path).bytes.size(), 32u);
    EXPECT_NE(read_secret_file(path).bytes, read_secret_file(own_.path()).bytes);
  }
  struct stat st {};
  EXPECT_NE(::stat(path.c_str(), &st), 0);
}

}  // namespace
}  // namespace rig::engine

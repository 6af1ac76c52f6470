// Secrets come from a file only its owner may read, of at least 32 bytes, or the environment.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <fstream>
#include <string>
#include <utility>

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
  // The outcome of reading `path`: ok, or its errno and reason.
  static wire::Outcome outcome_of(const std::string& path) { return read_secret_file(path).outcome(); }
  PrivateSecretFile own_ = *PrivateSecretFile::make();
  std::string written_;
};

TEST_F(SecretFile, AFileOnlyItsOwnerReadsGivesItsBytesWithoutTheTrailingNewline) {
  const std::string text(40, 'k');
  const Secret s = *read_secret_file(write(text + "\n", 0600));
  EXPECT_EQ(std::string(s.bytes.begin(), s.bytes.end()), text);
  EXPECT_NE(s.source.find(written_), std::string::npos);
}

TEST_F(SecretFile, AFileOthersOrItsGroupMayReadIsRefusedWithTheCause) {
  for (mode_t mode : {0644, 0640, 0604, 0620}) {
    const wire::Outcome o = outcome_of(write(std::string(40, 'k'), mode));
    EXPECT_EQ(o.err(), -EPERM) << std::oct << mode;
    EXPECT_NE(o.why().find("group or others"), std::string::npos) << std::oct << mode << ": " << o.why();
  }
}

TEST_F(SecretFile, ASecretShorterThan32BytesIsRefused) {
  const wire::Outcome o = outcome_of(write(std::string(31, 'k') + "\n", 0600));
  EXPECT_EQ(o.err(), -EINVAL);
  EXPECT_NE(o.why().find("holds 31 bytes"), std::string::npos) << o.why();
  EXPECT_TRUE(outcome_of(write(std::string(32, 'k'), 0600)).ok());
}

TEST_F(SecretFile, AMissingFileIsRefusedWithErrnosText) {
  const wire::Outcome o = outcome_of(own_.path() + ".missing");
  EXPECT_EQ(o.err(), -ENOENT);
  EXPECT_NE(o.why().find("No such file"), std::string::npos) << o.why();
}

TEST_F(SecretFile, APrivateSecretFileIsTheOwnersAloneAndGoesWithTheObject) {
  std::string path;
  {
    wire::Result<PrivateSecretFile> made = PrivateSecretFile::make();
    ASSERT_TRUE(made.ok()) << made.outcome().why();
    const PrivateSecretFile f = std::move(*made);
    path = f.path();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_GE(read_secret_file(path)->bytes.size(), 32u);
    EXPECT_NE(read_secret_file(path)->bytes, read_secret_file(own_.path())->bytes);
  }
  struct stat st {};
  EXPECT_NE(::stat(path.c_str(), &st), 0);
}

TEST_F(SecretFile, ASymbolicLinkIsRefusedEvenToAGoodFile) {
  const std::string target = write(std::string(40, 'k'), 0600);
  const std::string link = own_.path() + ".link";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const wire::Outcome o = outcome_of(link);
  std::remove(link.c_str());
  EXPECT_EQ(o.err(), -ELOOP);
  EXPECT_NE(o.why().find("is a symbolic link: refused"), std::string::npos) << o.why();
}

TEST_F(SecretFile, AFifoIsRefusedAtOnceInsteadOfWaitingForAWriter) {
  const std::string fifo = own_.path() + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const wire::Outcome o = outcome_of(fifo);  // would block forever in open without O_NONBLOCK
  std::remove(fifo.c_str());
  EXPECT_EQ(o.err(), -EINVAL);
  EXPECT_NE(o.why().find("not a regular file"), std::string::npos) << o.why();
}

TEST_F(SecretFile, AFileOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "skipped: chown to another user needs root";
  const std::string path = write(std::string(40, 'k'), 0600);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);  // nobody
  const wire::Outcome o = outcome_of(path);
  EXPECT_EQ(o.err(), -EPERM);
  EXPECT_NE(o.why().find("owned by uid 65534, neither this process's user"), std::string::npos) << o.why();
}

// An access ACL as Linux stores it (system.posix_acl_access): version 2, then entries of
// tag, permissions and id, the named user `user` granted `perm`.
std::vector<std::uint8_t> acl_granting(std::uint32_t user, std::uint16_t perm) {
  std::vector<std::uint8_t> acl(4, 0);
  acl[0] = 2;
  const auto entry = [&acl](std::uint16_t tag, std::uint16_t p, std::uint32_t id) {
    std::uint8_t e[8];
    std::memcpy(e, &tag, 2);
    std::memcpy(e + 2, &p, 2);
    std::memcpy(e + 4, &id, 4);
    acl.insert(acl.end(), e, e + 8);
  };
  entry(0x01, 4, UINT32_MAX);  // the owner: r
  entry(0x02, perm, user);     // the named user
  entry(0x04, 0, UINT32_MAX);  // the owning group: nothing
  entry(0x10, 4, UINT32_MAX);  // the mask: r (stat shows it as the group's bits)
  entry(0x20, 0, UINT32_MAX);  // others: nothing
  return acl;
}

TEST_F(SecretFile, ACredentialAsSystemdLaysItOutIsAcceptedAndAnAclForAnotherUserIsNot) {
  // systemd writes a credential 0400 and grants the service's user read by an ACL (stat: 0440).
  const std::string path = write(std::string(40, 'k'), 0400);
  const std::vector<std::uint8_t> mine = acl_granting(::geteuid(), 4);
  if (::setxattr(path.c_str(), "system.posix_acl_access", mine.data(), mine.size(), 0) != 0) {
    GTEST_SKIP() << "skipped: no POSIX ACLs here: " << std::strerror(errno);
  }
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0440u);
  EXPECT_TRUE(outcome_of(path).ok()) << outcome_of(path).why();
  const std::vector<std::uint8_t> theirs = acl_granting(::geteuid() + 1, 4);
  ASSERT_EQ(::setxattr(path.c_str(), "system.posix_acl_access", theirs.data(), theirs.size(), 0), 0);
  EXPECT_EQ(outcome_of(path).err(), -EPERM);
  EXPECT_NE(outcome_of(path).why().find("group or others"), std::string::npos);
}

}  // namespace
}  // namespace rig::engine

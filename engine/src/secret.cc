#include "rig/engine/secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "rig/engine/env_settings.h"
#include "rig/wire/auth.h"

namespace rig::engine {
namespace {

std::runtime_error refused(const std::string& source, const std::string& why) {
  return std::runtime_error("secret " + source + ": " + why);
}

// Whether the POSIX ACL of `fd` (Linux's system.posix_acl_access: a u32 version, then entries of
// u16 tag, u16 permissions, u32 id) lets no one but `uid` (and the owner) read or write: the
// layout systemd gives a credential (mode 0400 and user:UID:r, which stat shows as 0440).
bool acl_grants_only(int fd, uid_t uid) {
  constexpr std::uint16_t kUser = 0x02, kGroupObj = 0x04, kGroup = 0x08, kOther = 0x20;
  std::uint8_t acl[1024];
  const ssize_t n = ::fgetxattr(fd, "system.posix_acl_access", acl, sizeof acl);
  if (n < 4 || (n - 4) % 8 != 0) return false;
  for (ssize_t at = 4; at < n; at += 8) {
    std::uint16_t tag = 0, perm = 0;
    std::uint32_t id = 0;
    std::memcpy(&tag, acl + at, 2);
    std::memcpy(&perm, acl + at + 2, 2);
    std::memcpy(&id, acl + at + 4, 4);
    const bool reads_or_writes = (perm & 6) != 0;
    if (tag == kUser && reads_or_writes && id != uid) return false;
    if ((tag == kGroupObj || tag == kGroup || tag == kOther) && reads_or_writes) return false;
  }
  return true;
}

// Refuses (throws) a file that is not regular, not this user's or root's, or that others may
// use; returns its size.
off_t check_file(int fd, const std::string& source) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw refused(source, "not a regular file (a FIFO, a device or a folder is refused)");
  }
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    throw refused(source, "owned by uid " + std::to_string(st.st_uid) + ", neither this process's user (uid " +
                              std::to_string(me) + ") nor root: refused (chown it)");
  }
  const bool others = (st.st_mode & S_IRWXO) != 0;
  if (others || ((st.st_mode & S_IRWXG) != 0 && !acl_grants_only(fd, me))) {
    throw refused(source, "its group or others may read or write it (chmod 600 it)");
  }
  return st.st_size;
}

}  // namespace

Secret secret_from_bytes(SecretBuffer bytes, std::string source) {
  if (!bytes.empty() && bytes.back() == '\n') bytes.pop_back();
  if (bytes.size() < wire::kMinSecretBytes) {
    throw refused(source, "holds " + std::to_string(bytes.size()) + " bytes; a secret needs at least " +
                              std::to_string(wire::kMinSecretBytes));
  }
  return Secret{std::move(bytes), std::move(source)};
}

Secret read_secret_file(const std::string& path) {
  const std::string source = "file " + path;
  // O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0 && errno == ELOOP) throw refused(source, "is a symbolic link: refused (give the file itself)");
  if (fd < 0) throw refused(source, std::strerror(errno));
  off_t size = 0;
  try {
    size = check_file(fd, source);
  } catch (...) {
    ::close(fd);
    throw;
  }
  SecretBuffer bytes(static_cast<std::size_t>(std::min<off_t>(size, 1 << 16)));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(got);
  return secret_from_bytes(std::move(bytes), source);
}

std::optional<Secret> secret_from_env() {
  if (const char* file = env_text("RIG_SECRET_FILE")) return read_secret_file(file);
  if (const char* text = env_text("RIG_SECRET")) {
    return secret_from_bytes(SecretBuffer(text, text + std::strlen(text)), "RIG_SECRET");
  }
  return std::nullopt;
}

PrivateSecretFile::PrivateSecretFile() {
  const char* tmp = std::getenv("TMPDIR");
  dir_ = std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/rig-secret-XXXXXX";
  if (::mkdtemp(dir_.data()) == nullptr) throw refused(dir_, std::string("mkdtemp: ") + std::strerror(errno));
  path_ = dir_ + "/secret";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    ::rmdir(dir_.c_str());
    throw refused(path_, std::strerror(errno));
  }
  std::string hex;
  hex.reserve(4 * wire::kNonceBytes);  // one buffer, wiped below
  for (int i = 0; i < 2; ++i) {
    for (std::uint8_t b : wire::fresh_nonce()) {
      static constexpr char kDigits[] = "0123456789abcdef";
      hex += kDigits[b >> 4];
      hex += kDigits[b & 15];
    }
  }
  const bool ok = ::write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
  wire::wipe(hex.data(), hex.size());
  ::close(fd);
  if (!ok) {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
    throw refused(path_, "could not be written");
  }
}

PrivateSecretFile::~PrivateSecretFile() {
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

}  // namespace rig::engine

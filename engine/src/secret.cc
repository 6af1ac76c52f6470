#include "rig/engine/secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "rig/engine/env_settings.h"
#include "rig/wire/auth.h"

namespace rig::engine {
namespace {

// A secret refused with `err`: "secret SOURCE: why".
wire::Outcome refused(int err, const std::string& source, const std::string& why) {
  return wire::Outcome::failed(err, "secret " + source + ": " + why);
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

// Refuses a file that is not regular (-EINVAL; fstat's -errno if it fails), not this user's or
// root's, or that others may use (-EPERM: its owner or mode is not one a secret may have);
// else its size.
wire::Result<off_t> check_file(int fd, const std::string& source) {
  struct stat st {};
  const int stat_errno = ::fstat(fd, &st) != 0 ? errno : 0;
  if (stat_errno != 0 || !S_ISREG(st.st_mode)) {
    return refused(stat_errno != 0 ? -stat_errno : -EINVAL, source,
                   "not a regular file (a FIFO, a device or a folder is refused)");
  }
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    return refused(-EPERM, source, "owned by uid " + std::to_string(st.st_uid) + ", neither this process's user (uid " +
                                       std::to_string(me) + ") nor root: refused (chown it)");
  }
  const bool others = (st.st_mode & S_IRWXO) != 0;
  if (others || ((st.st_mode & S_IRWXG) != 0 && !acl_grants_only(fd, me))) {
    return refused(-EPERM, source, "its group or others may read or write it (chmod 600 it)");
  }
  return st.st_size;
}

}  // namespace

wire::Result<Secret> secret_from_bytes(SecretBuffer bytes, std::string source) {
  if (!bytes.empty() && bytes.back() == '\n') bytes.pop_back();
  if (bytes.size() < wire::kMinSecretBytes) {
    return refused(-EINVAL, source, "holds " + std::to_string(bytes.size()) + " bytes; a secret needs at least " +
                              std::to_string(wire::kMinSecretBytes));
  }
  return Secret{std::move(bytes), std::move(source)};
}

wire::Result<Secret> read_secret_file(const std::string& path) {
  const std::string source = "file " + path;
  // O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  const int open_errno = errno;
  if (fd < 0 && open_errno == ELOOP) return refused(-ELOOP, source, "is a symbolic link: refused (give the file itself)");
  if (fd < 0) return refused(-open_errno, source, std::strerror(open_errno));
  const wire::Result<off_t> size = check_file(fd, source);
  if (!size.ok()) ::close(fd);
  RIG_RETURN_IF_FAILED(size.outcome());
  SecretBuffer bytes(static_cast<std::size_t>(std::min<off_t>(*size, 1 << 16)));
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

namespace {

// A secret as the optional one that secret_from_env gives.
wire::Result<std::optional<Secret>> maybe(wire::Result<Secret> secret) {
  RIG_RETURN_IF_FAILED(secret.outcome());
  return std::optional<Secret>(std::move(*secret));
}

}  // namespace

wire::Result<std::optional<Secret>> secret_from_env() {
  if (const char* file = env_text("RIG_SECRET_FILE")) return maybe(read_secret_file(file));
  if (const char* text = env_text("RIG_SECRET")) {
    return maybe(secret_from_bytes(SecretBuffer(text, text + std::strlen(text)), "RIG_SECRET"));
  }
  return std::optional<Secret>();
}

wire::Result<PrivateSecretFile> PrivateSecretFile::make() {
  PrivateSecretFile made;
  RIG_RETURN_IF_FAILED(made.write());
  return made;
}

PrivateSecretFile::PrivateSecretFile(PrivateSecretFile&& from) noexcept
    : dir_(std::exchange(from.dir_, {})), path_(std::exchange(from.path_, {})) {}

wire::Outcome PrivateSecretFile::write() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/rig-secret-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    const int e = errno;
    return refused(-e, dir, std::string("mkdtemp: ") + std::strerror(e));
  }
  dir_ = dir;
  const std::string path = dir_ + "/secret";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    return refused(-e, path, std::strerror(e));
  }
  path_ = path;
  std::string hex;
  hex.reserve(4 * wire::kNonceBytes);  // one buffer, wiped below
  for (int i = 0; i < 2; ++i) {
    for (std::uint8_t b : wire::fresh_nonce()) {
      static constexpr char kDigits[] = "0123456789abcdef";
      hex += kDigits[b >> 4];
      hex += kDigits[b & 15];
    }
  }
  const ssize_t wrote = ::write(fd, hex.data(), hex.size());
  const int e = wrote < 0 ? errno : EIO;  // a short write: -EIO
  wire::wipe(hex.data(), hex.size());
  ::close(fd);
  if (wrote != static_cast<ssize_t>(hex.size())) return refused(-e, path_, "could not be written");
  return {};
}

// What write() made, if anything (a moved-from object holds nothing).
PrivateSecretFile::~PrivateSecretFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

}  // namespace rig::engine

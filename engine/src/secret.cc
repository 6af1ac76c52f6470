#include "rig/engine/secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "rig/wire/auth.h"

namespace rig::engine {
namespace {

std::runtime_error refused(const std::string& source, const std::string& why) {
  return std::runtime_error("secret " + source + ": " + why);
}

Secret checked(std::vector<std::uint8_t> bytes, std::string source) {
  if (!bytes.empty() && bytes.back() == '\n') bytes.pop_back();
  if (bytes.size() < wire::kMinSecretBytes) {
    throw refused(source, "holds " + std::to_string(bytes.size()) + " bytes; a secret needs at least " +
                              std::to_string(wire::kMinSecretBytes));
  }
  return Secret{std::move(bytes), std::move(source)};
}

}  // namespace

Secret read_secret_file(const std::string& path) {
  const std::string source = "file " + path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw refused(source, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw refused(source, "not a regular file");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    throw refused(source, "its group or others may read or write it (chmod 600 it)");
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min<off_t>(st.st_size, 1 << 16)));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(got);
  return checked(std::move(bytes), source);
}

std::optional<Secret> secret_from_env() {
  if (const char* file = std::getenv("RIG_SECRET_FILE"); file != nullptr && *file != 0) {
    return read_secret_file(file);
  }
  if (const char* text = std::getenv("RIG_SECRET"); text != nullptr && *text != 0) {
    return checked(std::vector<std::uint8_t>(text, text + std::strlen(text)), "RIG_SECRET");
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
  for (int i = 0; i < 2; ++i) {
    for (std::uint8_t b : wire::fresh_nonce()) {
      static constexpr char kDigits[] = "0123456789abcdef";
      hex += kDigits[b >> 4];
      hex += kDigits[b & 15];
    }
  }
  const bool ok = ::write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
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

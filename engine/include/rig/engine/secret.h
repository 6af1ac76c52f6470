// The shared secret that authenticates a job and its agent to each other (rig/wire/auth.h):
// read from a file that only its owner may read, or from the environment. Its bytes are wiped
// when dropped. The library never changes the environment (a runtime's process has threads):
// rig-agent removes RIG_SECRET from its own before it starts any.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rig/wire/auth.h"
#include "rig/wire/outcome.h"

namespace rig::engine {

// Memory that is wiped (wire::wipe, OPENSSL_cleanse) before it is freed: each buffer a vector of
// secret bytes holds, its growth and its copies included, is zeroed when the vector drops it.
template <class T>
struct WipingAllocator {
  using value_type = T;
  WipingAllocator() = default;
  template <class U>
  WipingAllocator(const WipingAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept {
    wire::wipe(p, n * sizeof(T));
    std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const WipingAllocator&, const WipingAllocator&) { return true; }
};

using SecretBuffer = std::vector<std::uint8_t, WipingAllocator<std::uint8_t>>;

struct Secret {
  SecretBuffer bytes;  // at least wire::kMinSecretBytes; wiped when dropped (its allocator)
  std::string source;  // where it came from, for messages (never the bytes)
};

// The bytes of the file at `path` (one trailing newline dropped), opened without following a
// symbolic link and without blocking (a FIFO is refused, not waited on). Fails naming the file
// and the cause ("secret file PATH: ...") if it cannot be read (open's -errno; -ELOOP for a
// symbolic link), is not a regular file (-EINVAL), is owned by neither this process's effective
// user nor root or its group or others may read or write it (-EPERM; a POSIX ACL that grants
// only this user, as systemd gives a credential, is accepted), or if it holds fewer than 32
// bytes (-EINVAL).
wire::Result<Secret> read_secret_file(const std::string& path);

// `bytes` as the secret from `source` (one trailing newline dropped); fails as
// read_secret_file (-EINVAL) if fewer than 32 bytes remain.
wire::Result<Secret> secret_from_bytes(SecretBuffer bytes, std::string source);

// The environment's secret: the file named by RIG_SECRET_FILE, else the bytes of RIG_SECRET
// (at least 32); nullopt if neither is set. Fails as read_secret_file for a bad one.
wire::Result<std::optional<Secret>> secret_from_env();

// A fresh random secret in a new file only this user may read (a 0600 file in a 0700 folder of
// $TMPDIR or /tmp), removed with the object. For programs that start an agent of their own
// (rig-demo, rig-bench, the tests): on a shared host every local user is a stranger, also on
// loopback. make() fails with the failing call's -errno naming the path (-EIO for a short
// write).
class PrivateSecretFile {
 public:
  static wire::Result<PrivateSecretFile> make();
  ~PrivateSecretFile();
  PrivateSecretFile(PrivateSecretFile&& from) noexcept;
  PrivateSecretFile(const PrivateSecretFile&) = delete;
  PrivateSecretFile& operator=(const PrivateSecretFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  PrivateSecretFile() = default;
  wire::Outcome write();  // what make() makes; the destructor removes what it made
  std::string dir_, path_;
};

}  // namespace rig::engine

// The shared secret that authenticates a job and its agent to each other (rig/wire/auth.h):
// read from a file that only its owner may read, or from the environment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rig::engine {

struct Secret {
  std::vector<std::uint8_t> bytes;  // at least wire::kMinSecretBytes
  std::string source;               // where it came from, for messages (never the bytes)
};

// The bytes of the file at `path` (one trailing newline dropped). Throws std::runtime_error
// naming the file and the cause if it cannot be read, if its group or others may read or write
// it, or if it holds fewer than 32 bytes.
Secret read_secret_file(const std::string& path);

// The environment's secret: the file named by RIG_SECRET_FILE, else the bytes of RIG_SECRET
// (at least 32); nullopt if neither is set. Throws as read_secret_file for a bad one.
std::optional<Secret> secret_from_env();

// A fresh random secret in a new file only this user may read (a 0600 file in a 0700 folder of
// $TMPDIR or /tmp), removed with the object. For programs that start an agent of their own
// (rig-demo, rig-bench, the tests): on a shared host every local user is a stranger, also on
// loopback. Throws std::runtime_error if it cannot be made.
class PrivateSecretFile {
 public:
  PrivateSecretFile();
  ~PrivateSecretFile();
  PrivateSecretFile(const PrivateSecretFile&) = delete;
  PrivateSecretFile& operator=(const PrivateSecretFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

}  // namespace rig::engine

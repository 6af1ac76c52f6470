#include "rig/wire/auth.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rig/wire/frame_header.h"

namespace rig::wire {
namespace {

// OpenSSL itself failing is a resource failure, as std::bad_alloc is (which these functions'
// own buffers may throw too): HMAC-SHA256 and HKDF-SHA256 over bytes in memory fail only where
// OpenSSL cannot allocate or its installation lacks SHA-256, RAND_bytes only where the kernel
// has no getrandom. Like bad_alloc it is thrown, not returned, and caught where resource
// failures are: Job::connect's caller gets it as the handshake's std::runtime_error, the agent's
// handshake room fails that one connection. A library never stops its host process for it.
[[noreturn]] void crypto_failed(const char* what) {
  char text[256] = "unknown error";
  ERR_error_string_n(ERR_get_error(), text, sizeof text);
  throw std::runtime_error(std::string(what) + " failed: " + text);
}

// Builds the bytes a MAC covers: a label, then fields in little-endian order.
class Message {
 public:
  explicit Message(std::string_view label) { bytes(label.data(), label.size()); }
  Message& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Message& u64(std::uint64_t v) { return u32(static_cast<std::uint32_t>(v)).u32(static_cast<std::uint32_t>(v >> 32)); }
  Message& bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  Message& transcript(const Transcript& t) {
    return u32(kVersion).u32(t.offered).bytes(t.client.data(), t.client.size()).bytes(t.agent.data(), t.agent.size())
        .bytes(t.name.data(), t.name.size());
  }
  const std::vector<std::uint8_t>& data() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

Mac hmac(std::span<const std::uint8_t> key, const Message& m) {
  // HMAC with an empty key is still HMAC (an open agent's), but OpenSSL wants a non-null pointer.
  static const std::uint8_t kEmpty = 0;
  Mac out{};
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), key.empty() ? &kEmpty : key.data(), static_cast<int>(key.size()), m.data().data(),
           m.data().size(), out.data(), &n) == nullptr || n != out.size()) {
    crypto_failed("HMAC-SHA256");
  }
  return out;
}

}  // namespace

Nonce fresh_nonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) crypto_failed("RAND_bytes");
  return n;
}

Mac client_proof(SecretBytes secret, const Transcript& t) {
  return hmac(secret, Message("rig-remote handshake: client").transcript(t));
}

Mac agent_proof(SecretBytes secret, const Transcript& t, std::uint32_t accepted, std::span<const Account> accounts) {
  Message m("rig-remote handshake: agent");
  m.transcript(t).u32(accepted).u32(static_cast<std::uint32_t>(accounts.size()));
  m.bytes(accounts.data(), accounts.size_bytes());
  return hmac(secret, m);
}

JobKey job_key(SecretBytes secret, const Transcript& t) {
  Message salt("rig-remote job key");
  salt.transcript(t);
  JobKey key{};
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  static const std::uint8_t kEmpty = 0;
  static constexpr std::string_view kInfo = "rig-remote v2 stripes";
  std::size_t n = key.size();
  const bool ok = ctx != nullptr && EVP_PKEY_derive_init(ctx) == 1 &&
                  EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1 &&
                  EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt.data().data(), static_cast<int>(salt.data().size())) == 1 &&
                  EVP_PKEY_CTX_set1_hkdf_key(ctx, secret.empty() ? &kEmpty : secret.data(),
                                             static_cast<int>(secret.size())) == 1 &&
                  EVP_PKEY_CTX_add1_hkdf_info(ctx, reinterpret_cast<const unsigned char*>(kInfo.data()),
                                              static_cast<int>(kInfo.size())) == 1 &&
                  EVP_PKEY_derive(ctx, key.data(), &n) == 1 && n == key.size();
  EVP_PKEY_CTX_free(ctx);
  if (!ok) crypto_failed("HKDF-SHA256");
  return key;
}

Mac join_proof(const JobKey& key, const Join& join, const Nonce& nonce) {
  Message m("rig-remote join");
  m.u32(join.version).u32(join.stripe).u32(join.count).u32(join.min_kib).u64(join.token);
  m.bytes(nonce.data(), nonce.size());
  return hmac(key, m);
}

bool same_mac(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

void wipe(void* p, std::size_t n) noexcept {
  if (p != nullptr && n > 0) OPENSSL_cleanse(p, n);
}

}  // namespace rig::wire

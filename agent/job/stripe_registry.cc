#include "job/stripe_registry.h"

#include <sys/random.h>

#include <cerrno>
#include <random>

#include "rig/engine/iov_cursor.h"
#include "rig/wire/codec.h"

namespace rig::agent {
namespace {

std::uint64_t random_token() {
  std::uint64_t t = 0;
  if (::getrandom(&t, sizeof t, 0) != static_cast<ssize_t>(sizeof t)) {
    std::random_device rd;  // getrandom unavailable: the library's source
    t = (std::uint64_t{rd()} << 32) ^ rd();
  }
  return t;
}

}  // namespace

StripeRegistry& StripeRegistry::instance() {
  static StripeRegistry registry;
  return registry;
}

std::uint64_t StripeRegistry::open(std::uint32_t max_stripes, const wire::JobKey& key) {
  std::lock_guard lock(mu_);
  for (;;) {
    const std::uint64_t token = random_token();
    if (token == 0 || jobs_.count(token) != 0) continue;
    jobs_[token].max_stripes = max_stripes;
    jobs_[token].key = key;
    return token;
  }
}

bool StripeRegistry::proved(const wire::Join& join, const wire::Nonce& nonce, const wire::Mac& proof) {
  wire::JobKey key{};
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(join.token);
    if (it == jobs_.end()) return false;
    key = it->second.key;
  }
  const bool ok = wire::same_mac(wire::join_proof(key, join, nonce), proof);
  wire::wipe(key.data(), key.size());
  return ok;
}

void StripeRegistry::close(std::uint64_t token) {
  std::vector<std::unique_ptr<engine::Socket>> closing;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(token);
    if (it == jobs_.end()) return;
    closing = std::move(it->second.stripes);
    jobs_.erase(it);
  }
  // Closed outside the lock.
}

std::string StripeRegistry::attach(const wire::Join& join, std::unique_ptr<engine::Socket>& socket) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(join.token);
  if (it == jobs_.end()) return "no job of this agent has that token (it ended, or never was)";
  Entry& job = it->second;
  if (job.taken) return "the job's stripes are complete";
  if (join.count > job.max_stripes) {
    return "join of " + std::to_string(join.count) + " stripes where " + std::to_string(job.max_stripes) +
           " were granted";
  }
  if (job.count != 0 && join.count != job.count) {
    return "join of " + std::to_string(join.count) + " stripes where an earlier join said " +
           std::to_string(job.count);
  }
  if (job.count != 0 && join.min_kib != job.min_kib) return "join with another threshold than an earlier join";
  if (job.count == 0) {
    job.count = join.count;
    job.min_kib = join.min_kib;
    job.stripes.resize(join.count);
  }
  if (job.stripes[join.stripe]) return "stripe " + std::to_string(join.stripe) + " joined already";
  const auto echo = wire::encode(join);
  const iovec iov = engine::to_iov(&echo, sizeof echo);
  if (const int rc = socket->send_all({&iov, 1}); rc != 0) return "the joining connection broke";
  job.stripes[join.stripe] = std::move(socket);
  ++job.joined;
  return {};
}

bool StripeRegistry::take(std::uint64_t token, std::vector<std::unique_ptr<engine::Socket>>& out,
                          std::uint64_t& min_bytes) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(token);
  if (it == jobs_.end()) return false;
  Entry& job = it->second;
  if (job.taken || job.count == 0 || job.joined != job.count) return false;
  out = std::move(job.stripes);
  min_bytes = std::uint64_t{job.min_kib} * 1024;
  job.taken = true;
  return true;
}

}  // namespace rig::agent

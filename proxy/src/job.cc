#include "rig/remote/job.h"

#include <new>
#include <stdexcept>
#include <thread>

#include "link_core.h"
#include "rig/edge.hpp"
#include "rig/engine/env_settings.h"

namespace rig::remote {

namespace {
// Link tags are unique among the links alive in this process, so that an id names the link
// that made it, also across jobs (room refuses memory of another link from the id alone).
struct LinkTags {
  std::mutex mu;
  std::vector<bool> used = std::vector<bool>(1u << 16, false);
};
// Never destroyed: a job may end on the C ABI's reaper thread while the process exits, and its
// links give their tags back then (static destruction would race with that).
LinkTags& link_tags() {
  static auto* tags = new LinkTags;
  return *tags;
}
}  // namespace

std::uint16_t take_link_tag() {
  LinkTags& tags = link_tags();
  std::lock_guard lock(tags.mu);
  for (std::uint32_t t = 1; t < tags.used.size(); ++t) {
    if (!tags.used[t]) {
      tags.used[t] = true;
      return static_cast<std::uint16_t>(t);
    }
  }
  throw std::runtime_error("this process has 65535 links open already");
}

void give_link_tag(std::uint16_t tag) {
  LinkTags& tags = link_tags();
  std::lock_guard lock(tags.mu);
  tags.used[tag] = false;
}

std::shared_ptr<Job> Job::create() { return std::shared_ptr<Job>(new Job()); }

Job::~Job() {
  close();
  for (auto& link : links_) LinkCore::of(*link).join();
}

Link& Job::connect(const std::string& endpoint, const LinkOptions& options) {
  return LinkCore::connect(*this, endpoint, options, nullptr);
}

Link& LinkCore::connect(Job& job, const std::string& endpoint, const LinkOptions& options,
                        std::shared_ptr<const engine::Faults> faults) {
  job.check();
  // The RIG_* variables before anything else: a bad one fails the connect naming it
  // (std::invalid_argument), and no thread of the link finds it later.
  if (const wire::Outcome& env = engine::env_settings().outcome(); !env.ok()) throw std::invalid_argument(env.why());
  // Connects and does the handshake outside the lock (it may take a while).
  auto link = std::make_unique<LinkCore>(job, endpoint, options, std::move(faults));
  std::lock_guard lock(job.links_mu_);
  if (job.over()) {
    link->shutdown();
    link->join();
    job.check();
  }
  LinkCore& made = *link;
  job.links_.push_back(std::move(link));
  made.start();
  return made;
}

void Job::close() {
  // release: pairs with the acquire loads of over()/closing(); nothing else to publish.
  const std::uint32_t before = state_.fetch_or(kClosing, std::memory_order_acq_rel);
  if ((before & kClosing) != 0) return;
  std::lock_guard lock(links_mu_);
  for (auto& link : links_) {
    LinkCore::of(*link).close();
    LinkCore::of(*link).notify_all();
  }
}

void Job::fail(const std::string& why) { fail_noexcept({why}); }

void Job::fail_noexcept(std::initializer_list<std::string_view> pieces) noexcept {
  if (closing()) return;
  bool expected = false;
  // acq_rel: one thread wins; it alone writes root_cause_.
  if (!claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    // Another thread won and is writing the root cause: return once it is published, so that
    // this caller's fault_text() is the root cause, never "". The winner sets kFailed always,
    // right after one string copy. acquire: pairs with the winner's release below.
    while ((state_.load(std::memory_order_acquire) & kFailed) == 0) std::this_thread::yield();
    return;
  }
  try {
    for (const std::string_view piece : pieces) root_cause_ += piece;
  } catch (const std::bad_alloc&) {
    root_cause_ = "out of memory";  // fits the string's own buffer: allocates nothing
  }
  // release: publishes root_cause_ to every acquire load of state_ that sees kFailed.
  state_.fetch_or(kFailed, std::memory_order_release);
  std::lock_guard lock(links_mu_);
  for (auto& link : links_) {
    LinkCore::of(*link).shutdown();
    LinkCore::of(*link).notify_all();
  }
}

std::string Job::fault_text() const {
  const std::uint32_t s = state_.load(std::memory_order_acquire);
  if ((s & kFailed) != 0) return root_cause_;
  if ((s & kClosing) != 0) return "the job is closed";
  return {};
}

void Job::check() const {
  if (over()) throw edge::Fault(fault_text());
}

}  // namespace rig::remote

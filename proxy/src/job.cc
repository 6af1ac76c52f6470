#include "rig/remote/job.h"

#include "rig/edge.hpp"

namespace rig::remote {

std::shared_ptr<Job> Job::create() { return std::shared_ptr<Job>(new Job()); }

Job::~Job() {
  close();
  for (auto& link : links_) link->join();
}

Link& Job::connect(const std::string& endpoint, const LinkOptions& options) {
  check();
  // relaxed: tags only need to be unique.
  const std::uint32_t tag = next_tag_.fetch_add(1, std::memory_order_relaxed);
  if (tag > 0xfffe) throw std::runtime_error("a job links at most 65534 agents");
  // Connects and does the handshake outside the lock (it may take a while).
  auto link = std::make_unique<Link>(*this, static_cast<std::uint16_t>(tag), endpoint, options);
  std::lock_guard lock(links_mu_);
  if (over()) {
    link->shutdown();
    link->join();
    check();
  }
  links_.push_back(std::move(link));
  links_.back()->start();
  return *links_.back();
}

void Job::close() {
  // release: pairs with the acquire loads of over()/closing(); nothing else to publish.
  const std::uint32_t before = state_.fetch_or(kClosing, std::memory_order_acq_rel);
  if ((before & kClosing) != 0) return;
  std::lock_guard lock(links_mu_);
  for (auto& link : links_) {
    link->shutdown();
    link->notify();
  }
}

void Job::fail(const std::string& why) {
  if (closing()) return;
  bool expected = false;
  // acq_rel: one thread wins; it alone writes root_cause_.
  if (!claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  root_cause_ = why;
  // release: publishes root_cause_ to every acquire load of state_ that sees kFailed.
  state_.fetch_or(kFailed, std::memory_order_release);
  std::lock_guard lock(links_mu_);
  for (auto& link : links_) {
    link->shutdown();
    link->notify();
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

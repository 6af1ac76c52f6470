#include "rig/harness/runtime.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace rig::harness {

namespace {

// The agent's account of device `id`; throws where the agent has no such device.
const remote::Account& account_of(const remote::Link& link, std::uint32_t id) {
  const remote::Account* a = link.account(id);
  if (a == nullptr) throw std::invalid_argument("the agent has no device " + std::to_string(id));
  return *a;
}

}  // namespace

rig_side host_side(const void* p) { return rig_side{const_cast<void*>(p), 0, 0}; }

rig_side region_side(const remote::Region& r, std::uint64_t offset) {
  return rig_side{nullptr, remote::Proxy::locate(r).handle, offset};
}

Work& Work::copy(const rig_copy& c, std::uint32_t queue) {
  rig_part p{};
  p.kind = RIG_PART_COPY;
  p.queue = queue;
  p.u.copy = c;
  return part(p);
}

Work& Work::to_device(const void* host, const remote::Region& dst, std::uint64_t offset,
                      std::uint64_t bytes, std::uint32_t queue) {
  return copy(rig_copy{host_side(host), region_side(dst, offset), 1, bytes, bytes, bytes}, queue);
}

Work& Work::to_host(const remote::Region& src, std::uint64_t offset, void* host, std::uint64_t bytes,
                    std::uint32_t queue) {
  return copy(rig_copy{region_side(src, offset), host_side(host), 1, bytes, bytes, bytes}, queue);
}

Work& Work::between(const remote::Region& src, std::uint64_t src_offset, const remote::Region& dst,
                    std::uint64_t dst_offset, std::uint64_t bytes, std::uint32_t queue) {
  return copy(rig_copy{region_side(src, src_offset), region_side(dst, dst_offset), 1, bytes, bytes, bytes},
              queue);
}

Work& Work::words(std::uint64_t image, std::uint32_t function, std::vector<std::uint32_t> w,
                  std::uint32_t queue) {
  words_.push_back(std::make_unique<std::vector<std::uint32_t>>(std::move(w)));
  rig_part p{};
  p.kind = RIG_PART_WORDS;
  p.queue = queue;
  p.u.words = rig_words{image, function, static_cast<std::uint32_t>(words_.back()->size()),
                        words_.back()->data()};
  return part(p);
}

Work& Work::part(const rig_part& p) {
  parts_.push_back(p);
  return *this;
}

Work& Work::wait(const std::uint64_t* word, std::uint64_t device, std::uint64_t value) {
  waits_.push_back(rig_wait{word, device, value});
  return *this;
}

const rig_submission& Work::submission() {
  s_.waits = waits_.data();
  s_.n_waits = static_cast<std::uint32_t>(waits_.size());
  s_.parts = parts_.data();
  s_.n_parts = static_cast<std::uint32_t>(parts_.size());
  return s_;
}

Driven::Driven(remote::Link& link, const remote::Account& account, remote::abi::Capability capability,
               std::uint64_t initial_word)
    : word_(std::make_unique<std::uint64_t>(initial_word)), next_value_(initial_word + 1) {
  proxy_ = remote::device(link, account, capability).make(word_.get());
}

Driven::Driven(remote::Link& link, std::uint32_t device_id, std::uint64_t initial_word)
    : Driven(link, account_of(link, device_id),
             device_id == 0 ? remote::abi::Capability{remote::abi::Host{}}
                            : remote::abi::Capability{remote::abi::Device{device_id}},
             initial_word) {}

Driven::~Driven() {
  try {
    if (!stopped_) stop();
  } catch (...) {
  }
  // rig frees the word only once it reads the last value given to submit: until then the
  // receiving thread may still write it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (proxy_->signaled() < last_value() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (proxy_->signaled() < last_value()) (void)word_.release();  // never free a live word
}

namespace {
struct OneAtATime {
  explicit OneAtATime(std::atomic<int>& c) : c_(c) {
    // acq_rel: a second concurrent caller sees the first one's increment.
    if (c_.fetch_add(1, std::memory_order_acq_rel) != 0) {
      throw std::logic_error("harness: room/submit of one proxy called concurrently");
    }
  }
  ~OneAtATime() { c_.fetch_sub(1, std::memory_order_acq_rel); }
  std::atomic<int>& c_;
};
}  // namespace

int Driven::room(Work& work) {
  OneAtATime guard(in_call_);
  return rig_proxy_room(proxy_->c_handle(), &work.submission());
}

Driven::Submitted Driven::submit(Work& work) {
  if (stopped_) throw std::logic_error("harness: submit after stop");
  for (;;) {
    const int r = room(work);
    if (r == RIG_NEVER) throw std::logic_error("harness: room answered RIG_NEVER");
    if (r == RIG_GROW) throw std::logic_error("harness: a proxy answered RIG_GROW");
    if (r == RIG_FITS) break;
    proxy_->sleep(proxy_->signaled(), 10);
  }
  OneAtATime guard(in_call_);
  Submitted out;
  out.value = next_value_++;
  const char* why = nullptr;
  out.rc = rig_proxy_submit(proxy_->c_handle(), &work.submission(), out.value, &why);
  if (out.rc != RIG_COMMITTED) out.why = why != nullptr ? why : "(no reason)";
  return out;
}

std::uint64_t Driven::run(Work& work) {
  const Submitted s = submit(work);
  if (!s.ok()) throw std::runtime_error("submit failed: " + s.why);
  return s.value;
}

void Driven::wait(std::uint64_t value, std::uint64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const std::uint64_t seen = proxy_->signaled();
    if (seen >= value) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("harness: word stayed at " + std::to_string(seen) + ", waited for " +
                               std::to_string(value));
    }
    proxy_->sleep(seen, 100);
  }
}

void Driven::stop() {
  if (stopped_) return;
  OneAtATime guard(in_call_);
  proxy_->stop(std::nullopt);
  stopped_ = true;
}

}  // namespace rig::harness

#include "c_handles.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

namespace rig::remote::c_abi {
namespace {

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<const void*, HandleKind> live;
};

Registry& registry() {
  static auto* r = new Registry;  // never destroyed: handles may be checked during exit
  return *r;
}

// The reaper: one thread, started on first use, that drops jobs' references in turn. Every
// reference a C caller held passes through it, so its check of the count is the last word.
struct Reaper {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Job>> queue;
  bool started = false;

  void run() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !queue.empty(); });
        job = std::move(queue.front());
        queue.pop_front();
      }
      if (job.use_count() == 1) {
        for (const auto& link : job->links()) Handles::remove(link.get(), HandleKind::kLink);
      }
      job.reset();  // the last reference: ~Job closes the job and joins its threads here
    }
  }
};

Reaper& reaper() {
  static auto* r = new Reaper;  // never destroyed: its thread runs until the process exits
  return *r;
}

}  // namespace

void Handles::add(const void* p, HandleKind k) {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  r.live[p] = k;
}

bool Handles::remove(const void* p, HandleKind k) {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  auto it = r.live.find(p);
  if (it == r.live.end() || it->second != k) return false;
  r.live.erase(it);
  return true;
}

bool Handles::live(const void* p, HandleKind k) {
  std::shared_lock lock(mutex());
  return live_locked(p, k);
}

std::shared_mutex& Handles::mutex() { return registry().mu; }

bool Handles::live_locked(const void* p, HandleKind k) {
  if (p == nullptr) return false;
  const Registry& r = registry();
  auto it = r.live.find(p);
  return it != r.live.end() && it->second == k;
}

void put_text(rig_text* t, std::string_view s) noexcept {
  if (t == nullptr) return;
  t->needed = s.size() + 1;
  if (t->data == nullptr || t->size == 0) return;
  const std::size_t n = std::min(s.size(), t->size - 1);
  std::memcpy(t->data, s.data(), n);
  t->data[n] = '\0';
}

int bad_handle(rig_text* why, const char* what) noexcept {
  put_text(why, std::string_view(what));
  return RIG_BAD_HANDLE;
}

Job* job_of(const rig_job* j) {
  return Handles::live(j, HandleKind::kJob) ? j->job.get() : nullptr;
}

Link* link_of_locked(const rig_link* l) { return reinterpret_cast<Link*>(const_cast<rig_link*>(l)); }

Proxy* proxy_of(const rig_proxy* d) {
  return Handles::live(d, HandleKind::kProxy) ? Proxy::from_c(const_cast<rig_proxy*>(d)) : nullptr;
}

void drop(std::shared_ptr<Job> job) noexcept {
  Reaper& r = reaper();
  try {
    std::lock_guard lock(r.mu);
    r.queue.push_back(std::move(job));  // strong guarantee: on a throw, job is still ours
    if (!r.started) {
      std::thread([&r] { r.run(); }).detach();
      r.started = true;
    }
  } catch (...) {
    // No memory or no thread: keep the reference forever rather than end the job here, where
    // ~Job would block the caller. (A reference already queued waits for a reaper: the same.)
    if (job) (void)new (std::nothrow) std::shared_ptr<Job>(std::move(job));
    return;
  }
  r.cv.notify_one();
}

}  // namespace rig::remote::c_abi

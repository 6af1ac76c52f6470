// Runs a reference tool's threads: all start at once (after each has set itself up), the first
// exception of any is rethrown once all have ended, and `on_error` (which shuts the sockets
// down) unblocks the others when one fails.
#pragma once

#include <exception>
#include <functional>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

namespace rig::bench::refs {

// Each function calls ready() when it is set up: that waits for all the others to be.
using Ready = std::function<void()>;
inline void run_together(const std::vector<std::function<void(const Ready&)>>& fns,
                         const std::function<void()>& on_error) {
  std::latch start(static_cast<std::ptrdiff_t>(fns.size()));
  std::mutex m;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  threads.reserve(fns.size());
  for (const auto& fn : fns) {
    threads.emplace_back([&, fn] {
      bool arrived = false;
      try {
        fn([&] {
          arrived = true;
          start.arrive_and_wait();
        });
      } catch (...) {
        if (!arrived) start.count_down();  // the others must not wait for this one
        {
          std::lock_guard lock(m);
          if (!first) first = std::current_exception();
        }
        on_error();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace rig::bench::refs

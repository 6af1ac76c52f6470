// Holds one thread of this process, found by its name, inside a signal handler until the test
// lets it go: for forcing an order between threads that no observable state gives (the link's
// receiving thread reads nothing while a send fails). Works under ThreadSanitizer and ASan.
// One hold at a time per process (the handler's state is global); SIGUSR2 is taken while it lasts.
#pragma once

#include <signal.h>

#include <string>

namespace rig::test {

class ThreadHold {
 public:
  // Signals the one thread named `name` (/proc/self/task/TID/comm) and waits, up to 10 s, until
  // its handler runs. held() says whether it did; error() why not.
  explicit ThreadHold(const std::string& name);
  ~ThreadHold();  // lets go, then puts SIGUSR2's handler back
  ThreadHold(const ThreadHold&) = delete;
  ThreadHold& operator=(const ThreadHold&) = delete;

  bool held() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  void let_go();

 private:
  struct sigaction before_ {};
  bool installed_ = false;
  std::string error_;
};

}  // namespace rig::test

// What one thread of a reference tool paid: its CPU time and context switches (getrusage with
// RUSAGE_THREAD, read in the thread itself) and the system calls it made (counted by the tool at
// each call, so the figure is exact and needs no tracer).
#pragma once

#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

namespace rig::bench::refs {

struct ThreadCost {
  double user_s = 0;
  double sys_s = 0;
  long voluntary_switches = 0;    // ru_nvcsw: the thread slept (a blocking call waited)
  long involuntary_switches = 0;  // ru_nivcsw: the scheduler took the core away
  std::uint64_t syscalls = 0;     // counted by the caller, not by getrusage

  // The calling thread's figures so far (syscalls 0: the caller adds its count).
  static ThreadCost now() {
    rusage ru{};
    if (::getrusage(RUSAGE_THREAD, &ru) != 0) {
      throw std::system_error(errno, std::generic_category(), "getrusage(RUSAGE_THREAD)");
    }
    auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
    return {secs(ru.ru_utime), secs(ru.ru_stime), ru.ru_nvcsw, ru.ru_nivcsw, 0};
  }

  ThreadCost operator-(const ThreadCost& before) const {
    return {user_s - before.user_s, sys_s - before.sys_s, voluntary_switches - before.voluntary_switches,
            involuntary_switches - before.involuntary_switches, syscalls - before.syscalls};
  }
  ThreadCost& operator+=(const ThreadCost& o) {
    user_s += o.user_s;
    sys_s += o.sys_s;
    voluntary_switches += o.voluntary_switches;
    involuntary_switches += o.involuntary_switches;
    syscalls += o.syscalls;
    return *this;
  }
  // Runs body(calls), which counts its system calls in `calls`, and returns what the calling
  // thread paid over it.
  template <class Body>
  static ThreadCost of(Body&& body) {
    const ThreadCost before = now();
    std::uint64_t calls = 0;
    body(calls);
    ThreadCost cost = now() - before;
    cost.syscalls = calls;
    return cost;
  }

  double cpu_s() const { return user_s + sys_s; }
  long context_switches() const { return voluntary_switches + involuntary_switches; }

  // The cost divided over `units` (messages, GiB), CPU time in `cpu_unit` ("us": microseconds,
  // "ms": milliseconds, "s": seconds), keys named after it ("cpu_us", "user_us", ...).
  nlohmann::json per(double units, const std::string& cpu_unit) const {
    const double scale = cpu_unit == "us" ? 1e6 : cpu_unit == "ms" ? 1e3 : 1.0;
    const double d = units > 0 ? units : 1;
    return {{"cpu_" + cpu_unit, cpu_s() * scale / d},
            {"user_" + cpu_unit, user_s * scale / d},
            {"sys_" + cpu_unit, sys_s * scale / d},
            {"syscalls", static_cast<double>(syscalls) / d},
            {"context_switches", static_cast<double>(context_switches()) / d},
            {"voluntary_switches", static_cast<double>(voluntary_switches) / d},
            {"involuntary_switches", static_cast<double>(involuntary_switches) / d}};
  }
};

}  // namespace rig::bench::refs

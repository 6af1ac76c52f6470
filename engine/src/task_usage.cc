#include "rig/engine/task_usage.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "rig/engine/syscall_count.h"

namespace rig::engine {
namespace {

bool read_text(const std::string& path, std::string& out) {
  std::ifstream f(path);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  out = s.str();
  return static_cast<bool>(f) || f.eof();
}

// CPU time in ns: schedstat's first field (run time, ns), else stat's utime + stime (ticks).
bool read_cpu_ns(const std::string& dir, std::uint64_t& ns) {
  std::string text;
  if (read_text(dir + "/schedstat", text) && !text.empty()) {
    ns = std::strtoull(text.c_str(), nullptr, 10);
    return true;
  }
  if (!read_text(dir + "/stat", text)) return false;
  // Fields after the comm, which may hold spaces and parentheses: start after the last ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  std::uint64_t utime = 0, stime = 0;
  // Field 3 (state) is the first after ')'; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  const long hz = ::sysconf(_SC_CLK_TCK);
  ns = (utime + stime) * (1'000'000'000ull / static_cast<std::uint64_t>(hz > 0 ? hz : 100));
  return true;
}

bool read_switches(const std::string& dir, TaskUsage& t) {
  std::string text;
  if (!read_text(dir + "/status", text)) return false;
  auto field = [&](const char* key) -> std::uint64_t {
    const std::size_t at = text.find(key);
    return at == std::string::npos ? 0 : std::strtoull(text.c_str() + at + std::strlen(key), nullptr, 10);
  };
  t.voluntary = field("\nvoluntary_ctxt_switches:");
  t.involuntary = field("\nnonvoluntary_ctxt_switches:");
  return true;
}

}  // namespace

wire::Result<std::vector<TaskUsage>> task_usage(pid_t pid) {
  const bool self = pid == 0 || pid == ::getpid();
  const std::string base = self ? "/proc/self/task" : "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(base.c_str());
  if (d == nullptr) {
    const int e = errno;
    return wire::Outcome::failed(-e, "cannot read " + base + ": " + std::strerror(e));
  }
  std::vector<TaskUsage> out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string dir = base + "/" + e->d_name;
    TaskUsage t;
    t.tid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    if (!read_text(dir + "/comm", t.name)) continue;  // ended meanwhile
    while (!t.name.empty() && t.name.back() == '\n') t.name.pop_back();
    if (!read_cpu_ns(dir, t.cpu_ns) || !read_switches(dir, t)) continue;
    out.push_back(std::move(t));
  }
  ::closedir(d);
  if (self) {
    std::unordered_map<pid_t, std::uint64_t> calls;
    for (const SyscallCount& c : syscall_counts()) calls[c.tid] += c.calls;
    for (TaskUsage& t : out) {
      if (const auto it = calls.find(t.tid); it != calls.end()) t.syscalls = it->second;
    }
  }
  return out;
}

TaskUsage this_thread_usage() {
  TaskUsage t;
  t.tid = static_cast<pid_t>(::syscall(SYS_gettid));
  char name[16] = {};
  if (::pthread_getname_np(::pthread_self(), name, sizeof name) == 0) t.name = name;
  rusage r{};
  ::getrusage(RUSAGE_THREAD, &r);
  auto ns = [](const timeval& v) {
    return static_cast<std::uint64_t>(v.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(v.tv_usec) * 1000ull;
  };
  t.cpu_ns = ns(r.ru_utime) + ns(r.ru_stime);
  t.voluntary = static_cast<std::uint64_t>(r.ru_nvcsw);
  t.involuntary = static_cast<std::uint64_t>(r.ru_nivcsw);
  // relaxed: a statistic written by this very thread (see count_syscall).
  t.syscalls = this_thread_syscalls().calls.load(std::memory_order_relaxed);
  return t;
}

}  // namespace rig::engine

// What each thread of a process has cost so far, read from /proc: CPU time and context switches
// per thread (task), with the engine's count of its system calls (syscall_count.h) for the
// threads of this process. rig-bench's cost figures and the agent's status query read it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rig/export.h"
#include "rig/wire/outcome.h"

namespace rig::engine {

// One thread's totals since it started.
struct TaskUsage {
  pid_t tid = 0;
  std::string name;               // its comm ("rig-recv", "iou-sqp-1234", ...)
  std::uint64_t cpu_ns = 0;       // user + system time
  std::uint64_t voluntary = 0;    // context switches: it slept
  std::uint64_t involuntary = 0;  // context switches: it was preempted
  std::uint64_t syscalls = 0;     // the engine's count (this process's threads only), else 0
};

// Every thread of process `pid` (0: this process) now: /proc/PID/task/TID/{comm,schedstat,status}
// (the CPU time from schedstat's run time in ns where the kernel keeps it, else from stat's
// utime + stime in clock ticks). A thread that ends while it is read is left out. For this
// process, `syscalls` is filled from syscall_counts(). Fails with opendir's -errno, naming the
// folder and errno's text, when /proc/PID/task cannot be read.
RIG_API wire::Result<std::vector<TaskUsage>> task_usage(pid_t pid = 0);

// The calling thread's totals, from getrusage(RUSAGE_THREAD) (µs resolution), its name and its
// count of system calls.
RIG_API TaskUsage this_thread_usage();

}  // namespace rig::engine

// What each figure cost, per operation: the system calls the engine counted, the CPU time and
// the context switches of every thread that worked for it, on both ends, and the batch sizes the
// link reached (docs/TUNING.md, "Reading the cost figures").
//
// Client threads: the submitting threads (rig-bench's own, by getrusage(RUSAGE_THREAD) around
// their timed batches), the link's receiving thread ("rig-recv") and io_uring's kernel threads
// of this process ("iou-sqp-*", "iou-wrk-*"), read from /proc/self/task. Agent threads: from the
// agent's status query (wire kStatusQuery: works with --agent on another host) or, for an agent
// rig-bench started that lacks it, from /proc/PID/task (then its system calls are not measured).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "refs/tcp_segments.h"
#include "report.h"
#include "rig/engine/syscall_count.h"
#include "rig/engine/task_usage.h"
#include "rig/remote/link.h"

namespace rig::bench {

// The agent at one moment: every thread of its process, and, from a status query, the job's
// connection counters on its side (batch sizes).
struct AgentSample {
  std::vector<engine::TaskUsage> threads;
  bool has_job = false;
  std::uint64_t messages_sent = 0, send_calls = 0, messages_received = 0, reads = 0;
  std::uint64_t gathers = 0;  // 0 from an agent older than gathering
  bool has_ring = false;  // an agent older than these two figures lacks them
  std::uint64_t ring_enters = 0, completions = 0;
};

// Where the agent's threads' figures come from.
class AgentWatch {
 public:
  virtual ~AgentWatch() = default;
  // The agent now. Throws std::runtime_error.
  virtual AgentSample sample() = 0;
  // Whether sample() carries the engine's system-call counts.
  virtual bool syscalls_measured() const = 0;
  // "status query", "/proc/PID", or "none"
  virtual std::string source() const = 0;
};

// An agent's status answer (its "threads" and "job"). Throws std::runtime_error.
AgentSample status_sample(const std::string& status);

// The best watch for this run: the status query when the agent accepted it, else /proc of the
// agent rig-bench started (`own_pid` > 0), else none (agent side "not measured").
std::unique_ptr<AgentWatch> make_agent_watch(remote::Link& link, pid_t own_pid);

// Measures one figure: begin() and end() bracket it; the submitting threads add what they did in
// between (the calling thread with caller_start/caller_stop around each timed batch, other
// threads with add_submitter).
class CostMeter {
 public:
  CostMeter(remote::Link& link, AgentWatch& agent);

  // Samples the receiving and io_uring threads of this process, the agent, the link's
  // counters and its sockets' TCP segments. Throws std::runtime_error if /proc or the agent's
  // answer cannot be read.
  void begin();
  void end();
  // The calling thread submits for the figure between these two calls (repeatable).
  void caller_start();
  void caller_stop();
  // A submitting thread's usage over its part of the figure (its end minus its start); any thread.
  void add_submitter(const engine::TaskUsage& delta);
  // The calling thread's usage since `start` (its engine::this_thread_usage() then) is a
  // submitter's.
  void add_since(const engine::TaskUsage& start);

  // The costs between begin() and end(), counted over `count` operations of unit `per`
  // ("handover" or "GiB").
  Costs costs(const std::string& per, double count) const;

 private:
  remote::Link& link_;
  AgentWatch& agent_;
  std::vector<engine::TaskUsage> client0_, client1_;
  engine::RingCounts ring0_, ring1_;  // this process's io_uring batches
  AgentSample agent0_, agent1_;
  refs::TcpSegments segments0_, segments1_;  // the link's sockets (rig-bench holds no others)
  engine::TaskUsage caller0_{};
  std::mutex mu_;                           // guards submitters_ (worker threads add theirs)
  std::vector<engine::TaskUsage> submitters_;
};

}  // namespace rig::bench

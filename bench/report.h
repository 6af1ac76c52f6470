// rig-bench's figures: each measured figure with the link counters its timed part moved, printed
// as a table and written as JSON.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "refs/tcp_segments.h"
#include "rig/engine/task_usage.h"
#include "rig/remote/link.h"

namespace rig::bench {

// The figures of a link's counters (remote::LinkCounters) at one moment; subtracting two gives what happened between.
struct CounterSnapshot {
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t send_calls = 0;
  std::uint64_t bytes_staged = 0;
  std::uint64_t zc_sends = 0;
  std::uint64_t zc_copied = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t reads = 0;
  std::uint64_t payload_bytes_copied = 0;
  std::uint64_t payload_bytes_direct = 0;
  std::uint64_t bytes_striped_out = 0;
  std::uint64_t bytes_striped_in = 0;
  std::uint64_t spin_reads = 0;
  std::uint64_t word_publishes = 0;

  static CounterSnapshot of(const remote::LinkCounters& c);
  CounterSnapshot operator-(const CounterSnapshot& earlier) const;
};

// One role's threads over a figure, in total (Costs::count operations).
struct RoleCost {
  std::uint32_t threads = 0;
  bool syscalls_measured = true;
  std::uint64_t syscalls = 0;  // counted by the engine at each call into the kernel
  std::uint64_t cpu_ns = 0;    // user + system
  std::uint64_t voluntary = 0;
  std::uint64_t involuntary = 0;
};

// One thread's part of a figure.
struct ThreadCost {
  std::string side;  // "client", "agent"
  std::string role;  // "submit", "recv", "io_uring", "agent"
  engine::TaskUsage usage;  // over the figure
};

// What a figure cost (costs.h measures it).
struct Costs {
  bool measured = false;
  std::string per;   // "handover" or "GiB"
  double count = 0;  // handovers, or GiB moved
  RoleCost submit;   // the submitting threads (rig-bench's)
  RoleCost recv;     // the link's receiving thread
  RoleCost io_uring; // this process's io_uring kernel threads (SQ polling, workers)
  RoleCost agent;    // every thread of the agent
  bool agent_measured = false;
  std::string agent_source;  // "status query", "/proc/PID", "none"
  // The agent's side of the job's connection over the figure (from its status query only).
  bool agent_batches = false;
  std::uint64_t agent_messages_sent = 0, agent_send_calls = 0, agent_messages_received = 0, agent_reads = 0;
  std::uint64_t agent_gathers = 0;  // times the agent's reading started gathering (--gather-us)
  // io_uring's batch size over the figure: calls into the ring on transfer paths and the
  // completions they reaped, in this process and (status query only) in the agent.
  std::uint64_t ring_enters = 0, completions = 0;
  bool agent_ring = false;
  std::uint64_t agent_ring_enters = 0, agent_completions = 0;
  // TCP segments on the client's sockets over the figure (TCP_INFO; data out, to the agent; data
  // in and all in, from it): how many messages the kernel put in one segment.
  refs::TcpSegments segments;
  std::vector<ThreadCost> threads;
};

struct Figure {
  std::string name;         // stable key: "h2d", "d2h", "h2d_strided", "handover_rtt_p50", ...
  std::string label;        // for people: "host -> device"
  std::uint64_t size = 0;   // bytes per copy; 0 when the figure has no size
  double value = 0;
  std::string unit;         // "GB/s" (1e9 bytes), "us" or "msg/s"
  std::uint64_t items = 0;  // copies or handovers the figure was taken over
  double seconds = 0;       // time measured
  std::string detail;       // how it was taken, for the table and the JSON
  CounterSnapshot counters; // what the link counted over the figure's batches (warm-ups and
                            // read-backs for checks excluded, but the round trip's warm-up)
  Costs costs;              // per operation; measured for the handover and copy figures
};

struct RunInfo {
  std::string agent;        // endpoint
  std::string backend;      // socket backend of the link
  std::int64_t send_zc_bytes = -1;  // --send-zc-bytes (-1: the default)
  bool own_agent = false;   // started by rig-bench
  bool quick = false;
  double min_time = 0;
  std::uint64_t max_size = 0;
  std::vector<std::string> figures;  // the groups asked by --figures (empty: all)
  std::uint32_t handover_message_bytes = 0;
  std::uint32_t threads = 0;
  std::uint32_t stripes = 0;        // data connections the link got
  std::uint64_t stripe_min_bytes = 0;
  std::string started;      // UTC, ISO 8601
  std::string agent_version;  // from the agent's status query ("" without one)
  // The agent's transport settings from its status query, a JSON object's text ("" without
  // one): an agent rig-bench did not start is otherwise known only by its endpoint.
  std::string agent_settings;
  // The devices besides the host: the kind asked of an agent rig-bench started ("sim", "cuda",
  // "auto"; "" for --agent), and each account's "name (arch)" as the agent announced it.
  std::string device_kind;
  std::vector<std::string> devices;
};

class Report {
 public:
  void add(Figure f) { figures_.push_back(std::move(f)); }
  const std::vector<Figure>& figures() const { return figures_; }

  void print_table(std::FILE* out) const;
  // The cost figures, per handover or per GiB, of the figures that have them.
  void print_costs(std::FILE* out) const;
  // Writes every figure, the run's facts and the link's `totals`; throws std::runtime_error.
  void write_json(const std::string& path, const RunInfo& info, const CounterSnapshot& totals) const;

 private:
  std::vector<Figure> figures_;
};

// "4 KiB", "64 MiB"
std::string size_text(std::uint64_t bytes);

}  // namespace rig::bench

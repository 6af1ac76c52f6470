#include "process/status.h"

#include <unistd.h>

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "rig/engine/socket.h"
#include "rig/engine/syscall_count.h"
#include "rig/engine/task_usage.h"
#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace rig::agent {

namespace {
// The host memory of all jobs together (host_memory_limit.h): the agent's limit
// (--max-host-bytes), what the jobs hold now, and the claims it refused since the start.
nlohmann::ordered_json host_memory(const AgentConfig& c) {
  const HostMemoryLimit* h = c.host_memory.get();
  return {{"limit", h != nullptr ? h->limit() : c.max_host_bytes},
          {"held", h != nullptr ? h->held() : 0},
          {"refused", h != nullptr ? h->refusals() : 0}};
}
}  // namespace

std::string status_text(const AgentConfig& config, const Gauges& gauges, const engine::Counters& job,
                        const StagedCopies& staged, std::uint32_t max_bytes) {
  // relaxed: counts and statistics, which order nothing (gauges.h, counters.h).
  auto count = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  // The connection's bytes hold the stripes' too (bytes_striped_* is the part that went there).
  const std::uint64_t job_in = count(job.bytes_received);
  const std::uint64_t job_out = count(job.bytes_sent);
  nlohmann::ordered_json o;
  o["agent"] = "rig-agent";
  o["version"] = wire::software_version();
  o["protocol"] = wire::kVersion;
  o["pid"] = ::getpid();
  o["uptime_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - gauges.started).count();
  // The transport's settings (rig-agent's options); not the secrets, nor where they come from.
  o["settings"] = {{"backend", engine::backend_name(config.backend)},
                   {"sq_polling", engine::sq_polling()},
                   {"gather_us", config.gather_us},
                   {"poll_us", config.poll_us},
                   {"silence_ms", config.silence_ms},
                   {"max_stripes", config.max_stripes}};
  o["jobs"] = gauges.jobs.load(std::memory_order_relaxed);
  o["connections"] = gauges.connections.load(std::memory_order_relaxed);
  o["handshakes"] = gauges.handshakes.load(std::memory_order_relaxed);  // of them, in their handshake
  o["host_memory"] = host_memory(config);
  o["totals"] = {{"jobs", count(gauges.jobs_started)},
                 {"jobs_failed", count(gauges.jobs_failed)},
                 {"refused", {{"connections", count(gauges.refused_connections)},
                              {"jobs", count(gauges.refused_jobs)},
                              {"stopping", count(gauges.refused_stopping)}}},
                 {"handshakes_failed", count(gauges.handshakes_failed)},
                 {"authentication_failures", count(gauges.auth_failures)},
                 {"handshakes_shed", count(gauges.handshakes_shed)}};
  o["bytes_in"] = count(gauges.bytes_in) + job_in;
  o["bytes_out"] = count(gauges.bytes_out) + job_out;
  o["job"] = {{"bytes_received", job_in},
              {"bytes_sent", job_out},
              {"messages_received", count(job.messages_received)},
              {"reads", count(job.reads)},
              {"messages_sent", count(job.messages_sent)},
              {"send_calls", count(job.send_calls)},
              {"spin_reads", count(job.spin_reads)},
              {"gathers", count(job.gathers)},
              {"bytes_copied_in", staged.copied_in},
              {"bytes_streamed", staged.streamed},
              {"bytes_streamed_out", staged.streamed_out}};
  o["syscalls_total"] = engine::syscalls_total();
  const engine::RingCounts ring = engine::ring_counts_total();
  o["ring_enters"] = ring.enters;  // io_uring_enter calls on transfer paths, and the completions
  o["completions"] = ring.completions;  // they reaped (the io_uring backend's batch size)
  nlohmann::ordered_json threads = nlohmann::ordered_json::array();
  const wire::Result<std::vector<engine::TaskUsage>> usage = engine::task_usage();
  if (!usage.ok()) o["threads_error"] = usage.outcome().why();
  for (std::size_t i = 0; usage.ok() && i < usage->size(); ++i) {
    const engine::TaskUsage& t = (*usage)[i];
    threads.push_back({{"tid", t.tid}, {"name", t.name}, {"cpu_ns", t.cpu_ns}, {"voluntary", t.voluntary},
                       {"involuntary", t.involuntary}, {"syscalls", t.syscalls}});
  }
  o["threads_left_out"] = 0;
  o["threads"] = threads;
  std::string text = o.dump();
  std::size_t left_out = 0;
  while (text.size() > max_bytes && !o["threads"].empty()) {
    // Leave out threads, the last first, until it fits (an agent with thousands of connections).
    const std::size_t drop = std::max<std::size_t>(1, o["threads"].size() / 8);
    for (std::size_t i = 0; i < drop && !o["threads"].empty(); ++i) o["threads"].erase(o["threads"].size() - 1);
    left_out += drop;
    o["threads_left_out"] = left_out;
    text = o.dump();
  }
  return text;
}

}  // namespace rig::agent

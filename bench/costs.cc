#include "costs.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

namespace rig::bench {
namespace {

// The threads of `pid` (0: this process). rig-bench is a program on the C++ API: a /proc it
// cannot read throws there, as the API's calls do, and its main says why.
std::vector<engine::TaskUsage> threads_of(pid_t pid) {
  wire::Result<std::vector<engine::TaskUsage>> usage = engine::task_usage(pid);
  if (!usage.ok()) throw std::runtime_error(usage.outcome().why());
  return std::move(*usage);
}

class NoAgentWatch final : public AgentWatch {
 public:
  AgentSample sample() override { return {}; }
  bool syscalls_measured() const override { return false; }
  std::string source() const override { return "none"; }
};

class ProcAgentWatch final : public AgentWatch {
 public:
  explicit ProcAgentWatch(pid_t pid) : pid_(pid) {}
  AgentSample sample() override { return AgentSample{threads_of(pid_)}; }
  bool syscalls_measured() const override { return false; }
  std::string source() const override { return "/proc/" + std::to_string(pid_); }

 private:
  pid_t pid_;
};

class StatusAgentWatch final : public AgentWatch {
 public:
  explicit StatusAgentWatch(remote::Link& link) : link_(link) {}
  AgentSample sample() override { return status_sample(link_.agent_status()); }
  bool syscalls_measured() const override { return true; }
  std::string source() const override { return "status query"; }

 private:
  remote::Link& link_;
};

// The client threads a figure's costs count besides the submitting ones.
const char* client_role(const std::string& name) {
  if (name == "rig-recv") return "recv";
  if (name.rfind("iou-", 0) == 0) return "io_uring";  // iou-sqp-* (SQ polling), iou-wrk-* (workers)
  return nullptr;
}

engine::TaskUsage minus(const engine::TaskUsage& a, const engine::TaskUsage& b) {
  engine::TaskUsage d = a;
  d.cpu_ns = a.cpu_ns - std::min(a.cpu_ns, b.cpu_ns);
  d.voluntary = a.voluntary - std::min(a.voluntary, b.voluntary);
  d.involuntary = a.involuntary - std::min(a.involuntary, b.involuntary);
  d.syscalls = a.syscalls - std::min(a.syscalls, b.syscalls);
  return d;
}

void add(RoleCost& r, const engine::TaskUsage& d) {
  ++r.threads;
  r.syscalls += d.syscalls;
  r.cpu_ns += d.cpu_ns;
  r.voluntary += d.voluntary;
  r.involuntary += d.involuntary;
}

// Each thread of `after` less its figures in `before` (a thread that began in between counts
// from zero; one that ended in between is lost, which the JSON's thread list shows).
std::vector<engine::TaskUsage> deltas(const std::vector<engine::TaskUsage>& before,
                                      const std::vector<engine::TaskUsage>& after) {
  std::unordered_map<pid_t, const engine::TaskUsage*> by_tid;
  for (const engine::TaskUsage& t : before) by_tid[t.tid] = &t;
  std::vector<engine::TaskUsage> out;
  for (const engine::TaskUsage& t : after) {
    const auto it = by_tid.find(t.tid);
    out.push_back(it == by_tid.end() ? t : minus(t, *it->second));
  }
  return out;
}

std::vector<engine::TaskUsage> client_threads() {
  std::vector<engine::TaskUsage> all = threads_of(0);
  std::erase_if(all, [](const engine::TaskUsage& t) { return client_role(t.name) == nullptr; });
  return all;
}

}  // namespace

AgentSample status_sample(const std::string& status) {
  AgentSample out;
  try {
    const nlohmann::json j = nlohmann::json::parse(status);
    const nlohmann::json& job = j.at("job");
    out.has_job = true;
    out.messages_sent = job.at("messages_sent").get<std::uint64_t>();
    out.send_calls = job.at("send_calls").get<std::uint64_t>();
    out.messages_received = job.at("messages_received").get<std::uint64_t>();
    out.reads = job.at("reads").get<std::uint64_t>();
    out.gathers = job.value("gathers", std::uint64_t{0});
    if (j.contains("ring_enters") && j.contains("completions")) {
      out.has_ring = true;
      out.ring_enters = j.at("ring_enters").get<std::uint64_t>();
      out.completions = j.at("completions").get<std::uint64_t>();
    }
    for (const nlohmann::json& t : j.at("threads")) {
      engine::TaskUsage u;
      u.tid = t.at("tid").get<pid_t>();
      u.name = t.at("name").get<std::string>();
      u.cpu_ns = t.at("cpu_ns").get<std::uint64_t>();
      u.voluntary = t.at("voluntary").get<std::uint64_t>();
      u.involuntary = t.at("involuntary").get<std::uint64_t>();
      u.syscalls = t.at("syscalls").get<std::uint64_t>();
      out.threads.push_back(std::move(u));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("the agent's status lacks its figures: ") + e.what());
  }
  return out;
}

std::unique_ptr<AgentWatch> make_agent_watch(remote::Link& link, pid_t own_pid) {
  if (link.agent_status_supported()) return std::make_unique<StatusAgentWatch>(link);
  if (own_pid > 0) return std::make_unique<ProcAgentWatch>(own_pid);
  return std::make_unique<NoAgentWatch>();
}

CostMeter::CostMeter(remote::Link& link, AgentWatch& agent) : link_(link), agent_(agent) {}

void CostMeter::begin() {
  agent0_ = agent_.sample();
  client0_ = client_threads();
  ring0_ = engine::ring_counts_total();
  segments0_ = refs::tcp_segments_of_process();
}

void CostMeter::end() {
  client1_ = client_threads();
  ring1_ = engine::ring_counts_total();
  segments1_ = refs::tcp_segments_of_process();
  agent1_ = agent_.sample();
}

void CostMeter::caller_start() { caller0_ = engine::this_thread_usage(); }

void CostMeter::caller_stop() { add_since(caller0_); }

void CostMeter::add_since(const engine::TaskUsage& start) { add_submitter(minus(engine::this_thread_usage(), start)); }

void CostMeter::add_submitter(const engine::TaskUsage& delta) {
  const std::lock_guard<std::mutex> lock(mu_);
  const auto same = std::find_if(submitters_.begin(), submitters_.end(),
                                 [&](const engine::TaskUsage& t) { return t.tid == delta.tid; });
  if (same == submitters_.end()) {
    submitters_.push_back(delta);
    return;
  }
  same->cpu_ns += delta.cpu_ns;
  same->voluntary += delta.voluntary;
  same->involuntary += delta.involuntary;
  same->syscalls += delta.syscalls;
}

Costs CostMeter::costs(const std::string& per, double count) const {
  Costs c;
  c.measured = true;
  c.per = per;
  c.count = count;
  c.agent_source = agent_.source();
  c.agent.syscalls_measured = agent_.syscalls_measured();
  c.agent_measured = c.agent_source != "none";
  for (const engine::TaskUsage& t : submitters_) {
    add(c.submit, t);
    c.threads.push_back({"client", "submit", t});
  }
  for (const engine::TaskUsage& t : deltas(client0_, client1_)) {
    const std::string role = client_role(t.name);
    add(role == "recv" ? c.recv : c.io_uring, t);
    c.threads.push_back({"client", role, t});
  }
  for (const engine::TaskUsage& t : deltas(agent0_.threads, agent1_.threads)) {
    add(c.agent, t);
    c.threads.push_back({"agent", "agent", t});
  }
  if (agent0_.has_job && agent1_.has_job) {
    c.agent_batches = true;
    c.agent_messages_sent = agent1_.messages_sent - agent0_.messages_sent;
    c.agent_send_calls = agent1_.send_calls - agent0_.send_calls;
    c.agent_messages_received = agent1_.messages_received - agent0_.messages_received;
    c.agent_reads = agent1_.reads - agent0_.reads;
    c.agent_gathers = agent1_.gathers - agent0_.gathers;
  }
  c.segments = segments1_ - segments0_;
  c.ring_enters = ring1_.enters - ring0_.enters;
  c.completions = ring1_.completions - ring0_.completions;
  if (agent0_.has_ring && agent1_.has_ring) {
    c.agent_ring = true;
    c.agent_ring_enters = agent1_.ring_enters - agent0_.ring_enters;
    c.agent_completions = agent1_.completions - agent0_.completions;
  }
  return c;
}

}  // namespace rig::bench

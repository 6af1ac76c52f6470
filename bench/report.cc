#include "report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "rig_bench_commit.h"  // generated at build time (bench/commit.cmake)
#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace rig::bench {
namespace {

using Json = nlohmann::ordered_json;

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// Every counter the bench reports, with its JSON name, in JSON order: the one list that
// CounterSnapshot::of, operator- and the JSON writer go through.
struct CounterField {
  const char* name;
  std::uint64_t remote::LinkCounters::*live;
  std::uint64_t CounterSnapshot::*copy;
};
constexpr CounterField kCounterFields[] = {
    {"bytes_sent", &remote::LinkCounters::bytes_sent, &CounterSnapshot::bytes_sent},
    {"messages_sent", &remote::LinkCounters::messages_sent, &CounterSnapshot::messages_sent},
    {"send_calls", &remote::LinkCounters::send_calls, &CounterSnapshot::send_calls},
    {"bytes_staged", &remote::LinkCounters::bytes_staged, &CounterSnapshot::bytes_staged},
    {"zc_sends", &remote::LinkCounters::zc_sends, &CounterSnapshot::zc_sends},
    {"zc_copied", &remote::LinkCounters::zc_copied, &CounterSnapshot::zc_copied},
    {"bytes_received", &remote::LinkCounters::bytes_received, &CounterSnapshot::bytes_received},
    {"messages_received", &remote::LinkCounters::messages_received, &CounterSnapshot::messages_received},
    {"reads", &remote::LinkCounters::reads, &CounterSnapshot::reads},
    {"payload_bytes_copied", &remote::LinkCounters::payload_bytes_copied, &CounterSnapshot::payload_bytes_copied},
    {"payload_bytes_direct", &remote::LinkCounters::payload_bytes_direct, &CounterSnapshot::payload_bytes_direct},
    {"bytes_striped_out", &remote::LinkCounters::bytes_striped_out, &CounterSnapshot::bytes_striped_out},
    {"bytes_striped_in", &remote::LinkCounters::bytes_striped_in, &CounterSnapshot::bytes_striped_in},
    {"spin_reads", &remote::LinkCounters::spin_reads, &CounterSnapshot::spin_reads},
    {"word_publishes", &remote::LinkCounters::word_publishes, &CounterSnapshot::word_publishes},
};

Json counters_json(const CounterSnapshot& c) {
  Json o = Json::object();
  for (const CounterField& f : kCounterFields) o[f.name] = c.*f.copy;
  return o;
}

double ratio(std::uint64_t a, std::uint64_t b) { return b == 0 ? NAN : static_cast<double>(a) / static_cast<double>(b); }

// One role per operation; system calls null where not measured.
Json role_json(const RoleCost& r, double count) {
  Json o = Json::object();
  o["threads"] = r.threads;
  o["syscalls"] = r.syscalls_measured ? number(static_cast<double>(r.syscalls) / count) : Json(nullptr);
  o["cpu_us"] = number(static_cast<double>(r.cpu_ns) / 1e3 / count);
  o["switches"] = number(static_cast<double>(r.voluntary + r.involuntary) / count);
  o["voluntary"] = number(static_cast<double>(r.voluntary) / count);
  o["involuntary"] = number(static_cast<double>(r.involuntary) / count);
  return o;
}

Json costs_json(const Costs& c, const CounterSnapshot& counters) {
  Json o = Json::object();
  o["per"] = c.per;
  o["count"] = number(c.count);
  o["agent_source"] = c.agent_source;
  o["client_submit"] = role_json(c.submit, c.count);
  o["client_recv"] = role_json(c.recv, c.count);
  o["client_io_uring"] = role_json(c.io_uring, c.count);
  o["agent"] = c.agent_measured ? role_json(c.agent, c.count) : Json(nullptr);
  // Client and agent together (the agent's system calls only where measured): what the page-shaped
  // floor's per-message figures compare with.
  RoleCost total;
  for (const RoleCost* r : {&c.submit, &c.recv, &c.io_uring, &c.agent}) {
    if (r == &c.agent && !c.agent_measured) continue;
    total.threads += r->threads;
    total.syscalls += r->syscalls;
    total.cpu_ns += r->cpu_ns;
    total.voluntary += r->voluntary;
    total.involuntary += r->involuntary;
  }
  total.syscalls_measured = c.agent_measured && c.agent.syscalls_measured;
  o["total"] = role_json(total, c.count);
  o["messages_per_send"] = number(ratio(counters.messages_sent, counters.send_calls));
  o["frames_per_read"] = number(ratio(counters.messages_received, counters.reads));
  o["agent_messages_per_send"] = c.agent_batches ? number(ratio(c.agent_messages_sent, c.agent_send_calls)) : Json(nullptr);
  o["agent_frames_per_read"] = c.agent_batches ? number(ratio(c.agent_messages_received, c.agent_reads)) : Json(nullptr);
  o["agent_gathers"] = c.agent_batches ? Json(c.agent_gathers) : Json(nullptr);
  // Completions reaped per io_uring_enter (null where no ring was entered: the plain backend).
  o["completions_per_enter"] = c.ring_enters > 0 ? number(ratio(c.completions, c.ring_enters)) : Json(nullptr);
  o["agent_completions_per_enter"] =
      c.agent_ring && c.agent_ring_enters > 0 ? number(ratio(c.agent_completions, c.agent_ring_enters)) : Json(nullptr);
  // Data segments per operation on the client's sockets, each way (null where TCP_INFO lacks
  // them): with the messages per send, how many messages the kernel coalesced into a segment.
  const refs::TcpSegments& s = c.segments;
  o["data_segments_out"] = s.measured ? number(s.data_out / c.count) : Json(nullptr);
  o["data_segments_in"] = s.measured ? number(s.data_in / c.count) : Json(nullptr);
  o["segments_in"] = s.measured ? number(s.all_in / c.count) : Json(nullptr);  // pure ACKs too
  Json threads = Json::array();
  for (const ThreadCost& t : c.threads) {
    threads.push_back({{"side", t.side}, {"role", t.role}, {"tid", t.usage.tid}, {"name", t.usage.name},
                       {"cpu_ns", t.usage.cpu_ns}, {"voluntary", t.usage.voluntary},
                       {"involuntary", t.usage.involuntary},
                       {"syscalls", t.side == "agent" && !c.agent.syscalls_measured ? Json(nullptr)
                                                                                   : Json(t.usage.syscalls)}});
  }
  o["threads"] = std::move(threads);
  return o;
}

// A figure per operation, in 7 characters: 3 significant digits, or "-" where not measured.
std::string cell(double v, bool measured = true) {
  if (!measured || !std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : (v >= 10 ? "%.1f" : "%.2f"), v);
  return buf;
}

std::string machine_cpu() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "";
}

}  // namespace

CounterSnapshot CounterSnapshot::of(const remote::LinkCounters& c) {
  CounterSnapshot s;
  for (const CounterField& f : kCounterFields) s.*f.copy = c.*f.live;
  return s;
}

CounterSnapshot CounterSnapshot::operator-(const CounterSnapshot& e) const {
  CounterSnapshot d;
  for (const CounterField& f : kCounterFields) d.*f.copy = this->*f.copy - e.*f.copy;
  return d;
}

std::string size_text(std::uint64_t bytes) {
  if (bytes == 0) return "";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::uint64_t v = bytes;
  while (v >= 1024 && v % 1024 == 0 && u < 4) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

void Report::print_table(std::FILE* out) const {
  std::fprintf(out, "%-34s %9s %12s %-6s %9s %8s  %s\n", "figure", "size", "value", "unit", "items",
               "seconds", "how");
  for (const Figure& f : figures_) {
    std::fprintf(out, "%-34s %9s %12.*f %-6s %9llu %8.3f  %s\n", f.label.c_str(),
                 size_text(f.size).c_str(), f.unit == "GB/s" ? 3 : (f.unit == "us" ? 1 : 0), f.value,
                 f.unit.c_str(), static_cast<unsigned long long>(f.items), f.seconds, f.detail.c_str());
  }
}

void Report::print_costs(std::FILE* out) const {
  std::fprintf(out, "\ncosts per operation (system calls counted by the engine, CPU us, context switches; "
                    "docs/TUNING.md)\n");
  std::fprintf(out, "%-34s %9s %-8s | %-20s | %-20s | %-7s | %-20s | %8s %8s | %8s %8s\n", "figure", "size",
               "per", "submit: calls cpu sw", "recv: calls cpu sw", "io cpu", "agent: calls cpu sw", "msg/send",
               "frm/read", "agent m/s", "agent f/r");
  for (const Figure& f : figures_) {
    const Costs& c = f.costs;
    if (!c.measured || c.count <= 0) continue;
    auto role = [&](const RoleCost& r, bool measured) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%6s %6s %6s", cell(static_cast<double>(r.syscalls) / c.count,
                                                          measured && r.syscalls_measured).c_str(),
                    cell(static_cast<double>(r.cpu_ns) / 1e3 / c.count, measured).c_str(),
                    cell(static_cast<double>(r.voluntary + r.involuntary) / c.count, measured).c_str());
      return std::string(buf);
    };
    std::fprintf(out, "%-34s %9s %-8s | %-20s | %-20s | %7s | %-20s | %8s %8s | %8s %8s\n", f.label.c_str(),
                 size_text(f.size).c_str(), c.per.c_str(), role(c.submit, true).c_str(), role(c.recv, true).c_str(),
                 cell(static_cast<double>(c.io_uring.cpu_ns) / 1e3 / c.count, c.io_uring.threads > 0).c_str(),
                 role(c.agent, c.agent_measured).c_str(),
                 cell(ratio(f.counters.messages_sent, f.counters.send_calls)).c_str(),
                 cell(ratio(f.counters.messages_received, f.counters.reads)).c_str(),
                 cell(ratio(c.agent_messages_sent, c.agent_send_calls), c.agent_batches).c_str(),
                 cell(ratio(c.agent_messages_received, c.agent_reads), c.agent_batches).c_str());
  }
}

void Report::write_json(const std::string& path, const RunInfo& info, const CounterSnapshot& totals) const {
  utsname u{};
  ::uname(&u);
  Json o = Json::object();
  o["bench"] = "rig-bench";
  o["version"] = wire::software_version();
  o["protocol"] = wire::kVersion;
  o["commit"] = RIG_BENCH_COMMIT;
  o["started"] = info.started;
  o["machine"] = {{"nproc", ::sysconf(_SC_NPROCESSORS_ONLN)}, {"kernel", u.release}, {"host", u.nodename},
                  {"cpu", machine_cpu()}};
  o["agent"] = info.agent;
  o["agent_version"] = info.agent_version;
  o["agent_settings"] = info.agent_settings.empty() ? Json(nullptr) : Json::parse(info.agent_settings, nullptr, false);
  o["own_agent"] = info.own_agent;
  o["device_kind"] = info.device_kind.empty() ? Json(nullptr) : Json(info.device_kind);
  o["devices"] = info.devices;
  o["backend"] = info.backend;
  o["stripes"] = info.stripes;
  o["stripe_min_bytes"] = info.stripe_min_bytes;
  o["send_zc_bytes"] = info.send_zc_bytes;
  o["quick"] = info.quick;
  o["min_time"] = number(info.min_time);
  o["max_size"] = info.max_size;
  o["figures_asked"] = info.figures.empty() ? Json("all") : Json(info.figures);
  o["threads"] = info.threads;
  o["handover_message_bytes"] = info.handover_message_bytes;
  Json figures = Json::array();
  for (const Figure& f : figures_) {
    Json j = {{"name", f.name}, {"label", f.label}, {"size", f.size}, {"value", number(f.value)},
              {"unit", f.unit}, {"items", f.items}, {"seconds", number(f.seconds)}, {"detail", f.detail},
              {"counters", counters_json(f.counters)}};
    if (f.costs.measured) j["costs"] = costs_json(f.costs, f.counters);
    figures.push_back(std::move(j));
  }
  o["figures"] = std::move(figures);
  o["counters"] = counters_json(totals);
  std::ofstream file(path, std::ios::trunc);
  file << o.dump(2) << "\n";
  file.close();
  if (!file) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace rig::bench

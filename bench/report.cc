#include "report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace rig::bench {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Every counter the bench reports, with its JSON name, in JSON order: the one list that
// CounterSnapshot::of, operator- and the JSON writer go through.
struct CounterField {
  const char* name;
  std::atomic<std::uint64_t> engine::Counters::*live;
  std::uint64_t CounterSnapshot::*copy;
};
constexpr CounterField kCounterFields[] = {
    {"bytes_sent", &engine::Counters::bytes_sent, &CounterSnapshot::bytes_sent},
    {"messages_sent", &engine::Counters::messages_sent, &CounterSnapshot::messages_sent},
    {"send_calls", &engine::Counters::send_calls, &CounterSnapshot::send_calls},
    {"bytes_staged", &engine::Counters::bytes_staged, &CounterSnapshot::bytes_staged},
    {"zc_sends", &engine::Counters::zc_sends, &CounterSnapshot::zc_sends},
    {"zc_copied", &engine::Counters::zc_copied, &CounterSnapshot::zc_copied},
    {"bytes_received", &engine::Counters::bytes_received, &CounterSnapshot::bytes_received},
    {"messages_received", &engine::Counters::messages_received, &CounterSnapshot::messages_received},
    {"payload_bytes_copied", &engine::Counters::payload_bytes_copied, &CounterSnapshot::payload_bytes_copied},
    {"payload_bytes_direct", &engine::Counters::payload_bytes_direct, &CounterSnapshot::payload_bytes_direct},
    {"bytes_striped_out", &engine::Counters::bytes_striped_out, &CounterSnapshot::bytes_striped_out},
    {"bytes_striped_in", &engine::Counters::bytes_striped_in, &CounterSnapshot::bytes_striped_in},
};

void write_counters(std::ostream& o, const CounterSnapshot& c, const char* indent) {
  o << "{";
  const char* sep = "\n";
  for (const CounterField& f : kCounterFields) {
    o << sep << indent << "  \"" << f.name << "\": " << c.*f.copy;
    sep = ",\n";
  }
  o << "\n" << indent << "}";
}

}  // namespace

CounterSnapshot CounterSnapshot::of(const engine::Counters& c) {
  CounterSnapshot s;
  // relaxed: statistics only (the counters order nothing).
  for (const CounterField& f : kCounterFields) s.*f.copy = (c.*f.live).load(std::memory_order_relaxed);
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

void Report::write_json(const std::string& path, const RunInfo& info, const CounterSnapshot& totals) const {
  std::ostringstream o;
  utsname u{};
  ::uname(&u);
  o << "{\n"
    << "  \"bench\": \"rig-bench\",\n"
    << "  \"version\": " << json_string(wire::software_version()) << ",\n"
    << "  \"protocol\": " << wire::kVersion << ",\n"
    << "  \"started\": " << json_string(info.started) << ",\n"
    << "  \"machine\": {\"nproc\": " << ::sysconf(_SC_NPROCESSORS_ONLN)
    << ", \"kernel\": " << json_string(u.release) << ", \"host\": " << json_string(u.nodename) << "},\n"
    << "  \"agent\": " << json_string(info.agent) << ",\n"
    << "  \"own_agent\": " << (info.own_agent ? "true" : "false") << ",\n"
    << "  \"backend\": " << json_string(info.backend) << ",\n"
    << "  \"stripes\": " << info.stripes << ",\n"
    << "  \"stripe_min_bytes\": " << info.stripe_min_bytes << ",\n"
    << "  \"send_zc_bytes\": " << info.send_zc_bytes << ",\n"
    << "  \"quick\": " << (info.quick ? "true" : "false") << ",\n"
    << "  \"min_time\": " << json_number(info.min_time) << ",\n"
    << "  \"max_size\": " << info.max_size << ",\n"
    << "  \"threads\": " << info.threads << ",\n"
    << "  \"handover_message_bytes\": " << info.handover_message_bytes << ",\n"
    << "  \"figures\": [\n";
  for (std::size_t i = 0; i < figures_.size(); ++i) {
    const Figure& f = figures_[i];
    o << "    {\"name\": " << json_string(f.name) << ", \"label\": " << json_string(f.label)
      << ", \"size\": " << f.size << ", \"value\": " << json_number(f.value)
      << ", \"unit\": " << json_string(f.unit) << ", \"items\": " << f.items
      << ", \"seconds\": " << json_number(f.seconds) << ", \"detail\": " << json_string(f.detail)
      << ",\n     \"counters\": ";
    write_counters(o, f.counters, "     ");
    o << "}" << (i + 1 < figures_.size() ? "," : "") << "\n";
  }
  o << "  ],\n  \"counters\": ";
  write_counters(o, totals, "  ");
  o << "\n}\n";
  std::ofstream file(path, std::ios::trunc);
  file << o.str();
  file.close();
  if (!file) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace rig::bench

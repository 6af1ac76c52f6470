#include "report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

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

void write_counters(std::ostream& o, const CounterSnapshot& c, const char* indent) {
  o << "{\n"
    << indent << "  \"bytes_sent\": " << c.bytes_sent << ",\n"
    << indent << "  \"messages_sent\": " << c.messages_sent << ",\n"
    << indent << "  \"send_calls\": " << c.send_calls << ",\n"
    << indent << "  \"bytes_staged\": " << c.bytes_staged << ",\n"
    << indent << "  \"zc_sends\": " << c.zc_sends << ",\n"
    << indent << "  \"zc_copied\": " << c.zc_copied << ",\n"
    << indent << "  \"bytes_received\": " << c.bytes_received << ",\n"
    << indent << "  \"messages_received\": " << c.messages_received << ",\n"
    << indent << "  \"payload_bytes_copied\": " << c.payload_bytes_copied << ",\n"
    << indent << "  \"payload_bytes_direct\": " << c.payload_bytes_direct << ",\n"
    << indent << "  \"bytes_striped_out\": " << c.bytes_striped_out << ",\n"
    << indent << "  \"bytes_striped_in\": " << c.bytes_striped_in << "\n"
    << indent << "}";
}

}  // namespace

CounterSnapshot CounterSnapshot::of(const engine::Counters& c) {
  // relaxed: statistics only (the counters order nothing).
  constexpr auto r = std::memory_order_relaxed;
  CounterSnapshot s;
  s.bytes_sent = c.bytes_sent.load(r);
  s.messages_sent = c.messages_sent.load(r);
  s.send_calls = c.send_calls.load(r);
  s.bytes_staged = c.bytes_staged.load(r);
  s.zc_sends = c.zc_sends.load(r);
  s.zc_copied = c.zc_copied.load(r);
  s.bytes_received = c.bytes_received.load(r);
  s.messages_received = c.messages_received.load(r);
  s.payload_bytes_copied = c.payload_bytes_copied.load(r);
  s.payload_bytes_direct = c.payload_bytes_direct.load(r);
  s.bytes_striped_out = c.bytes_striped_out.load(r);
  s.bytes_striped_in = c.bytes_striped_in.load(r);
  return s;
}

CounterSnapshot CounterSnapshot::operator-(const CounterSnapshot& e) const {
  CounterSnapshot d;
  d.bytes_sent = bytes_sent - e.bytes_sent;
  d.messages_sent = messages_sent - e.messages_sent;
  d.send_calls = send_calls - e.send_calls;
  d.bytes_staged = bytes_staged - e.bytes_staged;
  d.zc_sends = zc_sends - e.zc_sends;
  d.zc_copied = zc_copied - e.zc_copied;
  d.bytes_received = bytes_received - e.bytes_received;
  d.messages_received = messages_received - e.messages_received;
  d.payload_bytes_copied = payload_bytes_copied - e.payload_bytes_copied;
  d.payload_bytes_direct = payload_bytes_direct - e.payload_bytes_direct;
  d.bytes_striped_out = bytes_striped_out - e.bytes_striped_out;
  d.bytes_striped_in = bytes_striped_in - e.bytes_striped_in;
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

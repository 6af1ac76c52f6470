// rig-demo: the main job. Connects to a rig-agent, drives its devices through proxies the way
// the runtime would, checks every byte that comes back, and prints what it did with figures.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/proxy.h"

namespace {

using clock_type = std::chrono::steady_clock;
using rig::harness::Driven;
using rig::harness::Work;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void fill_random(std::vector<std::byte>& v, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i + 8 <= v.size(); i += 8) {
    const std::uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
}

void print_accounts(const std::string& agent, rig::remote::Link& link) {
  std::printf("connected to agent %s over %s; it opened %zu devices:\n", agent.c_str(), link.backend(),
              link.accounts().size());
  for (const auto& a : link.accounts()) {
    std::printf("  device %u  %-6s arch %-7s budget %8.1f MiB  reaches 0x%llx\n", a.id, a.name.c_str(),
                a.arch.c_str(), static_cast<double>(a.budget) / (1 << 20), static_cast<unsigned long long>(a.reaches));
  }
}

// `rounds` bulk copies each way between `up`/`down` and the device (through a copy on the
// device, `from` to `to`), after a warm-up; prints the figures; whether the bytes came back exact.
bool bulk_copies(Driven& dev, const rig::remote::Region& from, const rig::remote::Region& to,
                 std::vector<std::byte>& up, std::vector<std::byte>& down, int rounds) {
  const std::uint64_t bytes = up.size();
  {  // warm-up: the first copies touch the agent's fresh pages and the sockets' buffers
    Work w;
    w.to_device(up.data(), from, 0, bytes).to_host(from, 0, down.data(), bytes);
    Work w2;
    w2.to_device(up.data(), to, 0, bytes);
    dev.run(w);
    dev.wait(dev.run(w2));
  }
  // Host to device.
  auto t0 = clock_type::now();
  std::uint64_t last = 0;
  for (int r = 0; r < rounds; ++r) {
    Work w;
    w.to_device(up.data(), from, 0, bytes);
    last = dev.run(w);
  }
  dev.wait(last);
  const double h2d = static_cast<double>(bytes) * rounds / seconds_since(t0) / 1e9;
  // Device to device on the agent, then device to host.
  Work d2d;
  d2d.between(from, 0, to, 0, bytes);
  dev.wait(dev.run(d2d));
  t0 = clock_type::now();
  for (int r = 0; r < rounds; ++r) {
    Work w;
    w.to_host(to, 0, down.data(), bytes);
    last = dev.run(w);
  }
  dev.wait(last);
  const double d2h = static_cast<double>(bytes) * rounds / seconds_since(t0) / 1e9;
  const bool exact = std::memcmp(up.data(), down.data(), bytes) == 0;
  std::printf("copies of %llu MiB: host->device %.2f GB/s, device->host %.2f GB/s, bytes %s\n",
              static_cast<unsigned long long>(bytes >> 20), h2d, d2h, exact ? "exact" : "DIFFER");
  return exact;
}

// `tiny` 64-byte copies back from `region`, one at a time (round trips), then pipelined; prints
// the figures; whether the bytes are the first 64 of `expected`.
bool tiny_handovers(Driven& dev, const rig::remote::Region& region, const std::vector<std::byte>& expected, int tiny) {
  std::vector<double> rtt;
  rtt.reserve(static_cast<std::size_t>(tiny));
  std::byte small[64];
  for (int i = 0; i < tiny; ++i) {
    Work w;
    w.to_host(region, 0, small, sizeof small);
    const auto t = clock_type::now();
    dev.wait(dev.run(w));
    rtt.push_back(seconds_since(t) * 1e6);
  }
  std::sort(rtt.begin(), rtt.end());
  const bool exact = std::memcmp(small, expected.data(), sizeof small) == 0;
  // Pipelined: submit many, wait for the last.
  const auto t0 = clock_type::now();
  std::uint64_t last = 0;
  for (int i = 0; i < tiny; ++i) {
    Work w;
    w.to_host(region, 0, small, sizeof small);
    last = dev.run(w);
  }
  dev.wait(last);
  const double rate = tiny / seconds_since(t0);
  if (!rtt.empty()) {
    std::printf("tiny handover (64 B back): round trip p50 %.1f us, p99 %.1f us; pipelined %.0f handovers/s; bytes %s\n",
                rtt[rtt.size() / 2], rtt[rtt.size() * 99 / 100], rate, exact ? "exact" : "DIFFER");
  }
  return exact;
}

void print_counters(const rig::remote::Link& link) {
  const rig::remote::LinkCounters c = link.counters();
  std::printf("link: %.1f MiB sent, %.1f MiB received, %llu messages, payload copied in user space %llu B, received in place %.1f MiB\n",
              static_cast<double>(c.bytes_sent) / (1 << 20), static_cast<double>(c.bytes_received) / (1 << 20),
              static_cast<unsigned long long>(c.messages_sent + c.messages_received),
              static_cast<unsigned long long>(c.payload_bytes_copied),
              static_cast<double>(c.payload_bytes_direct) / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rig-demo: drives a rig-agent's devices through proxies and prints figures"};
  std::string agent;
  std::uint64_t mib = 64;
  int rounds = 3;
  int tiny = 2000;
  app.add_option("--agent", agent, "HOST:PORT of a running rig-agent")->required();
  app.add_option("--mib", mib, "MiB per bulk copy")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--rounds", rounds, "bulk copies each way")->capture_default_str()->check(CLI::Range(1, 1000));
  std::string secret_file;
  app.add_option("--secret-file", secret_file,
                 "the secret shared with the agent (default: RIG_SECRET_FILE, else RIG_SECRET)");
  app.add_option("--tiny", tiny, "tiny handovers for the round-trip figures")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    auto job = rig::remote::Job::create();
    rig::remote::LinkOptions options;
    options.secret_file = secret_file;
    rig::remote::Link& link = job->connect(agent, options);
    print_accounts(agent, link);
    if (link.accounts().size() < 2) {
      std::fprintf(stderr, "rig-demo: the agent opened no simulated device\n");
      return 1;
    }
    Driven dev(link, 1);
    const std::uint64_t bytes = mib << 20;
    auto region = dev->alloc(rig::edge::Memory::kDevice, bytes);
    auto region2 = dev->alloc(rig::edge::Memory::kDevice, bytes);
    if (!region || !region2) {
      std::fprintf(stderr, "rig-demo: the agent refused %llu MiB on %s\n",
                   static_cast<unsigned long long>(mib), dev->name().c_str());
      return 1;
    }
    std::printf("proxy %s: allocated 2 x %llu MiB (objects %llu, %llu)\n", dev->name().c_str(),
                static_cast<unsigned long long>(mib), static_cast<unsigned long long>(region->id),
                static_cast<unsigned long long>(region2->id));

    std::vector<std::byte> up(bytes), down(bytes);
    fill_random(up, 42);
    const bool exact = bulk_copies(dev, *region, *region2, up, down, rounds);
    // Tiny handovers: a 64-byte copy back, round trip from submit to the word.
    const bool small_exact = tiny_handovers(dev, *region, up, tiny);
    print_counters(link);
    dev->free(*region);
    dev->free(*region2);
    dev.stop();
    job->close();
    std::printf("closed the job: proxy %s stopped at value %llu\n", dev->name().c_str(),
                static_cast<unsigned long long>(dev->signaled()));
    return exact && small_exact ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rig-demo: %s\n", e.what());
    return 1;
  }
}

#include "handover_bench.h"

#include <algorithm>
#include <barrier>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "close_on_error.h"
#include "pattern.h"
#include "progress.h"
#include "timing.h"

namespace rig::bench {
namespace {

using harness::Driven;
using harness::Work;

// One pipelining thread's proxy: its region holds `pattern[0..region_bytes)`.
struct Lane {
  Driven* dev = nullptr;
  remote::Region region{};
  std::uint64_t region_bytes = 0;
  const std::byte* pattern = nullptr;
};

// Submits `n` tiny handovers back to back, handover i copying the region's slot (first + i) into
// dst[i], and waits for the last value. Then checks every copy.
void pipelined_batch(const Lane& lane, const Settings& s, std::uint64_t first, std::uint32_t n,
                     std::byte* dst) {
  const std::uint64_t slots = lane.region_bytes / s.tiny_bytes;
  std::uint64_t last = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    Work w;
    w.to_host(lane.region, ((first + i) % slots) * s.tiny_bytes, dst + i * s.tiny_bytes, s.tiny_bytes);
    last = lane.dev->run(w);
  }
  lane.dev->wait(last);
}

void check_batch(const Lane& lane, const Settings& s, std::uint64_t first, std::uint32_t n,
                 const std::byte* dst) {
  const std::uint64_t slots = lane.region_bytes / s.tiny_bytes;
  for (std::uint32_t i = 0; i < n; ++i) {
    expect_bytes(dst + i * s.tiny_bytes, lane.pattern + ((first + i) % slots) * s.tiny_bytes, s.tiny_bytes,
                 "a pipelined tiny handover on " + lane.dev->proxy().name());
  }
}

void round_trip(Fixture& fx, const Settings& s, Report& report) {
  const std::uint64_t slots = fx.bytes() / s.tiny_bytes;
  auto small = std::make_unique<std::byte[]>(s.tiny_bytes);
  std::vector<double> us;
  us.reserve(s.rtt_count);
  const std::uint32_t warmup = std::min<std::uint32_t>(200, s.rtt_count);
  const CounterSnapshot c0 = CounterSnapshot::of(fx.link().counters());
  CostMeter meter(fx.link(), fx.agent_watch());  // over the timed round trips, not the warm-up
  double total = 0;
  for (std::uint32_t i = 0; i < warmup + s.rtt_count; ++i) {
    if (i == warmup) {
      meter.begin();
      meter.caller_start();
    }
    const std::uint64_t off = (i * 7919ull % slots) * s.tiny_bytes;  // a different slot each time
    poison({small.get(), s.tiny_bytes});
    Work w;
    w.to_host(fx.a(), off, small.get(), s.tiny_bytes);
    const auto t0 = Clock::now();
    fx.dev().wait(fx.dev().run(w));
    const double dt = seconds_between(t0, Clock::now());
    expect_bytes(small.get(), fx.pattern() + off, s.tiny_bytes, "a tiny handover's copy");
    if (i >= warmup) {
      us.push_back(dt * 1e6);
      total += dt;
    }
  }
  meter.caller_stop();
  meter.end();
  const CounterSnapshot counters = CounterSnapshot::of(fx.link().counters()) - c0;
  const double p50 = percentile(us, 50), p99 = percentile(us, 99);
  const std::string detail = "submit to word seen, one at a time, " + std::to_string(warmup) + " warm-up";
  const Costs costs = meter.costs("handover", s.rtt_count);
  report.add(Figure{"handover_rtt_p50", "tiny handover round trip p50", s.tiny_bytes, p50, "us", s.rtt_count,
                    total, detail, counters, costs});
  report.add(Figure{"handover_rtt_p99", "tiny handover round trip p99", s.tiny_bytes, p99, "us", s.rtt_count,
                    total, detail, counters, costs});
  progress("tiny handover round trip: p50 %.1f us, p99 %.1f us over %u", p50, p99, s.rtt_count);
}

void pipelined_one_thread(Fixture& fx, const Settings& s, Report& report) {
  const Lane lane{&fx.dev(), fx.a(), fx.bytes(), fx.pattern()};
  auto dst = std::make_unique<std::byte[]>(std::uint64_t{s.pipeline} * s.tiny_bytes);
  std::uint64_t first = 0;
  pipelined_batch(lane, s, first, std::min<std::uint32_t>(s.pipeline, 256), dst.get());  // warm-up
  CostMeter meter(fx.link(), fx.agent_watch());
  meter.begin();
  const CounterSnapshot c0 = CounterSnapshot::of(fx.link().counters());
  const Timed t = repeat_timed(
      s.min_time, 1,
      [&] {
        poison({dst.get(), std::uint64_t{s.pipeline} * s.tiny_bytes});
        meter.caller_start();
      },
      [&] {
        pipelined_batch(lane, s, first, s.pipeline, dst.get());
        return s.pipeline;
      },
      [&] {
        meter.caller_stop();
        check_batch(lane, s, first, s.pipeline, dst.get());
        first += s.pipeline;
      });
  Figure f{"handover_rate_1", "tiny handovers pipelined, 1 thread", s.tiny_bytes, t.per_second(), "msg/s",
           t.items, t.seconds};
  f.detail = std::to_string(s.pipeline) + " submitted per batch, then wait for the last";
  f.counters = CounterSnapshot::of(fx.link().counters()) - c0;
  meter.end();
  f.costs = meter.costs("handover", static_cast<double>(t.items));
  progress("%s: %.0f msg/s", f.label.c_str(), f.value);
  report.add(std::move(f));
}

void pipelined_threads(Fixture& fx, const Settings& s, Report& report) {
  remote::Link& link = fx.link();
  const auto devices = static_cast<std::uint32_t>(link.accounts().size() - 1);  // account 0: the host
  const std::uint32_t n = std::min(s.threads, devices);
  if (n < s.threads) {
    progress("the agent opened %u devices: the threaded figure uses %u threads, not %u", devices, n, s.threads);
  }
  if (n < 2) return;

  // Lane 0 is the fixture's proxy; each other lane makes a proxy of device t + 1 with a region
  // holding the start of the pattern.
  constexpr std::uint64_t kLaneBytes = 1 * kMiB;
  std::vector<std::unique_ptr<Driven>> extra;
  std::vector<Lane> lanes{Lane{&fx.dev(), fx.a(), fx.bytes(), fx.pattern()}};
  CloseOnError close_on_error(link.job());
  for (std::uint32_t t = 1; t < n; ++t) {
    extra.push_back(std::make_unique<Driven>(link, t + 1));
    Driven& d = *extra.back();
    auto r = d->alloc(edge::Memory::kDevice, kLaneBytes);
    if (!r) throw std::runtime_error("the agent refused " + size_text(kLaneBytes) + " on " + d->name());
    Work w;
    w.to_device(fx.pattern(), *r, 0, kLaneBytes);
    d.wait(d.run(w));
    lanes.push_back(Lane{&d, *r, kLaneBytes, fx.pattern()});
  }

  struct Result {
    std::uint64_t items = 0;
    Clock::time_point end;
    std::exception_ptr error;
  };
  std::vector<Result> results(n);
  std::barrier start(static_cast<std::ptrdiff_t>(n) + 1);
  Clock::time_point t0, deadline;
  CostMeter meter(link, fx.agent_watch());  // each thread adds its own usage; the main thread waits
  meter.begin();
  const CounterSnapshot c0 = CounterSnapshot::of(link.counters());
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      Result& r = results[t];
      auto dst = std::make_unique<std::byte[]>(std::uint64_t{s.pipeline} * s.tiny_bytes);
      start.arrive_and_wait();  // t0 and deadline are set before the main thread arrives
      try {
        const engine::TaskUsage u0 = engine::this_thread_usage();
        std::uint64_t first = 0;
        do {
          poison({dst.get(), std::uint64_t{s.pipeline} * s.tiny_bytes});
          pipelined_batch(lanes[t], s, first, s.pipeline, dst.get());
          check_batch(lanes[t], s, first, s.pipeline, dst.get());
          first += s.pipeline;
          r.items += s.pipeline;
        } while (Clock::now() < deadline);
        meter.add_since(u0);
      } catch (...) {
        r.error = std::current_exception();
      }
      r.end = Clock::now();
    });
  }
  t0 = Clock::now();
  deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.min_time));
  start.arrive_and_wait();
  for (auto& th : threads) th.join();
  for (const Result& r : results) {
    if (r.error) std::rethrow_exception(r.error);
  }
  std::uint64_t items = 0;
  Clock::time_point end = t0;
  std::string per_thread;
  for (const Result& r : results) {
    items += r.items;
    end = std::max(end, r.end);
    per_thread += (per_thread.empty() ? "" : ", ") +
                  std::to_string(static_cast<long long>(static_cast<double>(r.items) / seconds_between(t0, r.end)));
  }
  const double seconds = seconds_between(t0, end);
  Figure f{"handover_rate_threads", "tiny handovers pipelined, " + std::to_string(n) + " threads",
           s.tiny_bytes, static_cast<double>(items) / seconds, "msg/s", items, seconds};
  f.detail = "one proxy (device) per thread, combined; per thread msg/s: " + per_thread;
  f.counters = CounterSnapshot::of(link.counters()) - c0;
  meter.end();
  f.costs = meter.costs("handover", static_cast<double>(items));
  progress("%s: %.0f msg/s (%s)", f.label.c_str(), f.value, per_thread.c_str());
  report.add(std::move(f));
  for (std::uint32_t t = 1; t < n; ++t) extra[t - 1]->proxy().free(lanes[t].region);
}

}  // namespace

void bench_handovers(Fixture& fx, const Settings& s, Report& report) {
  if (!s.handovers) return;
  round_trip(fx, s, report);
  pipelined_one_thread(fx, s, report);
  pipelined_threads(fx, s, report);
}

}  // namespace rig::bench

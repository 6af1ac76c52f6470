#include "copy_bench.h"

#include <algorithm>
#include <functional>

#include "pattern.h"
#include "progress.h"
#include "timing.h"

namespace rig::bench {
namespace {

using harness::host_side;
using harness::region_side;
using harness::Work;

// Times batches of `per_batch` copies of `bytes` each; `submit(i)` submits copy i of a batch and
// returns its value. Fills the figure's value (GB/s), items, seconds and counters.
void time_copies(Fixture& fx, const Settings& s, Figure& f, std::uint64_t bytes, std::uint64_t per_batch,
                 const std::function<void()>& before, const std::function<std::uint64_t(std::uint64_t)>& submit,
                 const std::function<void()>& after) {
  // The costs count the submitting thread over its timed batches only (not its poisoning and
  // checks), the other threads over the whole figure (they are idle between batches).
  CostMeter meter(fx.link(), fx.agent_watch());
  meter.begin();
  const CounterSnapshot c0 = CounterSnapshot::of(fx.link().counters());
  const Timed t = repeat_timed(
      s.min_time, 1,
      [&] {
        before();
        meter.caller_start();
      },
      [&] {
        std::uint64_t last = 0;
        for (std::uint64_t i = 0; i < per_batch; ++i) last = submit(i);
        fx.dev().wait(last);
        return per_batch;
      },
      [&] {
        meter.caller_stop();
        after();
      });
  f.counters = CounterSnapshot::of(fx.link().counters()) - c0;
  meter.end();
  f.costs = meter.costs("GiB", static_cast<double>(t.items) * static_cast<double>(bytes) / double(1ull << 30));
  f.items = t.items;
  f.seconds = t.seconds;
  f.unit = "GB/s";
  f.value = static_cast<double>(t.items) * static_cast<double>(bytes) / t.seconds / 1e9;
  progress("%-26s %9s  %8.3f GB/s  (%llu copies, %.2f s)", f.label.c_str(), size_text(f.size).c_str(),
           f.value, static_cast<unsigned long long>(f.items), f.seconds);
}

std::uint64_t copies_per_batch(const Settings& s, std::uint64_t bytes) {
  return std::max<std::uint64_t>(1, s.batch_bytes / bytes);
}

std::string batch_detail(std::uint64_t per_batch) {
  return per_batch == 1 ? "one copy per batch" : std::to_string(per_batch) + " copies pipelined per batch";
}

// Copies host -> device of `size`: copy i of a batch writes pattern[i*size..) to B at the same
// offset. B is scrambled first; after the timed batches it is read back and checked.
Figure host_to_device(Fixture& fx, const Settings& s, std::uint64_t size) {
  Figure f{"h2d", "host -> device", size};
  const std::uint64_t k = copies_per_batch(s, size);
  f.detail = batch_detail(k);
  fx.upload(fx.pattern(), fx.b(), 0, size);  // warm-up, untimed
  fx.scramble_b();
  time_copies(
      fx, s, f, size, k, [] {},
      [&](std::uint64_t i) {
        Work w;
        w.to_device(fx.pattern() + i * size, fx.b(), i * size, size);
        return fx.dev().run(w);
      },
      [] {});
  fx.download(fx.b(), 0, fx.scratch(), k * size);
  expect_bytes(fx.scratch(), fx.pattern(), k * size, "host -> device copies of " + size_text(size));
  return f;
}

// Copies device -> host of `size`: copy i of a batch reads A at i*size into scratch at i*size.
// Scratch is poisoned before each batch and checked after it, with the byte past the batch.
Figure device_to_host(Fixture& fx, const Settings& s, std::uint64_t size) {
  Figure f{"d2h", "device -> host", size};
  const std::uint64_t k = copies_per_batch(s, size);
  const std::uint64_t span = k * size;
  const std::uint64_t guard = std::min<std::uint64_t>(64, fx.bytes() - span);
  f.detail = batch_detail(k);
  fx.download(fx.a(), 0, fx.scratch(), size);  // warm-up, untimed
  const std::string what = "device -> host copies of " + size_text(size);
  time_copies(
      fx, s, f, size, k, [&] { poison({fx.scratch(), span + guard}); },
      [&](std::uint64_t i) {
        Work w;
        w.to_host(fx.a(), i * size, fx.scratch() + i * size, size);
        return fx.dev().run(w);
      },
      [&] {
        expect_bytes(fx.scratch(), fx.pattern(), span, what);
        expect_poison(fx.scratch() + span, guard, what);
      });
  return f;
}

rig_copy strided(const Settings& s, rig_side src, rig_side dst) {
  return rig_copy{src, dst, s.strided_bytes / s.row_bytes, s.row_bytes, s.pitch, s.pitch};
}

std::string strided_detail(const Settings& s) {
  return std::to_string(s.strided_bytes / s.row_bytes) + " rows of " + size_text(s.row_bytes) +
         ", pitch " + size_text(s.pitch) + " on both sides";
}

// Rows of the pattern at the pitch into the same rows of B; B's gaps must keep their scramble.
Figure strided_to_device(Fixture& fx, const Settings& s) {
  Figure f{"h2d_strided", "host -> device, strided", s.strided_bytes};
  f.detail = strided_detail(s);
  const rig_copy c = strided(s, host_side(fx.pattern()), region_side(fx.b(), 0));
  fx.scramble_b();
  time_copies(
      fx, s, f, s.strided_bytes, 1, [] {},
      [&](std::uint64_t) {
        Work w;
        w.copy(c);
        return fx.dev().run(w);
      },
      [] {});
  const std::uint64_t span = s.strided_span();
  fx.download(fx.b(), 0, fx.scratch(), span);
  const std::string what = "strided host -> device copies";
  for (std::uint64_t at = 0; at < span; at += s.pitch) {
    expect_bytes(fx.scratch() + at, fx.pattern() + at, s.row_bytes, what);
    const std::uint64_t gap = std::min(s.pitch, span - at) - s.row_bytes;
    expect_bytes(fx.scratch() + at + s.row_bytes, fx.pattern() + at + s.row_bytes + Fixture::kRotation, gap,
                 what + " (a gap between rows changed)");
  }
  return f;
}

// Rows of A at the pitch into the same rows of scratch; the gaps must stay poisoned.
Figure strided_to_host(Fixture& fx, const Settings& s) {
  Figure f{"d2h_strided", "device -> host, strided", s.strided_bytes};
  f.detail = strided_detail(s);
  const std::uint64_t span = s.strided_span();
  const rig_copy c = strided(s, region_side(fx.a(), 0), host_side(fx.scratch()));
  const std::string what = "strided device -> host copies";
  time_copies(
      fx, s, f, s.strided_bytes, 1, [&] { poison({fx.scratch(), span}); },
      [&](std::uint64_t) {
        Work w;
        w.copy(c);
        return fx.dev().run(w);
      },
      [&] {
        for (std::uint64_t at = 0; at < span; at += s.pitch) {
          expect_bytes(fx.scratch() + at, fx.pattern() + at, s.row_bytes, what);
          expect_poison(fx.scratch() + at + s.row_bytes, std::min(s.pitch, span - at) - s.row_bytes, what);
        }
      });
  return f;
}

// A -> B on the agent's device; B is scrambled first, read back and checked after.
Figure device_to_device(Fixture& fx, const Settings& s) {
  const std::uint64_t bytes = std::min(s.d2d_bytes, fx.bytes());
  Figure f{"d2d", "device -> device (on the agent)", bytes};
  const std::uint64_t k = copies_per_batch(s, bytes);
  f.detail = batch_detail(k) + ", same device";
  fx.scramble_b();
  time_copies(
      fx, s, f, bytes, k, [] {},
      [&](std::uint64_t) {
        Work w;
        w.between(fx.a(), 0, fx.b(), 0, bytes);
        return fx.dev().run(w);
      },
      [] {});
  fx.download(fx.b(), 0, fx.scratch(), bytes);
  expect_bytes(fx.scratch(), fx.pattern(), bytes, "device -> device copies");
  return f;
}

}  // namespace

void bench_copies(Fixture& fx, const Settings& s, Report& report) {
  if (s.h2d) {
    for (const std::uint64_t size : s.sizes()) report.add(host_to_device(fx, s, size));
  }
  if (s.d2h) {
    for (const std::uint64_t size : s.sizes()) report.add(device_to_host(fx, s, size));
  }
  if (s.strided) {
    report.add(strided_to_device(fx, s));
    report.add(strided_to_host(fx, s));
  }
  if (s.d2d) report.add(device_to_device(fx, s));
}

}  // namespace rig::bench

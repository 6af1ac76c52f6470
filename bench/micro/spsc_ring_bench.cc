// engine::SpscRing: push + pop by one thread (the cost of the operations alone), and items moved
// from a producer (the benchmark's thread) to a consumer thread.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "rig/engine/spsc_ring.h"

namespace {

using rig::engine::SpscRing;

void BM_SpscRingPushPop(benchmark::State& state) {
  SpscRing<std::uint64_t> ring(1024);
  std::uint64_t i = 0;
  for (auto _ : state) {
    ring.claim() = ++i;
    ring.publish();
    benchmark::DoNotOptimize(ring.front());
    ring.pop();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpscRingPushPop);

// Arg: the ring's capacity.
void BM_SpscRingTransfer(benchmark::State& state) {
  SpscRing<std::uint64_t> ring(static_cast<std::size_t>(state.range(0)));
  std::atomic<bool> done{false};
  std::uint64_t consumed_sum = 0;
  std::thread consumer([&] {
    std::uint64_t sum = 0;
    for (;;) {
      if (ring.empty()) {
        // acquire: pairs with the producer's release store; read after the ring is seen empty.
        if (done.load(std::memory_order_acquire) && ring.empty()) break;
        std::this_thread::yield();
        continue;
      }
      sum += ring.front();
      ring.pop();
    }
    consumed_sum = sum;
  });
  std::uint64_t i = 0, produced_sum = 0;
  for (auto _ : state) {
    while (ring.free_slots() == 0) std::this_thread::yield();
    ring.claim() = ++i;
    ring.publish();
    produced_sum += i;
  }
  done.store(true, std::memory_order_release);  // after the last publish
  consumer.join();
  if (consumed_sum != produced_sum) state.SkipWithError("the consumer lost items");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpscRingTransfer)->Arg(64)->Arg(1024)->UseRealTime();

}  // namespace

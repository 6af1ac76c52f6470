// The send turn of a connection (engine::SendTurn): take + pass by one thread alone, and by
// several threads contending for one turn (each holds it for a trivial critical section).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "rig/engine/send_turn.h"

namespace {

using rig::engine::SendTurn;
using rig::engine::TurnGuard;

void BM_SendTurnUncontended(benchmark::State& state) {
  SendTurn turn;
  std::uint64_t held = 0;
  for (auto _ : state) {
    TurnGuard guard(turn);
    benchmark::DoNotOptimize(++held);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SendTurnUncontended);

// One turn shared by the benchmark's threads; `held` is written only while holding it.
SendTurn g_turn;
std::uint64_t g_held = 0;

void BM_SendTurnContended(benchmark::State& state) {
  for (auto _ : state) {
    TurnGuard guard(g_turn);
    benchmark::DoNotOptimize(++g_held);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SendTurnContended)->Threads(2)->Threads(4)->UseRealTime();

}  // namespace

// The Device conformance suite: what the executor relies on from every device backend (memory
// and its budget, copies in, out, within and between devices with strided rows, peer mappings,
// facts, completion of values), run against each backend the agent has: the machine's host,
// the simulated devices, the simulated devices that report completion later, and the machine's
// GPUs (CUDA) where it has them: there they skip, saying why not ("skipped: no GPU (...)").
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "devices/device.h"
#include "devices/gpu_devices.h"
#include "emulated_cuda.h"
#include "job/accounts.h"
#include "process/config.h"
#include "random_bytes.h"

namespace rig::agent {
namespace {

struct Backend {
  const char* name;
  SimCompletion completion;
  std::uint32_t under_test;  // which device of the set the suite drives
  std::uint32_t other;       // another device of the same agent, for copies and mappings between them
  DeviceKind kind = DeviceKind::kSim;
};

constexpr std::uint64_t kBudget = 1 << 20;

class DeviceConformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    AgentConfig config;
    config.devices = 2;
    config.device_budget = kBudget;
    config.host_budget = kBudget;
    config.sim_completion = GetParam().completion;
    config.device_kind = GetParam().kind;
    if (config.device_kind == DeviceKind::kCuda) {
#if defined(RIG_TSAN)
      // The emulated driver's threads are instrumented like the agent's: it runs here too.
      if (!test::emulated_cuda()) {
        GTEST_SKIP() << "skipped: the CUDA tests run in the normal build only (ThreadSanitizer sees neither "
                        "the driver's threads nor DMA)";
      }
#endif
      std::uint32_t gpus = 0;
      if (const wire::Outcome found = gpu_count(gpus); !found.ok()) {
        GTEST_SKIP() << "skipped: no GPU (" << found.why() << ")";
      }
      if (gpus < GetParam().other) GTEST_SKIP() << "skipped: one GPU (the test copies between two)";
    }
    devices_ = open_devices(config);
    ASSERT_LT(GetParam().under_test, devices_.size());
    ASSERT_LT(GetParam().other, devices_.size());
  }
  DeviceBackend& dut() { return *devices_[GetParam().under_test]; }
  // Another device of the same agent (for copies and mappings between devices).
  DeviceBackend& other() { return *devices_[GetParam().other]; }

  // Closes `value` on d and waits (polling, bounded) until d reports it done; false if it never does.
  static bool finish(DeviceBackend& d, std::uint64_t value) {
    if (d.finish(value) == Completion::kDone) return true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<std::uint64_t> done;
    std::string why;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!wire::passed(d.poll(done), why)) return false;
      for (std::uint64_t v : done) {
        if (v == value) return true;
      }
      std::this_thread::yield();
    }
    return false;
  }
  // The packed bytes of `shape` rows at `place`, read through the device's own copy_out.
  std::vector<std::byte> read(DeviceBackend& d, const Place& place, Shape shape) {
    std::vector<std::byte> out(shape.rows * shape.row_bytes);
    std::string why;
    EXPECT_TRUE(wire::passed(d.copy_out(out.data(), place, shape), why)) << why;
    EXPECT_TRUE(finish(d, ++value_));
    return out;
  }
  void write(DeviceBackend& d, const Place& place, Shape shape, const std::vector<std::byte>& packed) {
    std::string why;
    ASSERT_TRUE(wire::passed(d.copy_in(place, packed.data(), shape), why)) << why;
    ASSERT_TRUE(finish(d, ++value_));
  }

  std::vector<std::unique_ptr<DeviceBackend>> devices_;
  std::uint64_t value_ = 0;
};

TEST_P(DeviceConformance, FactsAreTheAccountItsIdNamesAndTheBudgetIsWhollyFreeAtOpen) {
  EXPECT_EQ(dut().id(), GetParam().under_test);
  EXPECT_EQ(dut().account().id, GetParam().under_test);
  EXPECT_FALSE(wire::fixed_string(dut().account().name).empty());
  EXPECT_FALSE(wire::fixed_string(dut().account().arch).empty());
  EXPECT_EQ(dut().account().budget, kBudget);
  EXPECT_EQ(dut().budget_left(), kBudget);
  EXPECT_EQ(dut().runs_words(), dut().id() == 0);  // only the machine's host runs words
  EXPECT_EQ((dut().account().reaches >> dut().id()) & 1, 1u);  // its own memory
}

TEST_P(DeviceConformance, AllocationsChargeTheBudgetAndGiveItBackWhenTheLastHolderLetsGo) {
  auto a = dut().allocate(4096);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes(), 4096u);
  EXPECT_EQ(a->device(), dut().id());
  EXPECT_EQ(dut().budget_left(), kBudget - 4096);
  std::shared_ptr<Memory> holder = a;  // pending work holds memory too
  a.reset();
  EXPECT_EQ(dut().budget_left(), kBudget - 4096);
  holder.reset();
  EXPECT_EQ(dut().budget_left(), kBudget);
}

TEST_P(DeviceConformance, AnAllocationPastTheBudgetIsNoneAndChargesNothing) {
  auto most = dut().allocate(kBudget - 64);
  ASSERT_TRUE(most);
  EXPECT_FALSE(dut().allocate(128));
  EXPECT_EQ(dut().budget_left(), 64u);
  EXPECT_TRUE(dut().allocate(64));
}

TEST_P(DeviceConformance, StridedRowsCopiedInComeOutExactAndTheGapsStayUntouched) {
  auto m = dut().allocate(64 * 100);
  ASSERT_TRUE(m);
  const Shape rows{50, 37};
  const std::vector<std::byte> background(6400, std::byte{0x5a});
  write(dut(), {m.get(), 0, 6400}, {1, 6400}, background);
  const auto packed = test::random_bytes(rows.rows * rows.row_bytes, 11);
  write(dut(), {m.get(), 10, 100}, rows, packed);
  EXPECT_EQ(read(dut(), {m.get(), 10, 100}, rows), packed);
  // Byte by byte: the rows hold the packed bytes in order, everything else its background.
  const auto all = read(dut(), {m.get(), 0, 6400}, {1, 6400});
  for (std::uint64_t k = 0; k < all.size(); ++k) {
    const bool in_row = k >= 10 && (k - 10) / 100 < rows.rows && (k - 10) % 100 < rows.row_bytes;
    const std::byte want = in_row ? packed[((k - 10) / 100) * rows.row_bytes + (k - 10) % 100] : background[k];
    ASSERT_EQ(all[k], want) << "byte " << k;
  }
}

TEST_P(DeviceConformance, CopiesWithinTheDeviceMoveRowsToRowsExact) {
  auto a = dut().allocate(4096), b = dut().allocate(4096);
  ASSERT_TRUE(a && b);
  const auto packed = test::random_bytes(16 * 64, 12);
  write(dut(), {a.get(), 0, 64}, {16, 64}, packed);
  std::string why;
  ASSERT_TRUE(wire::passed(dut().copy({b.get(), 128, 200}, {a.get(), 0, 64}, {16, 64}), why)) << why;
  ASSERT_TRUE(finish(dut(), ++value_));
  EXPECT_EQ(read(dut(), {b.get(), 128, 200}, {16, 64}), packed);
}

TEST_P(DeviceConformance, CopiesBetweenDevicesOfTheAgentLandExactBothWays) {
  if (((dut().account().reaches >> other().id()) & 1) == 0) GTEST_SKIP() << "the devices do not reach each other";
  auto mine = dut().allocate(4096);
  auto theirs = other().allocate(4096);
  ASSERT_TRUE(mine && theirs);
  const auto packed = test::random_bytes(4096, 13);
  write(dut(), {mine.get(), 0, 4096}, {1, 4096}, packed);
  std::string why;
  ASSERT_TRUE(wire::passed(dut().copy({theirs.get(), 0, 4096}, {mine.get(), 0, 4096}, {1, 4096}), why)) << why;
  ASSERT_TRUE(finish(dut(), ++value_));
  EXPECT_EQ(read(other(), {theirs.get(), 0, 4096}, {1, 4096}), packed);
  const auto back = test::random_bytes(4096, 14);
  write(other(), {theirs.get(), 0, 4096}, {1, 4096}, back);
  ASSERT_TRUE(wire::passed(dut().copy({mine.get(), 0, 4096}, {theirs.get(), 0, 4096}, {1, 4096}), why)) << why;
  ASSERT_TRUE(finish(dut(), ++value_));
  EXPECT_EQ(read(dut(), {mine.get(), 0, 4096}, {1, 4096}), back);
}

TEST_P(DeviceConformance, APeerMappingSharesTheBytesOfThePeersMemory) {
  if (((dut().account().reaches >> other().id()) & 1) == 0) GTEST_SKIP() << "the devices do not reach each other";
  auto theirs = other().allocate(4096);
  ASSERT_TRUE(theirs);
  auto mapped = dut().map_peer(theirs);
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->bytes(), theirs->bytes());
  const auto packed = test::random_bytes(4096, 15);
  write(other(), {theirs.get(), 0, 4096}, {1, 4096}, packed);
  EXPECT_EQ(read(dut(), {mapped.get(), 0, 4096}, {1, 4096}), packed);
  const auto back = test::random_bytes(4096, 16);
  write(dut(), {mapped.get(), 0, 4096}, {1, 4096}, back);
  EXPECT_EQ(read(other(), {theirs.get(), 0, 4096}, {1, 4096}), back);
}

TEST_P(DeviceConformance, EveryValueFinishedIsReportedOnceAndInOrder) {
  auto m = dut().allocate(4096);
  ASSERT_TRUE(m);
  std::vector<std::uint64_t> reported;
  std::string why;
  std::vector<std::vector<std::byte>> sources;  // read by the copies until their values are done
  for (std::uint64_t v : {3u, 7u, 8u, 20u}) {
    const auto& packed = sources.emplace_back(test::random_bytes(4096, v));
    ASSERT_TRUE(wire::passed(dut().copy_in({m.get(), 0, 4096}, packed.data(), {1, 4096}), why)) << why;
    if (dut().finish(v) == Completion::kDone) reported.push_back(v);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (reported.size() < 4 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(wire::passed(dut().poll(reported), why)) << why;
    std::this_thread::yield();
  }
  EXPECT_EQ(reported, (std::vector<std::uint64_t>{3, 7, 8, 20}));
  EXPECT_TRUE(dut().idle());
  std::vector<std::uint64_t> more;
  ASSERT_TRUE(wire::passed(dut().poll(more), why));
  EXPECT_TRUE(more.empty()) << "a value reported twice";
}

// Where the device orders its work after another device's finished value by itself (a GPU's
// stream waiting on the other GPU's event), that work sees what the value wrote. The value's
// bytes come from a host object (pinned while the agent has GPUs), so on a GPU its copy runs
// on the stream, after the call returned (on the emulated driver, 200 us later): a missing wait
// reads the bytes from before it. On real GPUs the copy is short and may win the race anyway.
TEST_P(DeviceConformance, WorkOrderedAfterAnotherDevicesFinishedValueSeesWhatThatValueWrote) {
  if (!dut().waits_on(other())) GTEST_SKIP() << "this device orders no work after another's by itself";
  if (((dut().account().reaches >> other().id()) & 1) == 0) GTEST_SKIP() << "the devices do not reach each other";
  const std::uint64_t n = kBudget / 2;
  auto theirs = other().allocate(n), mine = dut().allocate(n), source = devices_[0]->allocate(n);
  ASSERT_TRUE(theirs && mine && source);
  ASSERT_TRUE(finish(dut(), ++value_));  // the fresh memory's zeroing is done on both
  ASSERT_TRUE(finish(other(), ++value_));
  const auto packed = test::random_bytes(n, 18);
  std::copy(packed.begin(), packed.end(), source->host());
  std::string why;
  ASSERT_TRUE(wire::passed(other().copy({theirs.get(), 0, n}, {source.get(), 0, n}, {1, n}), why)) << why;
  const std::uint64_t awaited = ++value_;
  const bool reported = other().finish(awaited) == Completion::kDone;
  dut().wait_on(other(), awaited);
  ASSERT_TRUE(wire::passed(dut().copy({mine.get(), 0, n}, {theirs.get(), 0, n}, {1, n}), why)) << why;
  ASSERT_TRUE(finish(dut(), ++value_));
  EXPECT_EQ(read(dut(), {mine.get(), 0, n}, {1, n}), packed);
  std::vector<std::uint64_t> done;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!reported && done.empty() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(wire::passed(other().poll(done), why)) << why;
  }
  if (!reported) {
    EXPECT_EQ(done, (std::vector<std::uint64_t>{awaited}));
  }
}

// Fresh memory reads zero also to another device's copy of it (a GPU's zeroing runs on its own
// stream: the other GPU's copy waits for it; on the emulated driver the fill takes 200 us).
TEST_P(DeviceConformance, AnotherDevicesCopyOfFreshMemoryReadsZero) {
  if (((dut().account().reaches >> other().id()) & 1) == 0) GTEST_SKIP() << "the devices do not reach each other";
  const std::uint64_t n = 64 << 10;
  auto mine = dut().allocate(n);
  ASSERT_TRUE(mine);
  ASSERT_TRUE(finish(dut(), ++value_));  // its own zeroing done
  auto theirs = other().allocate(n);
  ASSERT_TRUE(theirs);
  std::string why;
  ASSERT_TRUE(wire::passed(dut().copy({mine.get(), 0, n}, {theirs.get(), 0, n}, {1, n}), why)) << why;
  ASSERT_TRUE(finish(dut(), ++value_));
  EXPECT_EQ(read(dut(), {mine.get(), 0, n}, {1, n}), std::vector<std::byte>(n));
}

TEST_P(DeviceConformance, AHostAddressableMemoryShowsTheBytesTheDevicesCopiesWrote) {
  auto m = dut().allocate(4096);
  ASSERT_TRUE(m);
  if (m->host() == nullptr) GTEST_SKIP() << "this device's memory is not host-addressable";
  const auto packed = test::random_bytes(4096, 17);
  write(dut(), {m.get(), 0, 4096}, {1, 4096}, packed);
  EXPECT_EQ(std::vector<std::byte>(m->host(), m->host() + 4096), packed);
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceConformance,
                         ::testing::Values(Backend{"host", SimCompletion::kNow, 0, 1},
                                           Backend{"sim", SimCompletion::kNow, 1, 2},
                                           Backend{"sim_later", SimCompletion::kLater, 1, 2},
                                           // A GPU, with the host's RAM as the other device's
                                           // memory; then a GPU and a second one (peers).
                                           Backend{"cuda", SimCompletion::kNow, 1, 0, DeviceKind::kCuda},
                                           Backend{"cuda_pair", SimCompletion::kNow, 1, 2, DeviceKind::kCuda}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace rig::agent

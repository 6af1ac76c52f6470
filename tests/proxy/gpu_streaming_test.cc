// A large copy into a GPU is copied there range by range as its bytes come (issue 10: "while
// chunk k crosses to the GPU, chunk k+1 is received"), where it may be: the agent runs nothing
// else, and nothing earlier in the handover touches the destination. A large copy out of a GPU
// is sent range by range, each range once its copy out completed ("device to host the
// reverse"). The agent's status says how many bytes went so (`job.bytes_streamed`,
// `job.bytes_streamed_out`). Runs where the agent's devices are GPUs
// (RIG_TEST_DEVICES=cuda: ctest's proxy_tests_emulated_cuda, or scripts/gpu-check on a GPU
// host); elsewhere it skips, saying why.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "emulated_cuda.h"
#include "fixture.h"
#include "random_bytes.h"
#include "test_connect.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"
#include "run_and_wait.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using remote::Job;

constexpr std::uint64_t kBytes = 16u << 20;  // four of the agent's 4 MiB ranges

#define RIG_NEED_GPUS()                                                                                  \
  do {                                                                                                   \
    if (!agent_devices_are_gpus()) {                                                                     \
      GTEST_SKIP() << "skipped: needs the agent's devices on GPUs (RIG_TEST_DEVICES=cuda; ctest -R "     \
                      "proxy_tests_emulated_cuda)";                                                      \
    }                                                                                                    \
  } while (0)

// Tests that hold the GPU's copies with the emulator's delay (a real GPU's take microseconds, so
// what they look for in between cannot be seen there).
#define RIG_NEED_EMULATED_GPUS()                                                                         \
  do {                                                                                                   \
    RIG_NEED_GPUS();                                                                                     \
    if (!emulated_cuda()) GTEST_SKIP() << "skipped: times the GPU's copies with the emulated driver";    \
  } while (0)

// The job's staged bytes the agent copied to a device as they came, as its status says.
std::uint64_t bytes_streamed(remote::Link& link) {
  return nlohmann::json::parse(link.agent_status())["job"]["bytes_streamed"].get<std::uint64_t>();
}

// The job's staged bytes copied into a device's memory, as they came or not (each once).
std::uint64_t bytes_copied_in(remote::Link& link) {
  return nlohmann::json::parse(link.agent_status())["job"]["bytes_copied_in"].get<std::uint64_t>();
}

std::uint64_t bytes_streamed_out(remote::Link& link) {
  return nlohmann::json::parse(link.agent_status())["job"]["bytes_streamed_out"].get<std::uint64_t>();
}

// Fills `to` (2 * kBytes) on the GPU with bytes that never lay in the agent's staging as they
// are: random bytes copied up into `scratch`, then into `to` with their halves swapped on the
// GPU. So bytes sent from staging before their copy out completed are not those expected.
std::vector<std::byte> fill_on_gpu(Driven& gpu, const remote::Region& scratch, const remote::Region& to,
                                   std::uint64_t seed) {
  const auto up = random_bytes(2 * kBytes, seed);
  Work w;
  w.to_device(up.data(), scratch, 0, 2 * kBytes).between(scratch, 0, to, kBytes, kBytes).between(scratch, kBytes, to, 0, kBytes);
  gpu.wait(gpu.run(w));
  std::vector<std::byte> swapped(up.begin() + kBytes, up.end());
  swapped.insert(swapped.end(), up.begin(), up.begin() + kBytes);
  return swapped;
}

// Random bytes written into the first `n` bytes of `region` (returned: what it holds now).
std::vector<std::byte> write_random(Driven& dev, const remote::Region& region, std::uint64_t n, std::uint64_t seed) {
  auto up = random_bytes(n, seed);
  Work w;
  w.to_device(up.data(), region, 0, n);
  dev.wait(dev.run(w));
  return up;
}

// The whole of `region`, read back (its destination outlives the copy also where the wait throws).
std::vector<std::byte> read_back(Driven& dev, const remote::Region& region, std::uint64_t n) {
  std::vector<std::byte> out(n);
  Work w;
  w.to_host(region, 0, out.data(), n);
  run_and_wait(dev, w);
  return out;
}

TEST(GpuStreaming, ALargeCopyToAGpuIsCopiedThereAsItsBytesComeAndLandsExactContiguousOrInRows) {
  RIG_NEED_GPUS();
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven gpu(link, 1);
  auto region = gpu->alloc(edge::Memory::kDevice, 2 * kBytes);
  ASSERT_TRUE(region);
  const auto up = random_bytes(kBytes, 80);
  Work contiguous;
  contiguous.to_device(up.data(), *region, kBytes / 2, kBytes);
  gpu.wait(gpu.run(contiguous));
  EXPECT_EQ(bytes_streamed(link), kBytes) << "every byte of the copy was to go to the GPU as it came";
  EXPECT_EQ(bytes_copied_in(link), kBytes) << "a byte copied to the GPU as it came was copied again";
  auto got = read_back(gpu, *region, 2 * kBytes);
  EXPECT_EQ(std::vector<std::byte>(got.begin() + kBytes / 2, got.begin() + kBytes / 2 + kBytes), up);
  EXPECT_EQ(got[kBytes / 2 - 1], std::byte{0}) << "a byte before the copy was written";
  EXPECT_EQ(got[kBytes / 2 + kBytes], std::byte{0}) << "a byte after the copy was written";

  // Rows of 48 KiB at a 96 KiB pitch (a range ends on a whole row, 4 MiB not being one).
  auto rows = gpu->alloc(edge::Memory::kDevice, 2 * kBytes);
  ASSERT_TRUE(rows);
  constexpr std::uint64_t kRow = 48u << 10, kPitch = 2 * kRow, kRows = kBytes / kRow;
  const auto packed = random_bytes(kRows * kRow, 81);
  Work strided;
  strided.copy(rig_copy{harness::host_side(packed.data()), harness::region_side(*rows, 0), kRows, kRow, kRow, kPitch});
  gpu.wait(gpu.run(strided));
  EXPECT_EQ(bytes_streamed(link), kBytes + kRows * kRow);
  EXPECT_EQ(bytes_copied_in(link), kBytes + kRows * kRow);
  got = read_back(gpu, *rows, 2 * kBytes);
  for (std::uint64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(std::vector<std::byte>(got.begin() + r * kPitch, got.begin() + r * kPitch + kRow),
              std::vector<std::byte>(packed.begin() + r * kRow, packed.begin() + (r + 1) * kRow))
        << "row " << r;
    ASSERT_EQ(got[r * kPitch + kRow], std::byte{0}) << "the gap after row " << r << " was written";
  }
}

TEST(GpuStreaming, ALargeCopyFromAGpuIsSentRangeByRangeAsItsCopiesOutCompleteAndLandsExactContiguousOrInRows) {
  RIG_NEED_GPUS();
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  // Rows of 48 KiB at a 96 KiB pitch on the GPU, packed on the host (a range ends on a whole
  // row, 4 MiB not being one). The destinations outlive the proxy.
  constexpr std::uint64_t kRow = 48u << 10, kPitch = 2 * kRow, kRows = kBytes / kRow;
  std::vector<std::byte> got(kBytes + 2, std::byte{0x11}), packed(kRows * kRow);  // got: a guard byte either side
  Driven gpu(link, 1);
  auto scratch = gpu->alloc(edge::Memory::kDevice, 2 * kBytes), region = gpu->alloc(edge::Memory::kDevice, 2 * kBytes);
  ASSERT_TRUE(scratch && region);
  const auto on_gpu = fill_on_gpu(gpu, *scratch, *region, 86);
  const std::uint64_t before = bytes_streamed_out(link);
  Work contiguous;
  contiguous.to_host(*region, kBytes / 2, got.data() + 1, kBytes);
  gpu.wait(gpu.run(contiguous));
  EXPECT_EQ(bytes_streamed_out(link) - before, kBytes) << "every byte of the copy was to go out range by range";
  EXPECT_EQ(std::vector<std::byte>(got.begin() + 1, got.end() - 1),
            std::vector<std::byte>(on_gpu.begin() + kBytes / 2, on_gpu.begin() + kBytes / 2 + kBytes));
  EXPECT_EQ(got.front(), std::byte{0x11}) << "a byte before the copy was written";
  EXPECT_EQ(got.back(), std::byte{0x11}) << "a byte after the copy was written";

  const auto again = fill_on_gpu(gpu, *scratch, *region, 87);
  Work rows;
  rows.copy(rig_copy{harness::region_side(*region, 0), harness::host_side(packed.data()), kRows, kRow, kPitch, kRow});
  gpu.wait(gpu.run(rows));
  EXPECT_EQ(bytes_streamed_out(link) - before, kBytes + kRows * kRow);
  for (std::uint64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(std::vector<std::byte>(packed.begin() + r * kRow, packed.begin() + (r + 1) * kRow),
              std::vector<std::byte>(again.begin() + r * kPitch, again.begin() + r * kPitch + kRow))
        << "row " << r;
  }
}

// The emulator holds each copy with a host side 300 ms, so the eight ranges of a 32 MiB copy out
// complete one after another over 2.4 s: the agent's status shows some of them sent while the
// later ones are still being copied out (each range goes once its own copy out completed, not
// once the last one did), and the copy lands exact.
TEST(GpuStreaming, ALargeCopyFromAGpuSendsItsFirstRangesWhileItsLaterOnesAreStillCopiedOut) {
  RIG_NEED_EMULATED_GPUS();
  constexpr std::uint64_t kLarge = 2 * kBytes;
  AgentProcess agent(AgentEnv{{"RIG_EMULATED_CUDA_DELAY_US=300000"}});
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  std::vector<std::byte> got(kLarge);  // outlives the proxy
  Driven gpu(link, 1);
  auto region = gpu->alloc(edge::Memory::kDevice, kLarge);
  ASSERT_TRUE(region);
  const auto up = write_random(gpu, *region, kLarge, 92);
  const std::uint64_t before = bytes_streamed_out(link);
  Work out;
  out.to_host(*region, 0, got.data(), kLarge);
  const std::uint64_t v = gpu.run(out);
  // The first change the status shows: some ranges out, not all (polled every 10 ms, against
  // 300 ms between ranges).
  std::uint64_t seen = 0;
  while ((seen = bytes_streamed_out(link) - before) == 0 && gpu->signaled() < v) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(seen, 0u) << "the copy was done before any range was seen sent";
  EXPECT_LT(seen, kLarge) << "no range was sent before the last one's copy out completed";
  gpu.wait(v);
  EXPECT_EQ(bytes_streamed_out(link) - before, kLarge);
  EXPECT_EQ(got, up);
}

// Striping follows the whole part's size: a copy out of a GPU sent in 4 MiB ranges crosses the
// stripes when the part reaches the link's threshold, also where each range stays under it.
TEST(GpuStreaming, ACopyFromAGpuSentRangeByRangeIsStripedWhenTheWholePartReachesTheThreshold) {
  RIG_NEED_GPUS();
  AgentProcess agent({"--max-stripes", "2"});
  auto job = Job::create();
  remote::LinkOptions o;
  o.stripes = 2;
  o.stripe_min_bytes = 6u << 20;  // above each range's 4 MiB, below the part's 16 MiB
  remote::Link& link = job->connect(agent.endpoint(), o);
  ASSERT_EQ(link.stripes(), 2u);
  std::vector<std::byte> got(kBytes);  // outlives the proxy
  Driven gpu(link, 1);
  auto region = gpu->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(region);
  const auto up = write_random(gpu, *region, kBytes, 93);
  const std::uint64_t before = bytes_streamed_out(link), striped = link.counters().bytes_striped_in;
  Work out;
  out.to_host(*region, 0, got.data(), kBytes);
  gpu.wait(gpu.run(out));
  EXPECT_EQ(bytes_streamed_out(link) - before, kBytes);
  EXPECT_EQ(link.counters().bytes_striped_in - striped, kBytes) << "ranges under the threshold took the job's connection";
  EXPECT_EQ(got, up);
}

// A GPU's proxy copies into and out of another GPU's memory mapped to it (map_peer): the same
// ranges, issued on the mapping GPU's stream as they come, or sent as each completes, land
// exact in the other GPU's memory and back here.
TEST(GpuStreaming, ALargeCopyThroughAPeerMappingIsStreamedBothWaysAndLandsExact) {
  RIG_NEED_GPUS();
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  RIG_NEED_DEVICES(link, 2);  // two GPUs (the H200 host has one)
  std::vector<std::byte> got(kBytes);  // outlives the proxies
  Driven a(link, 1), b(link, 2);
  auto on_b = b->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(on_b);
  auto mapped = a->map_peer(b.proxy(), *on_b);
  if (!mapped && !emulated_cuda()) GTEST_SKIP() << "skipped: the GPUs do not reach each other's memory";
  ASSERT_TRUE(mapped) << "the emulated GPUs reach each other's memory";
  const std::uint64_t in0 = bytes_streamed(link);
  const auto up = write_random(a, *mapped, kBytes, 94);
  EXPECT_EQ(bytes_streamed(link) - in0, kBytes) << "the bytes into the peer's memory were received whole first";
  EXPECT_EQ(read_back(b, *on_b, kBytes), up) << "the bytes did not land in the peer GPU's memory";
  const std::uint64_t out0 = bytes_streamed_out(link);
  Work out;
  out.to_host(*mapped, 0, got.data(), kBytes);
  a.wait(a.run(out));
  EXPECT_EQ(bytes_streamed_out(link) - out0, kBytes);
  EXPECT_EQ(got, up);
}

// Two GPUs copy out at once: their ranges go out as each GPU's copies complete, so they may
// interleave on the connection (the client keeps a FIFO per device: PROTOCOL.md 6.5).
TEST(GpuStreaming, TwoGpusCopyingOutAtOnceBothLandExact) {
  RIG_NEED_GPUS();
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  RIG_NEED_DEVICES(link, 2);  // two GPUs (the H200 host has one)
  std::vector<std::byte> got_a(2 * kBytes), got_b(2 * kBytes);
  Driven a(link, 1), b(link, 2);
  auto scratch_a = a->alloc(edge::Memory::kDevice, 2 * kBytes), region_a = a->alloc(edge::Memory::kDevice, 2 * kBytes);
  auto scratch_b = b->alloc(edge::Memory::kDevice, 2 * kBytes), region_b = b->alloc(edge::Memory::kDevice, 2 * kBytes);
  ASSERT_TRUE(scratch_a && region_a && scratch_b && region_b);
  const auto on_a = fill_on_gpu(a, *scratch_a, *region_a, 88), on_b = fill_on_gpu(b, *scratch_b, *region_b, 89);
  const std::uint64_t before = bytes_streamed_out(link);
  Work wa, wb;
  wa.to_host(*region_a, 0, got_a.data(), 2 * kBytes);
  wb.to_host(*region_b, 0, got_b.data(), 2 * kBytes);
  const auto va = a.run(wa), vb = b.run(wb);
  a.wait(va);
  b.wait(vb);
  EXPECT_EQ(bytes_streamed_out(link) - before, 4 * kBytes);
  EXPECT_EQ(got_a, on_a);
  EXPECT_EQ(got_b, on_b);
}

TEST(GpuStreaming, ACopyAfterAnEarlierPartThatWritesOrReadsItsDestinationWaitsForItAndIsNotCopiedAhead) {
  RIG_NEED_GPUS();
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven gpu(link, 1);
  auto dst = gpu->alloc(edge::Memory::kDevice, kBytes), other = gpu->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(dst && other);
  const auto old_bytes = random_bytes(kBytes, 82), new_bytes = random_bytes(kBytes, 83);
  Work fill;
  fill.to_device(old_bytes.data(), *other, 0, kBytes);
  gpu.wait(gpu.run(fill));
  const std::uint64_t before = bytes_streamed(link);
  Work both;  // the earlier part writes the destination that the client's bytes then overwrite
  both.between(*other, 0, *dst, 0, kBytes).to_device(new_bytes.data(), *dst, 0, kBytes);
  gpu.wait(gpu.run(both));
  EXPECT_EQ(bytes_streamed(link), before) << "the client's bytes went to the GPU ahead of the earlier part";
  EXPECT_EQ(read_back(gpu, *dst, kBytes), new_bytes) << "the parts ran out of their order";

  Work read_first;  // the earlier part reads the destination (its new bytes) before the client's overwrite it
  read_first.between(*dst, 0, *other, 0, kBytes).to_device(old_bytes.data(), *dst, 0, kBytes);
  gpu.wait(gpu.run(read_first));
  EXPECT_EQ(bytes_streamed(link), before) << "the client's bytes went to the GPU ahead of the earlier read";
  EXPECT_EQ(read_back(gpu, *other, kBytes), new_bytes) << "the earlier part read the client's later bytes";
  EXPECT_EQ(read_back(gpu, *dst, kBytes), old_bytes);
}

// The agent has work queued: a handover on the GPU waits on the host's next value (submitted
// only later) to overwrite the destination. A copy into it that comes next is queued behind that
// one, so its bytes are staged, not copied to the GPU as they come (which would put them on the
// GPU's stream ahead of the waiting handover's copy).
TEST(GpuStreaming, ACopyQueuedBehindAWaitingHandoverIsNotCopiedAheadOfIt) {
  RIG_NEED_GPUS();
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven gpu(link, 1), host(link, 0);
  auto dst = gpu->alloc(edge::Memory::kDevice, kBytes), other = gpu->alloc(edge::Memory::kDevice, kBytes);
  auto h1 = host->alloc(edge::Memory::kDevice, 64), h2 = host->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(dst && other && h1 && h2);
  const auto old_bytes = random_bytes(kBytes, 86), new_bytes = random_bytes(kBytes, 87);
  Work fill;
  fill.to_device(old_bytes.data(), *other, 0, kBytes);
  gpu.wait(gpu.run(fill));
  const std::uint64_t before = bytes_streamed(link);
  Work overwrite;  // waits on the host's next value, then overwrites the destination
  overwrite.wait(host.word(), 0, host.last_value() + 1).between(*other, 0, *dst, 0, kBytes);
  gpu.run(overwrite);
  Work last;  // queued behind it
  last.to_device(new_bytes.data(), *dst, 0, kBytes);
  const std::uint64_t v = gpu.run(last);
  EXPECT_EQ(bytes_streamed(link), before) << "the bytes went to the GPU while a handover before them waited";
  Work on_host;  // the host's value that lets the waiting handover run
  on_host.between(*h1, 0, *h2, 0, 64);
  host.run(on_host);
  gpu.wait(v);
  EXPECT_EQ(read_back(gpu, *dst, kBytes), new_bytes) << "the waiting handover's copy ran after the later one";
}

// The GPU still runs an earlier copy (the emulator holds each copy with a host side 500 ms)
// when a large copy into the same memory comes: nothing of the GPU's is queued, so its bytes
// are copied there as they come, behind the earlier copy on the GPU's stream, and the later
// bytes are the ones that stay.
TEST(GpuStreaming, ACopyThatComesWhileTheGpusEarlierWorkRunsIsCopiedThereAsItComesBehindThatWork) {
  RIG_NEED_EMULATED_GPUS();
  AgentProcess agent(AgentEnv{{"RIG_EMULATED_CUDA_DELAY_US=500000"}});
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  const auto first = random_bytes(4096, 90), later = random_bytes(kBytes, 91);
  Driven gpu(link, 1);
  auto region = gpu->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(region);
  Work settle;  // the fresh memory's zeroing done, so that nothing but the first copy is in flight
  settle.to_device(first.data(), *region, 0, 4096);
  gpu.wait(gpu.run(settle));
  const std::uint64_t before = bytes_streamed(link);
  Work early, large;
  early.to_device(first.data(), *region, 0, 4096);
  large.to_device(later.data(), *region, 0, kBytes);
  const std::uint64_t v1 = gpu.run(early);
  const std::uint64_t v2 = gpu.run(large);
  // The agent read the large copy's handover before its bytes were all sent, which they were
  // once run returned: the first copy was still in flight then unless it was seen done.
  ASSERT_LT(gpu->signaled(), v1) << "the first copy was done before the second came (500 ms were to keep it in flight)";
  gpu.wait(v2);
  EXPECT_EQ(bytes_streamed(link) - before, kBytes) << "the copy was received whole because the GPU ran earlier work";
  EXPECT_EQ(read_back(gpu, *region, kBytes), later) << "the later copy's bytes did not stay";
}

// The connection breaks in the middle of a large copy's bytes, with ranges of it already
// copied to the GPU and (on the emulated driver, which holds each 300 ms) still queued there:
// their staging is given back only once the job's end quiesced the GPU (the emulator ends the
// agent where staging is unpinned under queued work), and the GPU serves the next job. The
// copy is larger than the spares a job's staging pool keeps (agent::JobStaging::kSpareBytes), so
// staging given back is unpinned and freed at once.
TEST(GpuStreaming, AConnectionLostInALargeCopysBytesLeavesTheAgentAliveAndItsGpuServing) {
  RIG_NEED_GPUS();
  constexpr std::uint64_t kLarge = 264u << 20;
  // More than a job's staging pool keeps as spares (agent::JobStaging::kSpareBytes, 256 MiB): staging
  // given back is unpinned and freed at once, not kept (where the mutant that gives it back under
  // the copies would go unseen).
  static_assert(kLarge > (256u << 20));
  AgentProcess agent(AgentEnv{{"RIG_EMULATED_CUDA_DELAY_US=300000", "RIG_EMULATED_CUDA_MEMORY=" + std::to_string(512u << 20)}});
  {
    auto job = Job::create();
    // Sends of 1 MiB at most, so that the 9 MiB before the break reach the agent.
    remote::Link& link = remote::connect_with_faults(*job, agent.endpoint(), {},
                                                     engine::Faults{.max_send_chunk = 1u << 20, .lose_after_bytes = 10u << 20});
    const std::vector<std::byte> up(kLarge, std::byte{0x5a});  // before the Driven: a failed submit's bytes are read
    Driven gpu(link, 1);
    auto region = gpu->alloc(edge::Memory::kDevice, kLarge);
    ASSERT_TRUE(region);
    Work w;
    w.to_device(up.data(), *region, 0, kLarge);
    EXPECT_NE(gpu.submit(w).rc, RIG_COMMITTED) << "the link broke 10 MiB into the copy's bytes";
  }
  // The failed job ends in the agent (its GPU work quiesced), and a fresh job copies through the
  // same GPU, exactly.
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven gpu(link, 1);
  auto region = gpu->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(region);
  const auto up = write_random(gpu, *region, kBytes, 85);
  EXPECT_EQ(read_back(gpu, *region, kBytes), up);
  EXPECT_TRUE(agent.alive());
}

}  // namespace
}  // namespace rig::test

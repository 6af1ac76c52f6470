// The CUDA backend's own behaviour, on the emulated driver (tests/support/emulated_cuda.cc),
// which can fail a chosen call and count what a GPU hides: copies that took the pageable path.
// Runs as ctest agent_tests_emulated_cuda; elsewhere (no emulator, a real GPU) each test skips,
// saying so. What holds on every device, GPUs included, is the Device conformance suite's.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#if defined(RIG_CUDA)

#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "devices/cuda/cuda_gpus.h"
#include "devices/cuda/cuda_pinning.h"
#include "devices/cuda/device_cuda.h"
#include "devices/gpu_devices.h"
#include "devices/wake.h"
#include "emulated_cuda.h"
#include "exec/staging.h"
#include "job/accounts.h"
#include "process/config.h"
#include "random_bytes.h"

namespace rig::agent {
namespace {

class EmulatedCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    emu_ = test::emulated_cuda();
    if (!emu_) GTEST_SKIP() << "skipped: needs the emulated CUDA driver (ctest -R agent_tests_emulated_cuda)";
    const wire::Outcome probed = CudaGpus::probe(gpus_);
    ASSERT_TRUE(probed.ok()) << probed.why();
    ASSERT_GE(gpus_->gpus().size(), 2u) << "the emulator shows two GPUs unless told otherwise";
  }
  void TearDown() override {
    if (!emu_) return;
    emu_.fail("", 0, 0, 0);  // no failure left armed, and nothing held, for the next test
    emu_.hold(0);
  }
  // GPU `ordinal` as one job's device (id ordinal + 1), reaching the host and both GPUs.
  std::unique_ptr<CudaDevice> open(int ordinal, std::uint64_t cap = 1 << 20) {
    return CudaDevice::open(*gpus_, ordinal, static_cast<std::uint32_t>(ordinal) + 1, cap, 0b111);
  }
  // Polls until `value` is reported (true) or poll fails (false, with why); bounded.
  static bool settle(DeviceBackend& d, std::uint64_t value, std::string& why) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<std::uint64_t> done;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!wire::passed(d.poll(done), why)) return false;
      for (std::uint64_t v : done) {
        if (v == value) return true;
      }
      std::this_thread::yield();
    }
    why = "value " + std::to_string(value) + " never reported";
    return false;
  }
  // Copies `bytes` in and out again through d's memory; the bytes that came back.
  static std::vector<std::byte> round_trip(DeviceBackend& d, const std::vector<std::byte>& bytes, std::uint64_t value) {
    const std::uint64_t n = bytes.size();
    auto m = d.allocate(n);
    EXPECT_TRUE(m);
    if (!m) return {};
    std::vector<std::byte> out(n);
    std::string why;
    EXPECT_TRUE(wire::passed(d.copy_in({m.get(), 0, n}, bytes.data(), {1, n}), why)) << why;
    EXPECT_TRUE(wire::passed(d.copy_out(out.data(), {m.get(), 0, n}, {1, n}), why)) << why;
    d.finish(value);
    EXPECT_TRUE(settle(d, value, why)) << why;
    return out;
  }

  // Loses GPU `d` (whose memory m is) by a sticky error as a copy into m runs; the failure's words.
  std::string lose_by_a_sticky_copy(DeviceBackend& d, Memory& m, const std::vector<std::byte>& bytes) {
    std::string why;
    emu_.fail("cuMemcpyAsync", 1, CUDA_ERROR_ILLEGAL_ADDRESS, /*when_run=*/1);
    // The copy fails as it runs: a later call of the job learns it (the copy's own event record,
    // should the stream's thread be quicker than this one, else the value's poll).
    if (wire::passed(d.copy_in({&m, 0, bytes.size()}, bytes.data(), {1, bytes.size()}), why)) {
      d.finish(1);
      EXPECT_FALSE(settle(d, 1, why));
    }
    return why;
  }

  // Has a's stream wait on value 1 of b, a copy of `bytes` into mb that will fail as it runs:
  // the emulator holds it (until hold(0), which the caller gives once it queued what goes behind
  // the wait; a Release made first makes sure), then GPU 1's context breaks and the wait never
  // ends. False if a step failed.
  bool wait_on_a_copy_that_will_fail(DeviceBackend& a, DeviceBackend& b, Memory& mb, const std::vector<std::byte>& bytes) {
    std::string why;
    emu_.hold(1);
    emu_.fail("cuMemcpyAsync", 1, CUDA_ERROR_ILLEGAL_ADDRESS, /*when_run=*/1);
    if (!wire::passed(b.copy_in({&mb, 0, bytes.size()}, bytes.data(), {1, bytes.size()}), why) || b.finish(1) != Completion::kLater) {
      ADD_FAILURE() << "the copy to fail was not queued: " << why;
      return false;
    }
    a.wait_on(b, 1);
    return true;
  }

  // A copy from pinned staging into fresh memory of d, queued as value 2 (after value 1, the
  // memory's zeroing, settled) and held by the emulator (hold(1): a Release made first ends
  // it). The test gives the buffer back once the copy ran. Null if a step failed.
  struct HeldCopy {
    explicit HeldCopy(const CudaGpus& gpus) : staging(~0ull, std::make_shared<CudaPinning>(gpus)) {}
    std::shared_ptr<Memory> memory;
    JobStaging staging;
    std::uint64_t capacity = 0;
    HostBytes buffer;
  };
  std::unique_ptr<HeldCopy> hold_a_copy_from_staging(DeviceBackend& d) {
    auto c = std::make_unique<HeldCopy>(*gpus_);
    std::string why;
    c->memory = d.allocate(4096);
    if (!c->memory) return nullptr;
    d.finish(1);
    if (!settle(d, 1, why) || !(c->buffer = c->staging.take(4096, c->capacity))) {
      ADD_FAILURE() << "no memory, zeroing or staging for the held copy: " << why;
      return nullptr;
    }
    emu_.hold(1);  // the copy from staging waits
    if (!wire::passed(d.copy_in({c->memory.get(), 0, 4096}, c->buffer.get(), {1, 4096}), why)) {
      ADD_FAILURE() << why;
      return nullptr;
    }
    d.finish(2);
    return c;
  }

  // Ends the device as the job's end does (quiesce, then let go) on a thread of its own; if that
  // does not return within 30 s, fails and ends the process (the thread is stuck in the driver:
  // nothing after this could run).
  static void end_or_exit(std::unique_ptr<CudaDevice>& d) {
    within_30s_or_exit([&] { d.reset(); }, "the job's end waited 30 s on a stream that waits on a lost GPU's work");
  }
  // Runs f on a thread of its own; if it does not return within 30 s, fails with `failure` and
  // ends the process (the thread is stuck in the driver: nothing after this could run).
  static void within_30s_or_exit(const std::function<void()>& f, const char* failure) {
    auto ended = std::make_shared<std::promise<void>>();
    std::future<void> end = ended->get_future();
    std::thread([f, ended] {
      f();
      ended->set_value();
    }).detach();
    if (end.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << failure;
      std::fflush(nullptr);
      std::_Exit(1);
    }
  }
  // Why a new job's first use of GPU `ordinal` fails ("" if it does not).
  std::string why_a_new_job_fails(int ordinal) {
    auto c = open(ordinal);
    EXPECT_FALSE(c->allocate(4096));
    std::vector<std::uint64_t> done;
    std::string why;
    return wire::passed(c->poll(done), why) ? std::string() : why;
  }
  // Releases the emulator's hold at scope exit (before a device's quiesce, also when an
  // assertion returns).
  struct Release {
    const test::EmulatedCuda& emu;
    ~Release() { emu.hold(0); }
  };

  test::EmulatedCuda emu_;
  const CudaGpus* gpus_ = nullptr;
};

TEST_F(EmulatedCuda, AStickyFailureLosesTheGpuForEveryJobUsingItAndItReopensOnceNoneHoldsIt) {
  auto a = open(0), b = open(0);
  auto m = a->allocate(4096);
  ASSERT_TRUE(m);
  auto mb = b->allocate(4096);  // b uses the GPU too
  ASSERT_TRUE(mb);
  const auto bytes = test::random_bytes(4096, 41);
  const std::string why = lose_by_a_sticky_copy(*a, *m, bytes);
  EXPECT_NE(why.find("CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"), std::string::npos)
      << why;
  EXPECT_NE(why.find("lost"), std::string::npos) << why;
  // Another job using the same GPU, which did nothing wrong, fails too, saying why.
  std::vector<std::uint64_t> done;
  std::string why_b;
  EXPECT_FALSE(wire::passed(b->poll(done), why_b));
  EXPECT_NE(why_b.find("is lost"), std::string::npos) << why_b;
  EXPECT_NE(why_b.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << why_b;
  EXPECT_FALSE(b->allocate(4096)) << "a lost GPU allocates nothing";
  // The other GPU is not touched.
  auto other = open(1);
  EXPECT_EQ(round_trip(*other, bytes, 1), bytes);
  // Once no job holds it, the GPU opens afresh and works.
  m.reset();
  mb.reset();
  a.reset();
  b.reset();
  auto fresh = open(0);
  EXPECT_EQ(round_trip(*fresh, bytes, 1), bytes);
}

TEST_F(EmulatedCuda, AJobThatNeverUsedALostGpuGoesOnAndUsesItAfreshOnceTheJobsThatUsedItEnded) {
  auto a = open(0), c = open(0);  // c: a job with the GPU among its devices that has not used it
  CudaPinning c_pinning(*gpus_);  // and c's pinning (GPU 0's context), which pinned nothing yet
  EXPECT_EQ(c->finish(7), Completion::kDone) << "nothing issued on the GPU: done, without taking it";
  auto m = a->allocate(4096);
  ASSERT_TRUE(m);
  const auto bytes = test::random_bytes(4096, 44);
  const std::string why = lose_by_a_sticky_copy(*a, *m, bytes);
  ASSERT_NE(why.find("lost"), std::string::npos) << why;
  // c did nothing on the GPU: it is not failed, and it has no work to wait for.
  std::vector<std::uint64_t> done;
  std::string why_c;
  EXPECT_TRUE(wire::passed(c->poll(done), why_c)) << why_c;
  EXPECT_TRUE(c->idle());
  // Once the job that used it ended, c's first use opens the GPU afresh, while c (its device and
  // its pinning) lived all along.
  m.reset();
  a.reset();
  EXPECT_EQ(round_trip(*c, bytes, 1), bytes);
}

// A stream that waits on another GPU's work that will never complete (the emulator's wait on an
// event of a context that broke first never ends; the driver's documentation does not promise
// that it would) is not waited on forever at the job's end: quiesce gives it up within its grace
// and loses its own GPU, saying why, without freeing the memory the stream's queued copy still
// uses (the emulator ends the process at such a free); the GPU opens afresh once no job holds it.
TEST_F(EmulatedCuda, AStreamWaitingOnALostGpusWorkIsGivenUpAtTheJobsEndAndItsGpuOpensAfresh) {
  auto a = open(0), b = open(1);  // one job's two GPUs
  auto ma = a->allocate(4096), ma2 = a->allocate(4096), mb = b->allocate(4096);
  ASSERT_TRUE(ma && ma2 && mb);
  const auto bytes = test::random_bytes(4096, 49);
  std::string why;
  Release release{emu_};
  ASSERT_TRUE(wait_on_a_copy_that_will_fail(*a, *b, *mb, bytes));
  ASSERT_TRUE(wire::passed(a->copy({ma2.get(), 0, 4096}, {ma.get(), 0, 4096}, {1, 4096}), why)) << why;
  a->finish(1);
  emu_.hold(0);  // b's copy fails as it runs: GPU 1's context breaks, its event never completes
  ASSERT_FALSE(settle(*b, 1, why));
  ASSERT_NE(why.find("GPU 1 lost: cuEventQuery: CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << why;
  end_or_exit(a);  // the job ends: a's quiesce returns
  // GPU 0 is lost for every job, saying why; its memory goes with its context.
  const std::string why_c = why_a_new_job_fails(0);
  EXPECT_NE(why_c.find("GPU 0 (Emulated GPU 0) is lost: its stream waits on work that will not complete: "
                       "GPU 1 (Emulated GPU 1) is lost"),
            std::string::npos)
      << why_c;
  ma.reset();
  ma2.reset();
  mb.reset();
  b.reset();
  auto fresh = open(0);
  EXPECT_EQ(round_trip(*fresh, bytes, 1), bytes);
}

// The same where the stream waits on another GPU's zeroing of memory it copies from, and that
// GPU broke with no call of the job seeing it (the job ends first): quiesce asks the broken
// context itself, gives the stream up and loses its own GPU; both GPUs open afresh once no job
// holds them.
TEST_F(EmulatedCuda, AStreamWaitingOnAnotherGpusZeroingIsGivenUpThoughNoCallSawThatGpuBreak) {
  auto a = open(0), b = open(1);
  auto ma = a->allocate(4096);
  ASSERT_TRUE(ma);
  std::string why;
  a->finish(1);
  ASSERT_TRUE(settle(*a, 1, why)) << why;  // ma's own zeroing ended
  emu_.hold(1);
  Release release{emu_};
  emu_.fail("cuMemsetD8Async", 1, CUDA_ERROR_ILLEGAL_ADDRESS, /*when_run=*/1);
  auto mb = b->allocate(4096);  // its zeroing waits, then fails as it runs
  ASSERT_TRUE(mb);
  ASSERT_TRUE(wire::passed(a->copy({ma.get(), 0, 4096}, {mb.get(), 0, 4096}, {1, 4096}), why)) << why;  // after mb's zeroing
  a->finish(2);
  emu_.hold(0);
  emu_.settle();  // GPU 1's context broke; no call of the job saw it
  end_or_exit(a);
  const std::string why_c = why_a_new_job_fails(0);
  EXPECT_NE(why_c.find("GPU 0 (Emulated GPU 0) is lost: its stream waits on work that will not complete: "
                       "GPU 1 (Emulated GPU 1) is lost: cuMemGetInfo: CUDA_ERROR_ILLEGAL_ADDRESS"),
            std::string::npos)
      << why_c;
  // GPU 0's context goes first, with the given-up copy that reads GPU 1's memory.
  ma.reset();
  mb.reset();
  b.reset();
  const auto bytes = test::random_bytes(4096, 50);
  for (int ordinal : {0, 1}) {
    auto fresh = open(ordinal);
    EXPECT_EQ(round_trip(*fresh, bytes, 1), bytes) << "GPU " << ordinal;
  }
}

// Memory freed mid-job whose zeroing is queued behind a wait on a GPU lost meanwhile: the free
// waits for the zeroing only for the grace (the wait may never end), then leaves the memory to
// the context rather than free it under the zeroing; the job's end gives the stream up, and
// both GPUs open afresh.
TEST_F(EmulatedCuda, MemoryFreedMidJobWhoseZeroingWaitsOnALostGpuIsLeftToItsContextNotWaitedOnForever) {
  auto a = open(0), b = open(1);
  auto mb = b->allocate(4096);
  ASSERT_TRUE(mb);
  const auto bytes = test::random_bytes(4096, 57);
  std::string why;
  Release release{emu_};
  ASSERT_TRUE(wait_on_a_copy_that_will_fail(*a, *b, *mb, bytes));
  auto ma = a->allocate(4096);  // its zeroing queued behind the wait
  ASSERT_TRUE(ma);
  emu_.hold(0);  // b's copy fails as it runs: GPU 1's context breaks, its event never completes
  ASSERT_FALSE(settle(*b, 1, why));
  within_30s_or_exit([&] { ma.reset(); },  // the client's free, mid-job
                     "a free waited 30 s on a zeroing behind a wait on a lost GPU's work");
  end_or_exit(a);
  mb.reset();
  b.reset();
  for (int ordinal : {0, 1}) {
    auto fresh = open(ordinal);
    EXPECT_EQ(round_trip(*fresh, bytes, 1), bytes) << "GPU " << ordinal;
  }
}

// A GPU that another job's end gave up is lost, but its context still runs work: a job's end
// whose own stream waits on nothing lost waits for that work past the grace, rather than give
// it up and free the staging its copy still reads.
TEST_F(EmulatedCuda, AJobsEndWaitsForItsOwnWorkOnAGpuThatAnotherJobGaveUp) {
  auto a = open(0);
  Release release{emu_};
  auto held = hold_a_copy_from_staging(*a);
  ASSERT_TRUE(held);
  CudaGpus::Hold(*gpus_, 0).lose("another job's end gave GPU 0 up");
  std::promise<void> quiesced;
  std::future<void> done = quiesced.get_future();
  std::thread([&] {
    a->quiesce();
    quiesced.set_value();
  }).detach();
  // Past the 2 s grace (device_cuda.cc's kLostWaitGrace): still waiting for the held copy.
  EXPECT_EQ(done.wait_for(std::chrono::seconds(3)), std::future_status::timeout)
      << "the job's end gave up its own work on a GPU another job gave up";
  emu_.hold(0);
  if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "the job's end did not return 30 s after its work was let run";
    std::fflush(nullptr);
    std::_Exit(1);
  }
  held->staging.give(std::move(held->buffer), held->capacity);
}

// A job whose first use of a GPU comes after the GPU was lost fails, saying so, and does not
// hold the GPU: it opens afresh once the jobs that used it ended, though the failed job lives.
TEST_F(EmulatedCuda, AJobWhoseFirstUseFindsTheGpuLostFailsAndDoesNotHoldIt) {
  auto a = open(0), c = open(0);
  auto m = a->allocate(4096);
  ASSERT_TRUE(m);
  const auto bytes = test::random_bytes(4096, 48);
  const std::string why = lose_by_a_sticky_copy(*a, *m, bytes);
  ASSERT_NE(why.find("lost"), std::string::npos) << why;
  EXPECT_FALSE(c->allocate(4096));
  std::vector<std::uint64_t> done;
  std::string why_c;
  EXPECT_FALSE(wire::passed(c->poll(done), why_c));
  EXPECT_NE(why_c.find("is lost"), std::string::npos) << why_c;
  m.reset();
  a.reset();
  auto fresh = open(0);
  EXPECT_EQ(round_trip(*fresh, bytes, 1), bytes);
}

// A sticky error that the opening of a job's device finds (reading the free memory) loses the
// GPU as one in any call does: the jobs using it fail, the new job fails at its first use with
// the driver's words, and the GPU opens afresh once they ended.
TEST_F(EmulatedCuda, AStickyErrorFoundWhileOpeningLosesTheGpuForTheJobsUsingItAndItReopensAfterThem) {
  auto b = open(0);
  auto mb = b->allocate(4096);
  ASSERT_TRUE(mb);
  emu_.fail("cuMemGetInfo", 1, CUDA_ERROR_ILLEGAL_ADDRESS, 0);
  auto c = open(0);
  EXPECT_FALSE(c->allocate(4096));
  EXPECT_FALSE(c->idle()) << "failed before any use: work ordered behind it waits for the failure";
  std::vector<std::uint64_t> done;
  std::string why_c, why_b;
  EXPECT_FALSE(wire::passed(c->poll(done), why_c));
  EXPECT_NE(why_c.find("cuMemGetInfo: CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << why_c;
  EXPECT_FALSE(wire::passed(b->poll(done), why_b)) << "b used the GPU whose context broke";
  EXPECT_NE(why_b.find("is lost"), std::string::npos) << why_b;
  mb.reset();
  b.reset();
  c.reset();
  const auto bytes = test::random_bytes(4096, 46);
  auto fresh = open(0);
  EXPECT_EQ(round_trip(*fresh, bytes, 1), bytes);
}

// Pinned host memory lives in the context of the first GPU that is not lost: a job's pinning
// holds that GPU while it holds pinned memory there, and only then. A pin tried once GPU 0 is
// lost pins in GPU 1's context, without holding GPU 0; the last unpin under GPU 0 lets go of it,
// and the lost GPU opens afresh.
TEST_F(EmulatedCuda, APinningHoldsAGpuOnlyWhileItHoldsPinnedMemoryAndALostFirstGpuLeavesItToTheNext) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  struct Pages {
    void* p;
    std::size_t n;
    ~Pages() { ::munmap(p, n); }
  } x{::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), page},
      y{::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), page};
  ASSERT_NE(x.p, MAP_FAILED);
  ASSERT_NE(y.p, MAP_FAILED);
  const std::uint64_t ranges = emu_.registered_ranges();
  CudaPinning early(*gpus_), late(*gpus_);
  early.pin(static_cast<std::byte*>(x.p), page);
  EXPECT_EQ(emu_.registered_ranges(), ranges + 1);
  auto a = open(0);
  auto m = a->allocate(4096);
  ASSERT_TRUE(m);
  const auto bytes = test::random_bytes(4096, 47);
  const std::string why = lose_by_a_sticky_copy(*a, *m, bytes);
  ASSERT_NE(why.find("lost"), std::string::npos) << why;
  late.pin(static_cast<std::byte*>(y.p), page);  // GPU 0 is lost: pinned under GPU 1
  EXPECT_EQ(emu_.registered_ranges(), ranges + 2) << "a lost GPU 0 leaves the pinning to GPU 1";
  m.reset();
  a.reset();
  {
    auto still = open(0);
    EXPECT_FALSE(still->allocate(4096)) << "the early pinning's memory still holds the lost GPU";
  }
  early.unpin(static_cast<std::byte*>(x.p));
  auto fresh = open(0);  // the late pinning does not hold GPU 0
  EXPECT_EQ(round_trip(*fresh, bytes, 1), bytes);
  late.unpin(static_cast<std::byte*>(y.p));
  EXPECT_EQ(emu_.registered_ranges(), ranges);
}

TEST_F(EmulatedCuda, AFailedCopyFailsWithTheDriversErrorNameAndMessageAndTheGpuStaysForOtherJobs) {
  auto a = open(0), b = open(0);
  auto m = a->allocate(4096);
  ASSERT_TRUE(m);
  const auto bytes = test::random_bytes(4096, 42);
  std::string why;
  emu_.fail("cuMemcpyAsync", 1, CUDA_ERROR_INVALID_HANDLE, 0);
  EXPECT_FALSE(wire::passed(a->copy_in({m.get(), 0, 4096}, bytes.data(), {1, 4096}), why));
  EXPECT_EQ(why, "cuMemcpyAsync: CUDA_ERROR_INVALID_HANDLE (invalid resource handle)");
  EXPECT_EQ(round_trip(*b, bytes, 1), bytes) << "a failure that is not sticky loses no GPU";
}

TEST_F(EmulatedCuda, AnAllocTheDriverHasNoRoomForIsNoneAndTheJobGoesOn) {
  auto a = open(0);
  emu_.fail("cuMemAlloc", 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
  EXPECT_FALSE(a->allocate(4096)) << "the driver's out of memory is the page's None";
  const auto bytes = test::random_bytes(4096, 43);
  EXPECT_EQ(round_trip(*a, bytes, 1), bytes) << "and the job goes on";
}

TEST_F(EmulatedCuda, StagingAndHostObjectsReachAGpuByDmaAtEverySize) {
  AgentConfig config;
  config.device_kind = DeviceKind::kCuda;
  config.device_budget = 8 << 20;
  config.host_budget = 8 << 20;
  auto devices = open_devices(config);
  ASSERT_GE(devices.size(), 2u);
  DeviceBackend& host = *devices[0];
  DeviceBackend& gpu = *devices[1];
  JobStaging staging(~0ull, host_pinning(config));
  // The counter counts: a copy from plain memory takes the pageable path.
  std::vector<std::byte> plain(4096);
  auto probe = gpu.allocate(4096);
  ASSERT_TRUE(probe);
  std::string why;
  const std::uint64_t at_start = emu_.pageable_copies();
  ASSERT_TRUE(wire::passed(gpu.copy_in({probe.get(), 0, 4096}, plain.data(), {1, 4096}), why)) << why;
  ASSERT_EQ(emu_.pageable_copies(), at_start + 1);

  std::uint64_t value = 0;
  for (const std::uint64_t n : {1ull, 100ull, 4096ull, 70000ull, 1ull << 20}) {
    SCOPED_TRACE(n);
    const auto bytes = test::random_bytes(n, n);
    std::uint64_t capacity = 0;
    HostBytes buffer = staging.take(n, capacity);
    ASSERT_TRUE(buffer);
    std::copy(bytes.begin(), bytes.end(), buffer.get());
    auto object = host.allocate(n);
    auto on_gpu = gpu.allocate(n);
    ASSERT_TRUE(object && on_gpu);
    const std::uint64_t before = emu_.pageable_copies();
    ASSERT_TRUE(wire::passed(gpu.copy_in({on_gpu.get(), 0, n}, buffer.get(), {1, n}), why)) << why;   // staging to GPU
    ASSERT_TRUE(wire::passed(gpu.copy({object.get(), 0, n}, {on_gpu.get(), 0, n}, {1, n}), why)) << why;  // GPU to object
    ASSERT_TRUE(wire::passed(gpu.copy_out(buffer.get(), {on_gpu.get(), 0, n}, {1, n}), why)) << why;  // GPU to staging
    gpu.finish(++value);
    ASSERT_TRUE(settle(gpu, value, why)) << why;
    EXPECT_EQ(emu_.pageable_copies(), before) << "a copy between a GPU and staging or a host object was pageable";
    EXPECT_EQ(std::vector<std::byte>(object->host(), object->host() + n), bytes);
    EXPECT_EQ(std::vector<std::byte>(buffer.get(), buffer.get() + n), bytes);
    staging.give(std::move(buffer), capacity);
  }
}

// The agent's log at warn and above, captured while it lives (the default logger restored after).
class WarningsLog {
 public:
  WarningsLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(logger);
  }
  ~WarningsLog() { spdlog::set_default_logger(previous_); }
  // How many lines hold `words`.
  int lines_with(const std::string& words) const {
    std::istringstream in(text_.str());
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(words) != std::string::npos ? 1 : 0;
    return n;
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

// A buffer the driver refuses to pin is used unpinned: its copies take the driver's pageable
// path and land exact, and the operator is told once per job why its GPU's copies are slower.
TEST_F(EmulatedCuda, StagingTheDriverRefusesToPinIsUsedUnpinnedAndTheOperatorIsToldOncePerJob) {
  AgentConfig config;
  config.device_kind = DeviceKind::kCuda;
  config.device_budget = 8 << 20;
  auto devices = open_devices(config);
  ASSERT_GE(devices.size(), 2u);
  DeviceBackend& gpu = *devices[1];
  WarningsLog log;
  JobStaging staging(~0ull, host_pinning(config));
  std::uint64_t value = 0;
  for (int buffer = 0; buffer < 2; ++buffer) {
    SCOPED_TRACE(buffer);
    emu_.fail("cuMemHostRegister", 1, CUDA_ERROR_OUT_OF_MEMORY, 0);
    const std::uint64_t n = 4096u << buffer;  // a new buffer each time, not the spare
    const auto bytes = test::random_bytes(n, 60 + buffer);
    std::uint64_t capacity = 0;
    HostBytes staged = staging.take(n, capacity);
    ASSERT_TRUE(staged);
    std::copy(bytes.begin(), bytes.end(), staged.get());
    auto on_gpu = gpu.allocate(n);
    ASSERT_TRUE(on_gpu);
    std::string why;
    const std::uint64_t before = emu_.pageable_copies();
    ASSERT_TRUE(wire::passed(gpu.copy_in({on_gpu.get(), 0, n}, staged.get(), {1, n}), why)) << why;
    std::fill(staged.get(), staged.get() + n, std::byte{0});
    ASSERT_TRUE(wire::passed(gpu.copy_out(staged.get(), {on_gpu.get(), 0, n}, {1, n}), why)) << why;
    gpu.finish(++value);
    ASSERT_TRUE(settle(gpu, value, why)) << why;
    EXPECT_EQ(emu_.pageable_copies(), before + 2) << "the unpinned buffer's copies did not take the pageable path";
    EXPECT_EQ(std::vector<std::byte>(staged.get(), staged.get() + n), bytes);
    staging.give(std::move(staged), capacity);
  }
  EXPECT_EQ(log.lines_with("left unpinned (cuMemHostRegister: CUDA_ERROR_OUT_OF_MEMORY (out of memory))"), 1)
      << log.text();
  EXPECT_EQ(log.lines_with("pageable path"), 1) << log.text();
}

// cuda.h: within one device a 2D copy "may fail for pitches not computed by cuMemAllocPitch()";
// such a copy goes row by row and lands exact.
TEST_F(EmulatedCuda, AStridedCopyWithinTheGpuTheDriverRefusesGoesRowByRow) {
  auto gpu = open(0);
  auto a = gpu->allocate(4096), b = gpu->allocate(4096);
  ASSERT_TRUE(a && b);
  const auto packed = test::random_bytes(16 * 64, 44);
  std::string why;
  ASSERT_TRUE(wire::passed(gpu->copy_in({a.get(), 0, 100}, packed.data(), {16, 64}), why)) << why;
  emu_.fail("cuMemcpy2DAsync", 1, CUDA_ERROR_INVALID_VALUE, 0);
  ASSERT_TRUE(wire::passed(gpu->copy({b.get(), 8, 200}, {a.get(), 0, 100}, {16, 64}), why)) << why;
  std::vector<std::byte> out(packed.size());
  ASSERT_TRUE(wire::passed(gpu->copy_out(out.data(), {b.get(), 8, 200}, {16, 64}), why)) << why;
  gpu->finish(1);
  ASSERT_TRUE(settle(*gpu, 1, why)) << why;
  EXPECT_EQ(out, packed);
}

// A peer mapping the driver refuses is map_peer's None, and the job goes on.
TEST_F(EmulatedCuda, APeerMappingTheDriverRefusesIsNoneAndTheJobGoesOn) {
  auto mine = open(0), theirs = open(1);
  auto m = theirs->allocate(4096);
  ASSERT_TRUE(m);
  emu_.fail("cuCtxEnablePeerAccess", 1, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 0);
  EXPECT_FALSE(mine->map_peer(m));
  std::vector<std::uint64_t> done;
  std::string why;
  EXPECT_TRUE(wire::passed(mine->poll(done), why)) << why;
  const auto bytes = test::random_bytes(4096, 45);
  EXPECT_EQ(round_trip(*mine, bytes, 1), bytes);
  EXPECT_TRUE(mine->map_peer(m)) << "the driver's next answer is yes";
}

// The wake an armed GPU signals (a host function behind the work issued so far) comes only once
// that work completed: not while the emulator holds the copy, and when it is readable, one
// poll reports the value.
TEST_F(EmulatedCuda, AWakeIsPostedOnlyOnceTheWorkItWasArmedBehindCompleted) {
  auto gpu = open(0);
  Release release{emu_};
  auto held = hold_a_copy_from_staging(*gpu);
  ASSERT_TRUE(held);
  std::string why;
  auto wake = *Wake::make();
  gpu->arm_wake(wake);
  emu_.settle();  // whatever may run ran: a host function not ordered behind the copy did
  pollfd readable{wake->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&readable, 1, 0), 0) << "the wake came while the work it was armed behind was held";
  emu_.hold(0);
  ASSERT_EQ(::poll(&readable, 1, 10000), 1) << "no wake within 10 s";
  std::vector<std::uint64_t> done;
  ASSERT_TRUE(wire::passed(gpu->poll(done), why)) << why;
  EXPECT_EQ(done, std::vector<std::uint64_t>{2}) << "the wake came before the work it was armed behind";
  gpu->quiesce();  // the copy from the buffer ended, whatever the wake did
  held->staging.give(std::move(held->buffer), held->capacity);
}

// A large copy out goes range by range, each range sent once the mark behind its copy out
// passed (Executor::send_ranges). A mark is not passed while the work before it is held, it is
// once that work ran while later work is still held, and the armed wake is signalled at each mark
// as well as behind the work, so the session wakes for each range rather than once the whole
// copy is out.
TEST_F(EmulatedCuda, AMarkPassesOnlyOnceTheWorkBeforeItCompletedAndTheArmedWakeIsPostedAtEachMark) {
  auto gpu = open(0);
  Release release{emu_};
  std::string why;
  auto m = gpu->allocate(2 * 4096);
  ASSERT_TRUE(m);
  gpu->finish(1);
  ASSERT_TRUE(settle(*gpu, 1, why)) << why;
  JobStaging staging(~0ull, std::make_shared<CudaPinning>(*gpus_));
  std::uint64_t capacity = 0;
  HostBytes buffer = staging.take(2 * 4096, capacity);
  ASSERT_TRUE(buffer);
  emu_.hold(1);  // the copies out wait
  std::uint64_t first = 0, second = 0;
  ASSERT_TRUE(wire::passed(gpu->copy_out(buffer.get(), {m.get(), 0, 4096}, {1, 4096}), why) && wire::passed(gpu->mark(first), why) &&
              wire::passed(gpu->copy_out(buffer.get() + 4096, {m.get(), 4096, 4096}, {1, 4096}), why) && wire::passed(gpu->mark(second), why))
      << why;
  EXPECT_LT(first, second);
  auto wake = *Wake::make();
  gpu->arm_wake(wake);
  emu_.settle();
  EXPECT_FALSE(gpu->passed(first)) << "a mark passed while the copy before it was held";
  EXPECT_FALSE(gpu->passed(second));
  pollfd readable{wake->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&readable, 1, 0), 0) << "the wake came while the copies were held";
  // The first copy runs, the second stays held: the first mark alone passed, and the wake came
  // for it (a range is sent while the later ones are still being copied out).
  emu_.hold_after(1);
  emu_.settle();
  EXPECT_TRUE(gpu->passed(first)) << "a mark did not pass once the copy before it completed";
  EXPECT_FALSE(gpu->passed(second)) << "a mark passed while the copy before it was held";
  std::uint64_t posts = 0;
  const bool woken = ::poll(&readable, 1, 0) == 1;
  EXPECT_TRUE(woken) << "no wake came for the first mark while the second copy was held";
  if (woken) {
    ASSERT_EQ(::read(wake->fd(), &posts, sizeof posts), static_cast<ssize_t>(sizeof posts));
    EXPECT_EQ(posts, 1u) << "one post at the first mark";
  }
  emu_.hold(0);
  emu_.settle();
  EXPECT_TRUE(gpu->passed(second));
  ASSERT_EQ(::read(wake->fd(), &posts, sizeof posts), static_cast<ssize_t>(sizeof posts));
  EXPECT_EQ(posts, woken ? 2u : 3u) << "one post at the second mark and one behind the work";
  std::vector<std::uint64_t> done;
  EXPECT_TRUE(wire::passed(gpu->poll(done), why)) << why;
  gpu->quiesce();
  staging.give(std::move(buffer), capacity);
}

}  // namespace
}  // namespace rig::agent

#endif  // RIG_CUDA

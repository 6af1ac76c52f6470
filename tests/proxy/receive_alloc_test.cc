// The link's receiving thread allocates nothing on the success path once its reused buffers
// have grown: done reports, and bytes received into this process's memory (small, strided,
// and large enough to be received straight into place). A binary of its own, since it
// replaces the global operator new to count each thread's allocations.
//
// GCC (12), inlining the replaced operator delete's free() where the pointer came from the
// replaced operator new, takes the pair for a mismatch (-Wmismatched-new-delete); they match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "fixture.h"
#include "test_hook.h"

namespace {
// The allocations of the thread that made them.
thread_local std::uint64_t t_allocations = 0;

void* counted(std::size_t n, std::size_t align) {
  ++t_allocations;
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(n) : std::aligned_alloc(align, (n + align - 1) / align * align);
  return p;
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace rig::test {
namespace {

using Point = remote::test_hook::Point;

// The receiving thread's count of allocations, taken as it is about to publish a done report.
// release (hook) / acquire (the test, after it saw the published word): the publish comes after.
std::atomic<std::uint64_t> g_receiver_allocations{0};

void count_hook(Point point, std::uint32_t) {
  if (point == Point::kReceiverPublishing) g_receiver_allocations.store(t_allocations, std::memory_order_release);
}

class ReceivePath : public AgentSuite {};

TEST_F(ReceivePath, DoneReportsAndBytesIntoHereAllocateNothingOnceWarm) {
  constexpr std::size_t kLarge = 1u << 20;  // above LinkCore::kZeroCopyBytes: received in place
  std::vector<std::byte> small(4096), strided(64 * 256), large(kLarge);
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 2 * kLarge);
  ASSERT_TRUE(r);
  std::vector<std::byte> pattern(2 * kLarge);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<std::byte>(i * 7 + 3);
  Work fill;
  fill.to_device(pattern.data(), *r, 0, pattern.size());
  dev.wait(dev.run(fill));
  Work round;  // a small copy, rows into every other 128 bytes, a large copy, a done report
  round.to_host(*r, 0, small.data(), small.size())
      .copy(rig_copy{harness::region_side(*r, 8192), harness::host_side(strided.data()), 64, 128, 128, 256})
      .to_host(*r, kLarge, large.data(), large.size());
  remote::test_hook::set(&count_hook);  // release: the hook's state above comes first
  for (int i = 0; i < 3; ++i) dev.wait(dev.run(round));  // the reused buffers grow here
  const std::uint64_t warm = g_receiver_allocations.load(std::memory_order_acquire);
  for (int i = 0; i < 20; ++i) dev.wait(dev.run(round));
  const std::uint64_t after = g_receiver_allocations.load(std::memory_order_acquire);
  remote::test_hook::set(nullptr);
  EXPECT_EQ(after, warm) << "the receiving thread allocated in 20 rounds of reports and bytes";
  EXPECT_EQ(0, std::memcmp(small.data(), pattern.data(), small.size()));
  EXPECT_EQ(0, std::memcmp(large.data(), pattern.data() + kLarge, large.size()));
  for (std::size_t row = 0; row < 64; ++row) {
    ASSERT_EQ(0, std::memcmp(strided.data() + row * 256, pattern.data() + 8192 + row * 128, 128)) << "row " << row;
  }
}

}  // namespace
}  // namespace rig::test

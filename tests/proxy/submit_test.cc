// The page's Work section: room and submit.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "fixture.h"
#include "process_facts.h"
#include "rig/program/program.h"
#include "test_hook.h"

namespace rig::test {
namespace {

// How often a submit has reached its wait here (test_hook kSubmitWaitsHere). release in the
// hook, acquire by the test: the submit has sent nothing of its handover when it counts.
std::atomic<int> g_waits_here{0};
void count_waits_here(remote::test_hook::Point p, std::uint32_t) {
  if (p == remote::test_hook::Point::kSubmitWaitsHere) g_waits_here.fetch_add(1, std::memory_order_release);
}
// Returns once a submit waits here (within 30 s, else the test fails).
void until_a_submit_waits_here() {
  EXPECT_GE(within(std::chrono::seconds(30), [] { return g_waits_here.load(std::memory_order_acquire) > 0; }).count(), 0)
      << "no submit reached its wait here";
}

class Submit : public AgentSuite {};

TEST_F(Submit, RoomIsNeverForPartsOtherThanWordsAndCopies) {
  Driven dev(*link_, 1);
  rig_part p{};
  p.kind = RIG_PART_KERNEL;
  Work w;
  w.part(p);
  EXPECT_EQ(dev.room(w), RIG_NEVER);
}

TEST_F(Submit, RoomIsNeverForWordsOnAProxyOtherThanTheHost) {
  Driven dev(*link_, 1), host(*link_, 0);
  Work w;
  w.words(1, 0, {1, 2});
  EXPECT_EQ(dev.room(w), RIG_NEVER);
  EXPECT_EQ(host.room(w), RIG_FITS);
}

TEST_F(Submit, RoomIsNeverForACopyFromHereAfterACopyIntoHere) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  std::byte a[64], b[64];
  Work bad;
  bad.to_host(*r, 0, a, 64).to_device(b, *r, 0, 64);
  EXPECT_EQ(dev.room(bad), RIG_NEVER);
  Work good;
  good.to_device(b, *r, 0, 64).to_host(*r, 0, a, 64);
  EXPECT_EQ(dev.room(good), RIG_FITS);
}

TEST_F(Submit, RoomIsNeverForCopiesItCannotRun) {
  Driven dev(*link_, 1);
  auto other_job = remote::Job::create();
  remote::Link& other = other_job->connect(agent_->endpoint());
  Driven far(other, 1);
  auto mine = dev->alloc(edge::Memory::kDevice, 64);
  auto theirs = far->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(mine && theirs);
  std::byte a[64], b[64];
  Work both_here;
  both_here.copy(rig_copy{harness::host_side(a), harness::host_side(b), 1, 64, 64, 64});
  EXPECT_EQ(dev.room(both_here), RIG_NEVER);
  Work other_link;
  other_link.between(*theirs, 0, *mine, 0, 64);
  EXPECT_EQ(dev.room(other_link), RIG_NEVER);
}

TEST_F(Submit, RoomIsLaterWhileMoreThan64MiBAreInFlightAndFitsWithNothingInFlight) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), gate(*link_, 2);
  auto big = a->alloc(edge::Memory::kDevice, 80u << 20);
  auto g = gate->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(big && g);
  // With nothing in flight, any submission it can run fits, however large.
  Work huge;
  huge.wait(gate.word(), 2, 1).between(*big, 0, *big, 0, 80u << 20);
  ASSERT_EQ(a.room(huge), RIG_FITS);
  const std::uint64_t v = a.run(huge);  // held on the agent until gate's value 1
  Work tiny;
  tiny.between(*big, 0, *big, 0, 64);
  EXPECT_EQ(a.room(tiny), RIG_LATER);
  Work open;
  open.between(*g, 0, *g, 0, 64);
  gate.wait(gate.run(open));
  a.wait(v);
  EXPECT_EQ(a.room(tiny), RIG_FITS);
}

TEST_F(Submit, WaitsOnProxiesOfTheLinkTravelInTheHandover) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  auto ra = a->alloc(edge::Memory::kDevice, 64);
  auto rb = b->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(ra && rb);
  Work held;
  held.wait(b.word(), 2, 1).between(*ra, 0, *ra, 0, 64);
  const std::uint64_t v = a.run(held);  // returns at once: the agent waits, not submit
  a->sleep(0, 50);
  EXPECT_LT(a->signaled(), v);
  Work go;
  go.between(*rb, 0, *rb, 0, 64);
  b.wait(b.run(go));
  a.wait(v);
}

TEST_F(Submit, WaitsOnOtherWordsWaitHereBeforeSending) {
  Driven a(*link_, 1);
  auto r = a->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  alignas(8) static std::uint64_t local_word = 0;  // a local device's timeline word
  std::atomic_ref<std::uint64_t>(local_word).store(0, std::memory_order_release);
  std::atomic<bool> returned{false};
  const std::uint64_t before = sent();
  g_waits_here.store(0, std::memory_order_relaxed);
  const remote::test_hook::Scoped hook(&count_waits_here);  // release: the store above comes first
  std::thread submitter([&] {
    Work w;
    w.wait(&local_word, 0, 3).between(*r, 0, *r, 0, 64);
    a.wait(a.run(w));
    returned.store(true, std::memory_order_release);
  });
  until_a_submit_waits_here();  // in its wait: whatever it sends comes after this look
  EXPECT_FALSE(returned.load(std::memory_order_acquire));
  EXPECT_EQ(sent(), before) << "the handover left before its wait was reached";
  std::atomic_ref<std::uint64_t>(local_word).store(3, std::memory_order_release);
  submitter.join();
  EXPECT_TRUE(returned.load(std::memory_order_acquire));
}

TEST_F(Submit, ACopyFromHereWaitsUntilTheEarlierCopyIntoHereLanded) {
  constexpr std::size_t kBytes = 8u << 20;
  std::vector<std::byte> bounce(kBytes, std::byte{0}), out(kBytes);
  Driven dev(*link_, 1);
  auto src = dev->alloc(edge::Memory::kDevice, kBytes);
  auto dst = dev->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(src && dst);
  std::vector<std::byte> pattern(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<std::byte>(i * 13 + 1);
  Work up;
  up.to_device(pattern.data(), *src, 0, kBytes);
  dev.run(up);
  Work down;
  down.to_host(*src, 0, bounce.data(), kBytes);
  dev.run(down);  // not waited for by the test
  Work back;
  back.to_device(bounce.data(), *dst, 0, kBytes).to_host(*dst, 0, out.data(), kBytes);
  dev.wait(dev.run(back));  // submit must read bounce only once down's bytes landed
  EXPECT_EQ(out, pattern);
}

TEST_F(Submit, ACopyFromHereWaitsHereForTheWaitsOfTheLinksProxies) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  auto ra = a->alloc(edge::Memory::kDevice, 4096);
  auto rb = b->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(ra && rb);
  std::vector<std::byte> src(4096, std::byte{1});
  std::atomic<bool> returned{false};
  const std::uint64_t before = sent();
  g_waits_here.store(0, std::memory_order_relaxed);
  const remote::test_hook::Scoped hook(&count_waits_here);  // release: the store above comes first
  std::thread submitter([&] {
    Work w;
    w.wait(b.word(), 2, 1).to_device(src.data(), *ra, 0, 4096);
    a.wait(a.run(w));
    returned.store(true, std::memory_order_release);
  });
  until_a_submit_waits_here();  // in its wait: whatever it sends comes after this look
  EXPECT_FALSE(returned.load(std::memory_order_acquire));
  EXPECT_EQ(sent(), before) << "the copy's bytes left before the work it follows was done";
  Work go;
  go.between(*rb, 0, *rb, 0, 64);
  b.wait(b.run(go));
  submitter.join();
  EXPECT_TRUE(returned.load(std::memory_order_acquire));
}

TEST_F(Submit, TheSourceBytesAreReadBeforeSubmitReturns) {
  constexpr std::size_t kBytes = 16u << 20;
  std::vector<std::byte> out(kBytes);
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(r);
  std::vector<std::byte> src(kBytes);
  // Several rounds, each with its own pattern: a send that returned while the kernel still read
  // the caller's memory (the tail of the message, still queued on the socket) has one chance
  // per round to carry the overwritten bytes.
  for (std::uint8_t round = 1; round <= 32; ++round) {
    const auto pattern = static_cast<std::byte>(round);
    std::fill(src.begin(), src.end(), pattern);
    Work w;
    w.to_device(src.data(), *r, 0, kBytes);
    const std::uint64_t v = dev.run(w);
    // The caller reuses its memory at once, from the end: the bytes that leave last first.
    std::fill(src.rbegin(), src.rend(), std::byte{0x99});
    dev.wait(v);
    Work back;
    back.to_host(*r, 0, out.data(), kBytes);
    dev.wait(dev.run(back));
    const auto wrong = std::find_if(out.begin(), out.end(), [&](std::byte b) { return b != pattern; });
    ASSERT_EQ(wrong, out.end()) << "round " << int{round} << ": byte " << (wrong - out.begin())
                                << " is not the source's byte at submit";
  }
}

TEST_F(Submit, WordsCountTowardsThe64MiBInFlight) {
  Driven host(*link_, 0), gate(*link_, 1);
  auto bin = program::assemble("func counter params=1 buffers=0\n ld r0, p0[0]\n add r0, r0, 1\n"
                               " st p0[0], r0\n ret\nend\n");
  ASSERT_TRUE(std::holds_alternative<std::vector<std::byte>>(bin));
  auto loaded = host->image(std::get<std::vector<std::byte>>(bin));
  ASSERT_TRUE((std::holds_alternative<edge::Loaded<remote::Region, remote::Image>>(loaded)));
  const remote::Image img = std::get<edge::Loaded<remote::Region, remote::Image>>(loaded).image;
  const auto e = host->entry(img, "counter");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  auto r = host->alloc(edge::Memory::kDevice, 16u << 20);
  auto g = gate->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r && g);
  Work exactly;  // 64 MiB of copies, held on the agent until gate's value 1
  exactly.wait(gate.word(), 1, 1);
  for (int i = 0; i < 4; ++i) exactly.between(*r, 0, *r, 0, 16u << 20);
  host.run(exactly);
  Work tiny;
  tiny.between(*r, 0, *r, 0, 4);
  ASSERT_EQ(host.room(tiny), RIG_FITS);  // 64 MiB in flight is not more than 64 MiB
  Work words;  // one word more, also held
  words.wait(gate.word(), 1, 1).words(img.id, std::get<edge::Entry>(e).function,
                                      {static_cast<std::uint32_t>(r->id)});
  const std::uint64_t v = host.run(words);
  EXPECT_EQ(host.room(tiny), RIG_LATER);
  Work open;
  open.between(*g, 0, *g, 0, 64);
  gate.wait(gate.run(open));
  host.wait(v);
  EXPECT_EQ(host.room(tiny), RIG_FITS);
}

TEST_F(Submit, ContiguousRowsGoOutInPlaceAndStridedRowsArePacked) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 1 << 20);
  ASSERT_TRUE(r);
  std::vector<std::byte> buf(1 << 20);
  const std::uint64_t staged0 = link_->counters().bytes_staged;
  Work flat;
  flat.copy(rig_copy{harness::host_side(buf.data()), harness::region_side(*r, 0), 256, 4096, 4096, 4096});
  dev.wait(dev.run(flat));
  EXPECT_EQ(link_->counters().bytes_staged, staged0);
  Work strided;
  strided.copy(rig_copy{harness::host_side(buf.data()), harness::region_side(*r, 0), 128, 4096, 8192, 8192});
  dev.wait(dev.run(strided));
  EXPECT_EQ(link_->counters().bytes_staged, staged0 + 128 * 4096);
}

TEST_F(Submit, WithoutMemoryToPackRowsSubmitFailsAndTheJobGoesOn) {
  remote::LinkOptions options;
  options.staging.allocate = [](std::size_t) -> void* { return nullptr; };
  options.staging.release = [](void*) {};
  remote::Link& link = job_->connect(agent_->endpoint(), options);
  std::vector<std::byte> down(1 << 20);
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 1 << 20);
  ASSERT_TRUE(r);
  std::vector<std::byte> buf(1 << 20, std::byte{4});
  const std::uint64_t before = link.counters().bytes_sent;
  Work strided;
  strided.copy(rig_copy{harness::host_side(buf.data()), harness::region_side(*r, 0), 64, 4096, 8192, 8192});
  const auto s = dev.submit(strided);
  EXPECT_EQ(s.rc, RIG_FAILED);
  EXPECT_EQ(s.why, "out of memory for a hand-over");
  EXPECT_EQ(link.counters().bytes_sent, before);  // nothing of it was sent
  EXPECT_FALSE(job_->failed());
  // Rows end to end need no packing: they still go, in place.
  Work flat;
  flat.to_device(buf.data(), *r, 0, 1 << 20).to_host(*r, 0, down.data(), 1 << 20);
  dev.wait(dev.run(flat));
  EXPECT_EQ(buf, down);
}

TEST_F(Submit, ASubmitWaitingHereReturnsOnceTheCloseBegins) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  alignas(8) static std::uint64_t never = 0;  // a local word nobody advances
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job_->close();
  });
  Work w;
  w.wait(&never, 0, 1).between(*r, 0, *r, 0, 64);
  const auto s = dev.submit(w);
  closer.join();
  EXPECT_EQ(s.rc, RIG_FAILED);
  EXPECT_EQ(s.why, "the job is closed");
}

TEST_F(Submit, ASubmitWaitingHereReturnsOnceTheJobFails) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  auto ra = a->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(ra);
  std::vector<std::byte> src(64);
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job_->fail("failed while submit waited");
  });
  Work w;  // a copy from here waits here for b's value 1, which never comes
  w.wait(b.word(), 2, 1).to_device(src.data(), *ra, 0, 64);
  const auto s = a.submit(w);
  failer.join();
  EXPECT_EQ(s.rc, RIG_FAILED);
  EXPECT_EQ(s.why, "failed while submit waited");
}

TEST_F(Submit, CommitDoesNothing) {
  Driven dev(*link_, 1);
  const std::uint64_t before = sent();
  rig_proxy_commit(dev->c_handle());
  EXPECT_EQ(sent(), before);
}

TEST_F(Submit, AfterTheCloseBeganCallsThatAskRaiseAndSubmitFailsWithTheJobIsClosed) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  job_->close();
  try {
    dev->alloc(edge::Memory::kDevice, 64);
    FAIL();
  } catch (const edge::Fault& f) {
    EXPECT_STREQ(f.what(), "the job is closed");
  }
  Work w;
  w.between(*r, 0, *r, 0, 64);
  const auto s = dev.submit(w);
  EXPECT_EQ(s.rc, RIG_FAILED);
  EXPECT_EQ(s.why, "the job is closed");
  dev->free(*r);  // behaves as before: no throw
  dev->sleep(dev->signaled(), 10);  // bounded by still_ms, no Fault for a close
}

}  // namespace
}  // namespace rig::test

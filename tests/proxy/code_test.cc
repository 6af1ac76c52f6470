// The page's Code section and words parts: image, entry, prepare, unload, and a program run
// on the remote host whose result comes back exact.
#include <cstring>
#include <numeric>
#include <random>

#include "fixture.h"
#include "rig/program/program.h"

namespace rig::test {
namespace {

const char* kCounter = R"(
func counter params=1 buffers=0
    ld    r0, p0[0]
    add   r0, r0, 1
    st    p0[0], r0
    ret
end
func big params=0 scratch=50331648
    ret
end
func medium params=0 scratch=8388608
    ret
end
func scratchy params=1 buffers=0 scratch=4096
    ld    r0, p0[0]
    st    scratch[1000], r0
    ld    r1, scratch[1000]
    add   r1, r1, 5
    st    p0[0], r1
    ret
end
)";

const char* kAdd = R"(
func add params=3 buffers=0,1,2
    size  r0, p2
    const r2, 0
    bgeu  r2, r0, done
loop:
    ld    r3, p0[r2]
    ld    r4, p1[r2]
    add   r3, r3, r4
    st    p2[r2], r3
    add   r2, r2, 1
    bltu  r2, r0, loop
done:
    ret
end
)";

class Code : public AgentSuite {
 protected:
  remote::Image load(Driven& host, const char* text) {
    auto r = host->image(std::span<const std::byte>(assemble(text)));
    if (auto* why = std::get_if<std::string>(&r)) throw std::runtime_error(*why);
    return std::get<edge::Loaded<remote::Region, remote::Image>>(r).image;
  }
  // The function `name` of `img`, its entry made on the host (none fails the test).
  static std::uint32_t function(Driven& host, const remote::Image& img, const char* name) {
    const auto e = host->entry(img, name);
    if (!std::holds_alternative<edge::Entry>(e)) throw std::runtime_error(std::string("no entry ") + name);
    return std::get<edge::Entry>(e).function;
  }
};

TEST_F(Code, AProxyOtherThanTheHostLoadsNoCode) {
  Driven dev(*link_, 1);
  const std::uint64_t before = sent();
  auto r = dev->image(std::span<const std::byte>(assemble(kCounter)));
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_NE(std::get<std::string>(r).find("loads no code"), std::string::npos);
  EXPECT_EQ(sent(), before);
}

TEST_F(Code, TheHostRefusesABinaryWithTheVerifiersReason) {
  Driven host(*link_, 0);
  const std::string junk = "RIGPnot a program at all";
  auto r = host->image(std::as_bytes(std::span(junk)));
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_FALSE(std::get<std::string>(r).empty());
  EXPECT_FALSE(job_->failed());
}

TEST_F(Code, EntryIsEntryOrAbsentAndASecondCallMakesNothingNew) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  const edge::EntryAnswer e = host->entry(img, "counter");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  const std::uint64_t before = sent();
  const edge::EntryAnswer again = host->entry(img, "counter");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(again));
  EXPECT_EQ(std::get<edge::Entry>(again).function, std::get<edge::Entry>(e).function);
  EXPECT_EQ(sent(), before);  // answered from what the first call made
  EXPECT_TRUE(std::holds_alternative<edge::Absent>(host->entry(img, "nope")));
}

TEST_F(Code, EntryOfAFunctionNeedingMoreThanTheDeviceOffersThrowsInvalidArgument) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  try {
    host->entry(img, "big");
    FAIL() << "entry of a function whose scratch exceeds the host's budget";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("more than the host offers"), std::string::npos) << e.what();
  }
}

TEST_F(Code, EntryIsNoMemoryWhenTheDeviceLacksTheRoomAndMakesNothing) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  auto hog = host->alloc(edge::Memory::kDevice, 30u << 20);
  ASSERT_TRUE(hog);
  const edge::EntryAnswer e = host->entry(img, "medium");
  ASSERT_TRUE(std::holds_alternative<edge::NoMemory>(e));
  EXPECT_EQ(std::get<edge::NoMemory>(e).bytes, 8u << 20);
  host->free(*hog);
  // rig reclaims and asks again: now it fits.
  edge::EntryAnswer later = e;
  for (int i = 0; i < 100 && !std::holds_alternative<edge::Entry>(later); ++i) later = host->entry(img, "medium");
  EXPECT_TRUE(std::holds_alternative<edge::Entry>(later));
}

TEST_F(Code, PrepareStartsOnceAndTheNextEntryAnswersAsIfItMadeIt) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  const std::uint64_t before = sent();
  host->prepare(img, "counter");
  const std::uint64_t after_one = sent();
  EXPECT_GT(after_one, before);
  host->prepare(img, "counter");  // started already: starts nothing
  EXPECT_EQ(sent(), after_one);
  EXPECT_TRUE(std::holds_alternative<edge::Entry>(host->entry(img, "counter")));
  const std::uint64_t with_entry = sent();
  host->prepare(img, "counter");  // has an entry: starts nothing
  EXPECT_EQ(sent(), with_entry);
  host->prepare(img, "nope");     // reports nothing, failures included
  EXPECT_TRUE(std::holds_alternative<edge::Absent>(host->entry(img, "nope")));
  EXPECT_FALSE(job_->failed());
}

TEST_F(Code, AProgramRunsOnTheRemoteHostAndItsResultComesBackExact) {
  constexpr std::size_t kWords = 100000;
  std::vector<std::uint32_t> c(kWords, 0);
  Driven host(*link_, 0);
  const remote::Image img = load(host, kAdd);
  const auto e = host->entry(img, "add");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  std::vector<std::uint32_t> a(kWords), b(kWords);
  std::mt19937 rng(5);
  for (auto& x : a) x = rng();
  for (auto& x : b) x = rng();
  auto ra = host->alloc(edge::Memory::kDevice, kWords * 4);
  auto rb = host->alloc(edge::Memory::kDevice, kWords * 4);
  auto rc = host->alloc(edge::Memory::kDevice, kWords * 4);
  ASSERT_TRUE(ra && rb && rc);
  Work w;
  w.to_device(a.data(), *ra, 0, kWords * 4)
      .to_device(b.data(), *rb, 0, kWords * 4)
      .words(img.id, std::get<edge::Entry>(e).function,
             {static_cast<std::uint32_t>(ra->id), static_cast<std::uint32_t>(rb->id),
              static_cast<std::uint32_t>(rc->id)})
      .to_host(*rc, 0, c.data(), kWords * 4);
  host.wait(host.run(w));
  for (std::size_t i = 0; i < kWords; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "word " << i;
}

TEST_F(Code, WordsAndCopiesRunInHandoverOrderOnBothQueues) {
  std::uint32_t after_two = 0, after_three = 0;
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  const std::uint32_t fn = function(host, img, "counter");
  auto r = host->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  const std::uint32_t zero[16] = {};
  const auto id = static_cast<std::uint32_t>(r->id);
  Work w;
  w.to_device(zero, *r, 0, 64, RIG_QUEUE_COPY)
      .words(img.id, fn, {id}, RIG_QUEUE_COMPUTE)
      .words(img.id, fn, {id}, RIG_QUEUE_COPY)
      .to_host(*r, 0, &after_two, 4, RIG_QUEUE_COPY)
      .words(img.id, fn, {id}, RIG_QUEUE_COMPUTE)
      .to_host(*r, 0, &after_three, 4, RIG_QUEUE_COMPUTE);
  host.wait(host.run(w));
  EXPECT_EQ(after_two, 2u);
  EXPECT_EQ(after_three, 3u);
}

// Each words part takes its own words, those after the earlier words parts' (PROTOCOL.md 5.6),
// however many copies come before it: copies first, then three launches on two regions whose
// words differ, so a part that took another's words (or none) leaves other counts.
TEST_F(Code, EachWordsPartTakesItsOwnWordsAfterCopiesAndOtherLaunches) {
  std::uint32_t counts[2] = {7, 7};
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  const std::uint32_t fn = function(host, img, "counter");
  auto a = host->alloc(edge::Memory::kDevice, 64);
  auto b = host->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(a && b);
  const std::uint32_t zero[16] = {};
  const auto ia = static_cast<std::uint32_t>(a->id), ib = static_cast<std::uint32_t>(b->id);
  Work w;
  w.to_device(zero, *a, 0, 64)
      .to_device(zero, *b, 0, 64)
      .words(img.id, fn, {ia})
      .words(img.id, fn, {ib})
      .words(img.id, fn, {ib})
      .to_host(*a, 0, &counts[0], 4)
      .to_host(*b, 0, &counts[1], 4);
  host.wait(host.run(w));
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[1], 2u);
}

TEST_F(Code, UnloadIsSentAfterEarlierWork) {
  std::uint32_t out = 7;
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  const auto e = host->entry(img, "counter");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  auto r = host->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  const std::uint32_t zero[16] = {};
  Work w;
  w.to_device(zero, *r, 0, 64).words(img.id, std::get<edge::Entry>(e).function,
                                      {static_cast<std::uint32_t>(r->id)}).to_host(*r, 0, &out, 4);
  const std::uint64_t v = host.run(w);
  host->unload(img);
  host.wait(v);
  EXPECT_EQ(out, 1u);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Code, PrepareNeverRaises) {
  // "A prepare that raises must have changed nothing": in C++ it cannot raise at all; a
  // failure to record the start is swallowed before anything changed.
  static_assert(noexcept(std::declval<remote::Proxy&>().prepare(std::declval<const remote::Image&>(),
                                                                std::declval<const std::string&>())));
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  EXPECT_NO_THROW(host->prepare(img, ""));
  EXPECT_NO_THROW(host->prepare(img, std::string(500, 'x')));
  EXPECT_TRUE(std::holds_alternative<edge::Absent>(host->entry(img, std::string(500, 'x'))));
}

TEST_F(Code, TheHostsRefusalIsTheVerifiersOwnReason) {
  Driven host(*link_, 0);
  auto bin = assemble(kCounter);
  bin[bin.size() / 2] = std::byte{0xff};  // corrupt the code
  auto expected = program::Image::load(bin);
  ASSERT_TRUE(std::holds_alternative<std::string>(expected));
  auto r = host->image(bin);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_EQ(std::get<std::string>(r), std::get<std::string>(expected));
}

TEST_F(Code, AfterEntryALaunchAllocatesNothingEvenWithTheBudgetExhausted) {
  std::uint32_t out = 0;
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  const auto e = host->entry(img, "scratchy");  // makes the launch's 4 KiB of scratch
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  auto r = host->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  // Take every byte left on the host.
  std::vector<remote::Region> hogs;
  for (std::uint64_t chunk = 16u << 20; chunk >= 64; chunk /= 2) {
    while (auto h = host->alloc(edge::Memory::kDevice, chunk)) hogs.push_back(*h);
  }
  ASSERT_FALSE(host->alloc(edge::Memory::kDevice, 64));
  const std::uint32_t seven[16] = {7};
  Work w;
  w.to_device(seven, *r, 0, 64).words(img.id, std::get<edge::Entry>(e).function,
                                       {static_cast<std::uint32_t>(r->id)}).to_host(*r, 0, &out, 4);
  host.wait(host.run(w));
  EXPECT_EQ(out, 12u);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Code, AnUnloadAfterAnOldHostProxysStopTouchesNothingOfTheNewOne) {
  std::optional<remote::Image> old_image;
  {
    Driven old(*link_, 0);
    old_image = load(old, kCounter);
    ASSERT_TRUE(std::holds_alternative<edge::Entry>(old->entry(*old_image, "counter")));
    old.stop();
    std::uint32_t out = 9;
    Driven fresh(*link_, 0);  // the old one handed nothing over: the account is free again
    const remote::Image img = load(fresh, kCounter);
    const auto e = fresh->entry(img, "counter");
    ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
    old->unload(*old_image);
    auto r = fresh->alloc(edge::Memory::kDevice, 64);
    ASSERT_TRUE(r);
    const std::uint32_t zero[16] = {};
    Work w;
    w.to_device(zero, *r, 0, 64).words(img.id, std::get<edge::Entry>(e).function,
                                        {static_cast<std::uint32_t>(r->id)}).to_host(*r, 0, &out, 4);
    fresh.wait(fresh.run(w));
    EXPECT_EQ(out, 1u);
    EXPECT_FALSE(job_->failed()) << job_->fault_text();
  }
}

TEST_F(Code, NoMemoryMakesNothingAndUnloadGivesBackWhatEntryMade) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  auto hog = host->alloc(edge::Memory::kDevice, 30u << 20);
  ASSERT_TRUE(hog);
  ASSERT_TRUE(std::holds_alternative<edge::NoMemory>(host->entry(img, "medium")));
  // Nothing was taken: the last 2 MiB are still there.
  auto rest = host->alloc(edge::Memory::kDevice, 2u << 20);
  ASSERT_TRUE(rest);
  host->free(*rest);
  host->free(*hog);
  edge::EntryAnswer e = edge::Absent{};
  for (int i = 0; i < 100 && !std::holds_alternative<edge::Entry>(e); ++i) e = host->entry(img, "medium");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  // The entry holds 8 MiB of scratch: 32 MiB no longer fit; unload gives them back.
  EXPECT_FALSE(host->alloc(edge::Memory::kDevice, 30u << 20));
  host->unload(img);
  std::optional<remote::Region> all;
  for (int i = 0; i < 100 && !all; ++i) all = host->alloc(edge::Memory::kDevice, 30u << 20);
  EXPECT_TRUE(all);
}

TEST_F(Code, TheAgentKeepsAnUnloadedImageForWorkSubmittedBefore) {
  std::uint32_t out = 0;
  Driven host(*link_, 0), gate(*link_, 1);
  const remote::Image img = load(host, kCounter);
  const auto e = host->entry(img, "counter");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  auto r = host->alloc(edge::Memory::kDevice, 64);
  auto g = gate->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r && g);
  const std::uint32_t zero[16] = {};
  Work fill;
  fill.to_device(zero, *r, 0, 64);
  host.wait(host.run(fill));
  Work held;  // pending on the agent until gate's value 1
  held.wait(gate.word(), 1, 1)
      .words(img.id, std::get<edge::Entry>(e).function, {static_cast<std::uint32_t>(r->id)})
      .to_host(*r, 0, &out, 4);
  const std::uint64_t v = host.run(held);
  host->unload(img);
  Work open;
  open.between(*g, 0, *g, 0, 64);
  gate.wait(gate.run(open));
  host.wait(v);
  EXPECT_EQ(out, 1u);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Code, UnloadAndPrepareSendNothingOnceTheJobFailed) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  job_->fail("gone");
  const std::uint64_t before = sent();
  host->unload(img);
  EXPECT_NO_THROW(host->prepare(img, "counter"));  // reports nothing
  EXPECT_EQ(sent(), before);
}

TEST_F(Code, ImageAndEntryRaiseTheJobIsClosedOnceTheCloseBeganAlsoForAKeptEntry) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(host->entry(img, "counter")));  // kept
  job_->close();
  for (int call = 0; call < 3; ++call) {
    try {
      if (call == 0) host->image(std::span<const std::byte>(assemble(kCounter)));
      else host->entry(img, call == 1 ? "counter" : "nope");
      FAIL() << "call " << call;
    } catch (const edge::Fault& f) {
      EXPECT_STREQ(f.what(), "the job is closed");
    }
  }
}

TEST(CodeBudget, ALaunchPastItsInstructionBudgetFaultsTheHostAndFailsTheJobWithItsReason) {
  AgentProcess agent({"--instruction-budget", "100000"});
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven host(link, 0);
  auto r = host->image(std::span<const std::byte>(assemble("func spin params=0\nloop:\n jmp loop\nend\n")));
  ASSERT_TRUE((std::holds_alternative<edge::Loaded<remote::Region, remote::Image>>(r)));
  const remote::Image img = std::get<edge::Loaded<remote::Region, remote::Image>>(r).image;
  const auto e = host->entry(img, "spin");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  Work w;
  w.words(img.id, std::get<edge::Entry>(e).function, {});
  const std::uint64_t v = host.run(w);
  try {
    host.wait(v, 30000);
    FAIL() << "the endless launch was reported done";
  } catch (const edge::Fault& f) {
    const std::string why = f.what();
    EXPECT_NE(why.find("faulted"), std::string::npos) << why;
    EXPECT_NE(why.find("spin"), std::string::npos) << why;
    EXPECT_EQ(why.find("protocol violation"), std::string::npos) << "a device's fault is not the client's: " << why;
  }
  EXPECT_TRUE(job->failed());
  EXPECT_TRUE(agent.alive());  // the agent itself goes on
}

TEST_F(Code, ImageAndEntryRaiseFaultOnceTheJobFailedAlsoForAKeptEntry) {
  Driven host(*link_, 0);
  const remote::Image img = load(host, kCounter);
  // Answers entry kept from before the failure do not escape it: entry raises for them too.
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(host->entry(img, "counter")));
  ASSERT_TRUE(std::holds_alternative<edge::Absent>(host->entry(img, "nope")));
  job_->fail("gone");
  EXPECT_THROW(host->image(std::span<const std::byte>(assemble(kCounter))), edge::Fault);
  EXPECT_THROW(host->entry(img, "counter"), edge::Fault);
  EXPECT_THROW(host->entry(img, "nope"), edge::Fault);
}

}  // namespace
}  // namespace rig::test

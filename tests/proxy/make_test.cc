// The page's "Proxies" section: device and make.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "link_core.h"
#include "fixture.h"

namespace rig::test {
namespace {

using remote::abi::Device;
using remote::abi::Host;

class Make : public AgentSuite {};

TEST_F(Make, DescribeRegistersAndSendsNothingAndNamesTheProxyAfterTheAccount) {
  RIG_NEED_DEVICES(*link_, 2);
  const std::uint64_t before = sent();
  const remote::Device d = remote::device(*link_, *link_->account(2), Device{2});
  EXPECT_EQ(d.name(), link_->account(2)->name);  // "sim2", or the GPU's name
  EXPECT_EQ(sent(), before);
  EXPECT_EQ(remote::LinkCore::of(*link_).slot(2), nullptr);
}

TEST_F(Make, MakeRegistersAndSendsNothing) {
  const std::uint64_t before = sent();
  alignas(8) std::uint64_t word = 0;
  auto p = remote::device(*link_, *link_->account(1), Device{1}).make(&word);
  EXPECT_EQ(sent(), before);
  EXPECT_NE(remote::LinkCore::of(*link_).slot(1), nullptr);
  EXPECT_EQ(p->name(), link_->account(1)->name);
  p->stop(std::nullopt);
}

TEST_F(Make, ValuesStartAfterTheValueTheWordHolds) {
  Driven dev(*link_, 1, /*initial_word=*/1000);
  EXPECT_EQ(dev->signaled(), 1000u);  // make keeps the value the word holds
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.between(*r, 0, *r, 0, 64);
  const std::uint64_t v = dev.run(w);
  EXPECT_EQ(v, 1001u);
  dev.wait(v);
  EXPECT_EQ(dev->signaled(), 1001u);
}

TEST_F(Make, AMisalignedWordIsRejected) {
  alignas(8) unsigned char bytes[16] = {};
  auto* misaligned = reinterpret_cast<std::uint64_t*>(bytes + 4);
  EXPECT_THROW(remote::device(*link_, *link_->account(1), Device{1}).make(misaligned), std::invalid_argument);
  EXPECT_EQ(remote::LinkCore::of(*link_).slot(1), nullptr);
}

TEST_F(Make, HostCapabilityForAnAccountOtherThanZeroIsRejected) {
  alignas(8) std::uint64_t word = 0;
  EXPECT_THROW(remote::device(*link_, *link_->account(1), Host{}).make(&word), std::invalid_argument);
  EXPECT_EQ(remote::LinkCore::of(*link_).slot(1), nullptr);
}

TEST_F(Make, DeviceCapabilityWithAnotherIdIsRejected) {
  alignas(8) std::uint64_t word = 0;
  EXPECT_THROW(remote::device(*link_, *link_->account(1), Device{2}).make(&word), std::invalid_argument);
  EXPECT_EQ(remote::LinkCore::of(*link_).slot(1), nullptr);
}

TEST_F(Make, ASecondProxyOfTheSameDeviceIsRejectedAndTheFirstKeepsWorking) {
  Driven first(*link_, 1);
  alignas(8) std::uint64_t word = 0;
  EXPECT_THROW(remote::device(*link_, *link_->account(1), Device{1}).make(&word), std::invalid_argument);
  auto r = first->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.between(*r, 0, *r, 0, 64);
  first.wait(first.run(w));
}

TEST_F(Make, AClosedProxyThatHandedWorkOverKeepsItsAccountTaken) {
  {
    Driven first(*link_, 1);
    auto r = first->alloc(edge::Memory::kDevice, 64);
    ASSERT_TRUE(r);
    Work w;
    w.between(*r, 0, *r, 0, 64);
    first.wait(first.run(w));
  }
  alignas(8) std::uint64_t word = 0;
  EXPECT_THROW(remote::device(*link_, *link_->account(1), Device{1}).make(&word), std::invalid_argument);
}

TEST_F(Make, AClosedProxyThatHandedNoneOverFreesItsAccount) {
  { Driven first(*link_, 1); }
  Driven second(*link_, 1);
  auto r = second->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.between(*r, 0, *r, 0, 64);
  second.wait(second.run(w));
}

TEST_F(Make, AProxyWhoseOnlySubmitFailedBeforeSendingHandedNothingOverButStopWritesItsValue) {
  remote::LinkOptions options;
  options.staging.allocate = [](std::size_t) -> void* { return nullptr; };  // no memory to pack
  options.staging.release = [](void*) {};
  remote::Link& link = job_->connect(agent_->endpoint(), options);
  {
    Driven first(link, 1);
    auto r = first->alloc(edge::Memory::kDevice, 1 << 16);
    ASSERT_TRUE(r);
    std::vector<std::byte> buf(1 << 16);
    Work strided;
    strided.copy(rig_copy{harness::host_side(buf.data()), harness::region_side(*r, 0), 4, 4096, 8192, 8192});
    const auto s = first.submit(strided);
    ASSERT_EQ(s.rc, RIG_FAILED);
    EXPECT_EQ(s.why, "out of memory for a hand-over");
    first.stop();
    EXPECT_EQ(first->signaled(), s.value) << "stop writes the last value given to submit";
  }
  // Nothing of it reached the agent: its account is free again.
  Driven second(link, 1);
  auto r = second->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.between(*r, 0, *r, 0, 64);
  second.wait(second.run(w));
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

// This process's resident memory, in bytes.
std::uint64_t resident_bytes() {
  std::uint64_t pages = 0, resident = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%lu %lu", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST_F(Make, TwoHundredMakeStopCyclesOnOneLinkHoldConstantMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "skipped under AddressSanitizer: its quarantine keeps freed memory resident";
#endif
  // stop releases what the driver made to run work (each proxy's queues: about 1.25 MiB).
  for (int i = 0; i < 10; ++i) Driven(*link_, 1).stop();
  const std::uint64_t before = resident_bytes();
  for (int i = 0; i < 200; ++i) Driven(*link_, 1).stop();
  EXPECT_LT(resident_bytes(), before + (32u << 20)) << "200 cycles kept their queues (about 250 MiB)";
}

TEST_F(Make, AFreeAfterAnOldProxysStopTouchesNothingOfTheNewOne) {
  RIG_NEED_DEVICES(*link_, 2);
  std::optional<remote::Region> old_region;
  {
    Driven old(*link_, 2);
    // The old region takes all of the device's budget but 8 KiB.
    const std::uint64_t budget = old->facts().budget;
    old_region = old->alloc(edge::Memory::kDevice, budget - 8192);
    ASSERT_TRUE(old_region);
    old.stop();
    // rig may free after stop; here it frees after a new proxy of the account was made.
    std::vector<std::byte> down(4096);
    Driven fresh(*link_, 2);
    auto r = fresh->alloc(edge::Memory::kDevice, 4096);
    ASSERT_TRUE(r);
    EXPECT_FALSE(fresh->alloc(edge::Memory::kDevice, 8192));  // the old region holds the rest
    std::vector<std::byte> up(4096, std::byte{9});
    old->free(*old_region);
    Work w;
    w.to_device(up.data(), *r, 0, 4096).to_host(*r, 0, down.data(), 4096);
    fresh.wait(fresh.run(w));
    EXPECT_EQ(up, down);
    // The free after stop reached the agent: it releases the old region (after every earlier
    // message), and its memory comes back to the new proxy.
    std::optional<remote::Region> again;
    for (int i = 0; i < 100 && !again; ++i) again = fresh->alloc(edge::Memory::kDevice, 8192);
    EXPECT_TRUE(again);
    EXPECT_FALSE(job_->failed()) << job_->fault_text();
  }
}

}  // namespace
}  // namespace rig::test

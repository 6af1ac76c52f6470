// The page's driver calls on memory: key, facts, alloc, free, locate, peer, map_peer,
// map_host, dma, grow, capability.
#include <signal.h>

#include <cstring>

#include "fixture.h"
#include "raw_peer.h"

namespace rig::test {
namespace {

class Memory : public AgentSuite {};

TEST_F(Memory, KeyIsTheSameForEveryProxy) {
  Driven a(*link_, 1), b(*link_, 0);
  EXPECT_EQ(a->key(), b->key());
  EXPECT_NE(a->key(), nullptr);
}

TEST_F(Memory, FactsAreThePagesTable) {
  Driven dev(*link_, 1);
  const auto f = dev->facts();
  const remote::Account& a = *link_->account(1);
  EXPECT_EQ(f.arch, a.arch);  // "sim", or the GPU's sm_XY
  EXPECT_EQ(f.budget, a.budget);
  EXPECT_EQ(f.queues, (std::vector<std::string>{"COMPUTE:0", "COPY:0"}));
  ASSERT_TRUE(f.copy_engine);
  EXPECT_EQ(f.copy_engine->count, 1);
  EXPECT_EQ(f.copy_engine->queue, "COPY:0");
  EXPECT_EQ(f.completion, edge::Completion::kHost);
  EXPECT_TRUE(f.waits.hosts);
  EXPECT_EQ(f.waits.most, UINT64_MAX);
  EXPECT_TRUE(f.may_block);
  EXPECT_FALSE(f.hang_ms);
  EXPECT_FALSE(f.maps_host);
  EXPECT_FALSE(f.host_addresses);
  EXPECT_EQ(f.cache_bytes, a.cache_bytes);
  EXPECT_EQ(f.word.kind, remote::Region::Kind::kWord);
  EXPECT_EQ(f.word.word, dev.word());
  EXPECT_FALSE(f.bus);
  ASSERT_TRUE(std::holds_alternative<remote::abi::Device>(dev->capability()));
  ASSERT_TRUE(std::holds_alternative<remote::abi::Device>(f.capability));
  EXPECT_EQ(std::get<remote::abi::Device>(f.capability).id, 1u);
  EXPECT_EQ(std::get<remote::abi::Device>(dev->capability()).id, 1u);
  Driven host(*link_, 0);
  EXPECT_EQ(host->facts().arch, "x86_64");
  EXPECT_TRUE(std::holds_alternative<remote::abi::Host>(host->capability()));
}

TEST_F(Memory, AllocTakesOnlyPositiveMultiplesOfAWord) {
  Driven dev(*link_, 1);
  EXPECT_THROW(dev->alloc(edge::Memory::kDevice, 0), std::invalid_argument);
  EXPECT_THROW(dev->alloc(edge::Memory::kDevice, 6), std::invalid_argument);
  EXPECT_TRUE(dev->alloc(edge::Memory::kDevice, 8));
}

TEST_F(Memory, AllocPastTheBudgetIsNone) {
  Driven dev(*link_, 1);
  const std::uint64_t budget = dev->facts().budget;
  auto most = dev->alloc(edge::Memory::kDevice, budget - 1024);
  ASSERT_TRUE(most);
  EXPECT_FALSE(dev->alloc(edge::Memory::kDevice, 2048));
  dev->free(*most);
  // The agent releases it (after every earlier message): the room comes back.
  std::optional<remote::Region> again;
  for (int i = 0; i < 100 && !again; ++i) again = dev->alloc(edge::Memory::kDevice, 2048);
  EXPECT_TRUE(again);
}

TEST_F(Memory, AllocOfAMemoryTheDeviceLacksIsNone) {
  Driven dev(*link_, 1);
  EXPECT_FALSE(dev->alloc(edge::Memory::kHost, 64));
}

TEST_F(Memory, FreeOfTheWordSendsNothing) {
  Driven dev(*link_, 1);
  const std::uint64_t before = sent();
  dev->free(dev->facts().word);
  EXPECT_EQ(sent(), before);
}

TEST_F(Memory, FreeComesAfterEarlierWorkAndTheAgentKeepsTheMemoryForIt) {
  RIG_NEED_DEVICES(*link_, 2);
  std::vector<std::byte> down(1 << 20);
  Driven a(*link_, 1), b(*link_, 2);
  auto src = a->alloc(edge::Memory::kDevice, 1 << 20);
  auto gate = b->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(src && gate);
  std::vector<std::byte> up(1 << 20);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<std::byte>(i * 7);
  Work fill;
  fill.to_device(up.data(), *src, 0, up.size());
  a.wait(a.run(fill));
  // This work waits on b's next value, which is not submitted yet: it stays pending on the agent.
  Work held;
  held.wait(b.word(), 2, b.last_value() + 1).to_host(*src, 0, down.data(), down.size());
  const std::uint64_t v = a.run(held);
  a->free(*src);  // sent after the handover; the agent must keep the memory for it
  Work go;
  go.between(*gate, 0, *gate, 0, 64);
  b.wait(b.run(go));
  a.wait(v);
  EXPECT_EQ(up, down);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Memory, LocateOfMemoryIsItsHandleAlone) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  const edge::Location l = remote::Proxy::locate(*r);
  EXPECT_EQ(l.handle, r->id);
  EXPECT_FALSE(l.address);
  EXPECT_FALSE(l.host);
}

TEST_F(Memory, LocateOfTheWordIsTheDeviceIdItsAddressAndHandleZero) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven dev(*link_, 2);
  const edge::Location l = remote::Proxy::locate(dev->facts().word);
  ASSERT_TRUE(l.address);
  EXPECT_EQ(*l.address, 2u);
  ASSERT_TRUE(l.host);
  EXPECT_EQ(*l.host, reinterpret_cast<std::uintptr_t>(dev.word()));
  EXPECT_EQ(l.handle, 0u);
}

TEST_F(Memory, PeerFollowsTheAccountWithTheLargerId) {
  RIG_NEED_DEVICES(*link_, 3);
  RIG_NEED_ISOLATED(*link_, 3);
  Driven a(*link_, 1), b(*link_, 2), isolated(*link_, 3);
  ASSERT_TRUE((link_->account(2)->reaches >> 1) & 1u);
  ASSERT_FALSE((link_->account(3)->reaches >> 1) & 1u);  // the agent runs with --isolated 3
  EXPECT_TRUE(remote::Proxy::peer(a.proxy(), b.proxy()));
  EXPECT_TRUE(remote::Proxy::peer(b.proxy(), a.proxy()));
  EXPECT_FALSE(remote::Proxy::peer(a.proxy(), isolated.proxy()));
  EXPECT_FALSE(remote::Proxy::peer(isolated.proxy(), a.proxy()));
  // Also once either is lost.
  b.stop();
  isolated.stop();
  EXPECT_TRUE(remote::Proxy::peer(a.proxy(), b.proxy()));
  EXPECT_FALSE(remote::Proxy::peer(a.proxy(), isolated.proxy()));
}

// Reach that is not symmetric tells "the account with the larger id" from either's own.
TEST(MemoryFake, PeerFollowsTheAccountWithTheLargerIdWhereReachIsNotSymmetric) {
  std::vector<wire::Account> accounts = fake_accounts(2);
  accounts[1].reaches = 0b001;  // device 1's own account: it reaches neither itself nor device 2
  accounts[2].reaches = 0b111;  // device 2's, the larger id: devices 1 and 2 reach each other
  FakeAgent agent(accounts, [](int fd) { drain(fd); });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven a(link, 1), b(link, 2);
  EXPECT_TRUE(remote::Proxy::peer(a.proxy(), b.proxy()));
  EXPECT_TRUE(remote::Proxy::peer(b.proxy(), a.proxy()));
  job->close();
}

TEST_F(Memory, MapPeerIsNoneWhereTheAgentCannotMap) {
  RIG_NEED_ISOLATED(*link_, 3);
  Driven a(*link_, 1), isolated(*link_, 3);
  auto r = isolated->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  EXPECT_FALSE(a->map_peer(isolated.proxy(), *r));
  EXPECT_FALSE(job_->failed());
}

TEST_F(Memory, AMappingKeepsTheMemoryUntilItIsFreedAndFreeingItLeavesTheOriginal) {
  RIG_NEED_DEVICES(*link_, 2);
  std::vector<std::byte> down(4096), down2(4096);
  Driven a(*link_, 1), b(*link_, 2);
  auto rb = b->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(rb);
  auto m1 = a->map_peer(b.proxy(), *rb);
  auto m2 = a->map_peer(b.proxy(), *rb);  // mapped already, through another region: fine
  ASSERT_TRUE(m1 && m2);
  auto m3 = b->map_peer(a.proxy(), *m1);  // a mapping of a mapping
  ASSERT_TRUE(m3);
  std::vector<std::byte> up(4096, std::byte{0x5e});
  Work wb;
  wb.to_device(up.data(), *rb, 0, 4096);
  b.wait(b.run(wb));
  b->free(*rb);  // the original goes; the mappings keep the memory mapped
  a->free(*m2);
  Work wa;
  wa.to_host(*m1, 0, down.data(), 4096);
  a.wait(a.run(wa));
  EXPECT_EQ(up, down);
  Work wb2;
  wb2.to_host(*m3, 0, down2.data(), 4096);
  b.wait(b.run(wb2));
  EXPECT_EQ(up, down2);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Memory, MapPeerRaisesFaultOnceTheJobFailedAndOnceTheCloseBegan) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  auto rb = b->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(rb);
  job_->close();
  try {
    a->map_peer(b.proxy(), *rb);
    FAIL();
  } catch (const edge::Fault& f) {
    EXPECT_STREQ(f.what(), "the job is closed");
  }
  auto other = remote::Job::create();
  remote::Link& l2 = other->connect(agent_->endpoint());
  Driven c(l2, 1), d(l2, 2);
  auto rd = d->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(rd);
  other->fail("root");
  EXPECT_THROW(c->map_peer(d.proxy(), *rd), edge::Fault);
}

TEST_F(Memory, AfterFailureTheCallsThatDoNotAskBehaveAsBefore) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  auto r = a->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  job_->fail("root cause");
  EXPECT_EQ(remote::Proxy::locate(*r).handle, r->id);
  EXPECT_TRUE(remote::Proxy::peer(a.proxy(), b.proxy()));
  EXPECT_EQ(a->facts().queues.size(), 2u);
  EXPECT_FALSE(a->map_host(0, 4096));
  EXPECT_TRUE(std::holds_alternative<std::string>(a->dma(*r, "0000:00:00.0")));
  EXPECT_TRUE(std::holds_alternative<edge::Grown>(a->grow()));
  EXPECT_TRUE(std::holds_alternative<remote::abi::Device>(a->capability()));
  EXPECT_EQ(a->signaled(), 0u);
  auto w = a->map_peer(b.proxy(), b->facts().word);  // a word maps as itself, asking nothing
  EXPECT_TRUE(w);
}

TEST_F(Memory, PeerAndMapPeerAcrossLinksAreFalseAndNone) {
  auto other_job = remote::Job::create();
  remote::Link& other = other_job->connect(agent_->endpoint());
  Driven a(*link_, 1), b(other, 1);
  EXPECT_FALSE(remote::Proxy::peer(a.proxy(), b.proxy()));
  auto r = b->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  const std::uint64_t before = sent();
  EXPECT_FALSE(a->map_peer(b.proxy(), *r));
  EXPECT_EQ(sent(), before);
}

TEST_F(Memory, AWordMapsAsItself) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  const remote::Region w = b->facts().word;
  const std::uint64_t before = sent();
  auto m = a->map_peer(b.proxy(), w);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, remote::Region::Kind::kWord);
  EXPECT_EQ(m->word, w.word);
  EXPECT_EQ(sent(), before);
}

TEST_F(Memory, MapPeerMakesANewObjectOverTheSameMemory) {
  RIG_NEED_DEVICES(*link_, 2);
  std::vector<std::byte> down(4096);
  Driven a(*link_, 1), b(*link_, 2);
  auto rb = b->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(rb);
  auto m = a->map_peer(b.proxy(), *rb);
  ASSERT_TRUE(m);
  EXPECT_NE(m->id, rb->id);
  std::vector<std::byte> up(4096, std::byte{0x3c});
  Work wb;
  wb.to_device(up.data(), *rb, 0, 4096);
  b.wait(b.run(wb));
  Work wa;
  wa.to_host(*m, 0, down.data(), 4096);
  a.wait(a.run(wa));
  EXPECT_EQ(up, down);
}

TEST_F(Memory, MapHostIsNone) {
  Driven dev(*link_, 1);
  std::vector<std::byte> page(4096);
  EXPECT_FALSE(dev->map_host(reinterpret_cast<std::uintptr_t>(page.data()), 4096));
}

TEST_F(Memory, DmaIsAnErrorThatNamesFunctionAndAnotherMachine) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  auto d = dev->dma(*r, "0000:41:00.0");
  ASSERT_TRUE(std::holds_alternative<std::string>(d));
  const std::string why = std::get<std::string>(d);
  EXPECT_NE(why.find("0000:41:00.0"), std::string::npos) << why;
  EXPECT_NE(why.find("another machine"), std::string::npos) << why;
  auto bad = dev->dma(*r, "not a bus address");
  ASSERT_TRUE(std::holds_alternative<std::string>(bad));
  EXPECT_NE(std::get<std::string>(bad).find("not a bus address"), std::string::npos);
}

TEST_F(Memory, GrowIsGrownAndRoomNeverAnswersGrow) {
  Driven dev(*link_, 1);
  EXPECT_TRUE(std::holds_alternative<edge::Grown>(dev->grow()));
}

TEST_F(Memory, AllocRaisesFaultOnceTheJobFailedAndFreeThenSendsNothing) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  job_->fail("injected root cause");
  try {
    dev->alloc(edge::Memory::kDevice, 64);
    FAIL() << "alloc after failure";
  } catch (const edge::Fault& f) {
    EXPECT_STREQ(f.what(), "injected root cause");
  }
  const std::uint64_t before = sent();
  dev->free(*r);
  EXPECT_EQ(sent(), before);
}

}  // namespace
}  // namespace rig::test

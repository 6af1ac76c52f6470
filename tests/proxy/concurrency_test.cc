// Every call from several threads at once (all but room and submit of one proxy), checked by
// checksum; run under ThreadSanitizer too.
#include <algorithm>
#include <atomic>
#include <optional>
#include <cstring>
#include <random>
#include <thread>

#include "fixture.h"

namespace rig::test {
namespace {

class Concurrency : public AgentSuite {};

std::uint64_t fnv(const std::byte* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<std::uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

TEST_F(Concurrency, ProxiesSubmitOnTheirOwnThreadsWhileOthersAllocFreeAndSleep) {
  constexpr int kProxies = 3, kRounds = 60;
  std::vector<std::unique_ptr<Driven>> devs;
  for (int i = 1; i <= kProxies; ++i) devs.push_back(std::make_unique<Driven>(*link_, i));
  Driven host(*link_, 0);
  std::atomic<bool> done{false};
  std::atomic<int> mismatches{0};

  std::vector<std::thread> submitters;
  for (int i = 0; i < kProxies; ++i) {
    submitters.emplace_back([&, i] {
      Driven& d = *devs[i];
      std::mt19937 rng(i);
      auto r = d->alloc(edge::Memory::kDevice, 1 << 20);
      if (!r) {
        mismatches.fetch_add(1000);
        return;
      }
      for (int k = 0; k < kRounds; ++k) {
        const std::size_t n = (rng() % (1 << 18) + 1) * 4;
        std::vector<std::byte> up(n), down(n);
        for (auto& b : up) b = static_cast<std::byte>(rng());
        Work w;
        w.to_device(up.data(), *r, 0, n).to_host(*r, 0, down.data(), n);
        d.wait(d.run(w));
        if (fnv(up.data(), n) != fnv(down.data(), n)) mismatches.fetch_add(1);
      }
    });
  }
  // Calls that ask the agent, on another proxy, from two threads at once, and frees.
  std::vector<std::thread> askers;
  for (int t = 0; t < 2; ++t) {
    askers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        auto r = host->alloc(edge::Memory::kDevice, 4096);
        if (r) host->free(*r);
      }
    });
  }
  // signaled and sleep while submit runs.
  std::thread sleeper([&] {
    while (!done.load(std::memory_order_acquire)) {
      for (auto& d : devs) (*d)->sleep((*d)->signaled(), 1);
    }
  });
  for (auto& t : submitters) t.join();
  done.store(true, std::memory_order_release);
  for (auto& t : askers) t.join();
  sleeper.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

// Invariant 9 under injected faults: every value completes with exact bytes, or the job fails
// with a root cause and every call returns.
void load_through(remote::Link& link, remote::Job& job, int rounds, int& exact, int& failed) {
  std::vector<std::unique_ptr<Driven>> devs;
  for (int i = 1; i <= 2; ++i) devs.push_back(std::make_unique<Driven>(link, i));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0}, bad{0};
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      Driven& d = *devs[i];
      std::mt19937 rng(100 + i);
      std::optional<remote::Region> r;
      try {
        r = d->alloc(edge::Memory::kDevice, 1 << 20);
      } catch (const edge::Fault&) {
        bad.fetch_add(1);
        return;
      }
      if (!r) return;
      for (int k = 0; k < rounds; ++k) {
        const std::size_t n = (rng() % (1 << 17) + 1) * 4;
        std::vector<std::byte> up(n), down(n);
        for (auto& b : up) b = static_cast<std::byte>(rng());
        Work w;
        w.to_device(up.data(), *r, 0, n).to_host(*r, 0, down.data(), n);
        const auto s = d.submit(w);
        if (!s.ok()) {
          bad.fetch_add(1);
          return;
        }
        try {
          d.wait(s.value, 60000);
        } catch (const edge::Fault&) {
          bad.fetch_add(1);
          return;
        }
        if (fnv(up.data(), n) == fnv(down.data(), n)) ok.fetch_add(1);
        else bad.fetch_add(1000);  // wrong bytes behind a reached word: never acceptable
      }
    });
  }
  for (auto& t : threads) t.join();
  exact = ok.load();
  failed = bad.load();
  if (failed > 0 && failed < 1000) {
    EXPECT_TRUE(job.failed()) << "a call failed but the job did not";
  }
}

TEST_F(Concurrency, UnderShortWritesAndReadsEveryValueCompletesExactly) {
  remote::LinkOptions options;
  options.inject_faults = true;
  options.faults.max_send_chunk = 1000;
  options.faults.max_recv_chunk = 777;
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent_->endpoint(), options);
  int exact = 0, failed = 0;
  load_through(link, *job, 20, exact, failed);
  EXPECT_EQ(failed, 0) << job->fault_text();
  EXPECT_EQ(exact, 40);
}

TEST_F(Concurrency, AConnectionLostUnderLoadFailsTheJobAndNothingHangs) {
  remote::LinkOptions options;
  options.inject_faults = true;
  options.faults.lose_after_bytes = 3u << 20;
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent_->endpoint(), options);
  int exact = 0, failed = 0;
  load_through(link, *job, 40, exact, failed);
  EXPECT_LT(failed, 1000) << "a value was reported done with wrong bytes";
  EXPECT_GT(failed, 0);
  EXPECT_TRUE(job->failed());
  // The sender or the receiving thread sees the loss first: either names the link.
  EXPECT_NE(job->fault_text().find("link to agent"), std::string::npos) << job->fault_text();
}

TEST_F(Concurrency, ManyThreadsAllocOnOneProxyAndEachGetsItsOwnObject) {
  Driven dev(*link_, 1);
  std::vector<std::thread> threads;
  std::vector<std::vector<std::uint64_t>> ids(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        auto r = dev->alloc(edge::Memory::kDevice, 64);
        if (r) ids[t].push_back(r->id);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::uint64_t> all;
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all.size(), 400u);
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

}  // namespace
}  // namespace rig::test

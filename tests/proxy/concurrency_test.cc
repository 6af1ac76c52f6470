// Every call from several threads at once (all but room and submit of one proxy), checked by
// checksum; run under ThreadSanitizer too.
#include <algorithm>
#include <atomic>
#include <optional>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "fixture.h"
#include "test_connect.h"

namespace rig::test {
namespace {

class Concurrency : public AgentSuite {};

std::uint64_t fnv(const std::byte* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<std::uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

TEST_F(Concurrency, ProxiesSubmitOnTheirOwnThreadsWhileOthersAllocFreeAndSleep) {
  RIG_NEED_DEVICES(*link_, 3);
  constexpr int kProxies = 3, kRounds = 60;
  std::vector<std::vector<std::byte>> downs(kProxies);  // each submitter's destination: outlives devs
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
      try {
        for (int k = 0; k < kRounds; ++k) {
          const std::size_t n = (rng() % (1 << 18) + 1) * 4;
          std::vector<std::byte> up(n);
          std::vector<std::byte>& down = downs[i];
          down.assign(n, std::byte{0});
          for (auto& b : up) b = static_cast<std::byte>(rng());
          Work w;
          w.to_device(up.data(), *r, 0, n).to_host(*r, 0, down.data(), n);
          d.wait(d.run(w));
          if (fnv(up.data(), n) != fnv(down.data(), n)) mismatches.fetch_add(1);
        }
      } catch (const std::exception&) {  // the job failed: the check below names its root cause
        mismatches.fetch_add(1000);
      }
    });
  }
  // Calls that ask the agent, on another proxy, from two threads at once, and frees.
  std::vector<std::thread> askers;
  for (int t = 0; t < 2; ++t) {
    askers.emplace_back([&] {
      try {
        while (!done.load(std::memory_order_acquire)) {
          auto r = host->alloc(edge::Memory::kDevice, 4096);
          if (r) host->free(*r);
        }
      } catch (const std::exception&) {  // the job failed: the check below names its root cause
      }
    });
  }
  // signaled and sleep while submit runs.
  std::thread sleeper([&] {
    try {
      while (!done.load(std::memory_order_acquire)) {
        for (auto& d : devs) (*d)->sleep((*d)->signaled(), 1);
      }
    } catch (const std::exception&) {  // the job failed: the check below names its root cause
    }
  });
  for (auto& t : submitters) t.join();
  done.store(true, std::memory_order_release);
  for (auto& t : askers) t.join();
  sleeper.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

void spin_until(const std::function<bool()>& cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

const char* kTwoFunctions = R"(
func one params=1 buffers=0
    ld    r0, p0[0]
    add   r0, r0, 1
    st    p0[0], r0
    ret
end
func two params=1 buffers=0
    ld    r0, p0[0]
    add   r0, r0, 2
    st    p0[0], r0
    ret
end
)";

// The calls the other tests never ran at once: image, entry, prepare and unload on the host
// (one thread reading the answers a shared image keeps while another makes new ones for it and
// loads, enters and unloads images of its own), map_peer and free of the mapping, and make/stop
// of proxies of this link and of other links, all while a proxy submits round trips checked by
// checksum. Each call's answer is checked; in the TSan build a race between any two fails it.
TEST_F(Concurrency, ImageEntryPrepareUnloadMapPeerAndStopRunWhileAnotherProxySubmits) {
  RIG_NEED_DEVICES(*link_, 3);
  Driven submitter(*link_, 1), mapper(*link_, 2), host(*link_, 0);
  const std::vector<std::byte> binary = assemble(kTwoFunctions);
  auto loaded = host->image(binary);
  ASSERT_TRUE((std::holds_alternative<edge::Loaded<remote::Region, remote::Image>>(loaded)));
  const remote::Image shared = std::get<edge::Loaded<remote::Region, remote::Image>>(loaded).image;
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(host->entry(shared, "one")));
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(host->entry(shared, "two")));
  auto target = submitter->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(target);
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0}, code_rounds{0}, maps{0}, stops{0};
  auto note = [&](bool ok) {
    if (!ok) wrong.fetch_add(1, std::memory_order_relaxed);
  };

  std::thread submits([&] {
    std::mt19937 rng(7);
    auto r = submitter->alloc(edge::Memory::kDevice, 1 << 18);
    note(r.has_value());
    for (int k = 0; r && k < 40; ++k) {
      const std::size_t n = (rng() % (1 << 16) + 1) * 4;
      std::vector<std::byte> up(n), down(n);
      for (auto& b : up) b = static_cast<std::byte>(rng());
      Work w;
      w.to_device(up.data(), *r, 0, n).to_host(*r, 0, down.data(), n);
      submitter.wait(submitter.run(w));
      note(fnv(up.data(), n) == fnv(down.data(), n));
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<std::thread> coders;
  // One thread reads answers the shared image keeps (entry of a function it answered before)
  // many times between its other calls, while the other makes new answers for it (prepare, and
  // entry of names asked once, which are absent): the kept answers are read and written at once.
  coders.emplace_back([&] {
    for (int k = 0; !done.load(std::memory_order_acquire) || k < 3; ++k) {
      for (int i = 0; i < 64; ++i) {
        note(std::holds_alternative<edge::Entry>(host->entry(shared, i % 2 ? "one" : "two")));
      }
      code_rounds.fetch_add(1, std::memory_order_relaxed);
    }
  });
  coders.emplace_back([&] {
    for (int k = 0; !done.load(std::memory_order_acquire) || k < 3; ++k) {
      host->prepare(shared, k % 2 ? "one" : "two");
      note(std::holds_alternative<edge::Absent>(host->entry(shared, "none-" + std::to_string(k))));
      // An image of this thread's own, from image to unload.
      auto own = host->image(binary);
      if (!std::holds_alternative<edge::Loaded<remote::Region, remote::Image>>(own)) {
        note(false);
        continue;
      }
      const remote::Image img = std::get<edge::Loaded<remote::Region, remote::Image>>(own).image;
      host->prepare(img, "two");
      note(std::holds_alternative<edge::Entry>(host->entry(img, "two")));
      note(std::holds_alternative<edge::Entry>(host->entry(img, "one")));
      host->unload(img);
      code_rounds.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::thread maps_thread([&] {
    for (int k = 0; !done.load(std::memory_order_acquire) || k < 3; ++k) {
      auto m = mapper->map_peer(submitter.proxy(), *target);  // device 2 maps device 1's memory
      note(m.has_value());
      if (m) mapper->free(*m);
      note(mapper->map_peer(submitter.proxy(), submitter->facts().word).has_value());
      maps.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::thread stops_thread([&] {
    // Proxies made, given work and stopped: device 3 on this link once (its account stays
    // taken), then on links of their own, while the others run.
    for (int k = 0; !done.load(std::memory_order_acquire) || k < 3; ++k) {
      remote::Link& link = k == 0 ? *link_ : job_->connect(agent_->endpoint());
      std::vector<std::byte> down(4096);
      Driven d(link, 3);
      auto r = d->alloc(edge::Memory::kDevice, 4096);
      note(r.has_value());
      if (!r) continue;
      std::vector<std::byte> up(4096, static_cast<std::byte>(k + 1));
      Work w;
      w.to_device(up.data(), *r, 0, 4096).to_host(*r, 0, down.data(), 4096);
      const std::uint64_t v = d.run(w);
      d.stop();  // may race the last bytes
      spin_until([&] { return d->signaled() == v; });
      note(d->signaled() == v && up == down);
      stops.fetch_add(1, std::memory_order_relaxed);
      if (k >= 12) break;
    }
  });
  submits.join();
  for (auto& t : coders) t.join();
  maps_thread.join();
  stops_thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(code_rounds.load(), 0);
  EXPECT_GT(maps.load(), 0);
  EXPECT_GT(stops.load(), 0);
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
        // After a failure, bytes of a pending copy may still land in `down` (the page's stop):
        // rig frees a destination only once stop's word shows the last value submitted.
        const auto give_up = [&] {
          bad.fetch_add(1);
          d.stop();
          spin_until([&] { return d->signaled() == d.last_value(); });
          EXPECT_EQ(d->signaled(), d.last_value()) << "stop never wrote the last value";
        };
        const auto s = d.submit(w);
        if (!s.ok()) {
          give_up();
          return;
        }
        try {
          d.wait(s.value, 60000);
        } catch (const edge::Fault&) {
          give_up();
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
  RIG_NEED_DEVICES(*link_, 2);
  auto job = remote::Job::create();
  remote::Link& link = remote::connect_with_faults(*job, agent_->endpoint(), {},
                                                   engine::Faults{.max_send_chunk = 1000, .max_recv_chunk = 777});
  int exact = 0, failed = 0;
  load_through(link, *job, 20, exact, failed);
  EXPECT_EQ(failed, 0) << job->fault_text();
  EXPECT_EQ(exact, 40);
}

TEST_F(Concurrency, AConnectionLostUnderLoadFailsTheJobAndNothingHangs) {
  RIG_NEED_DEVICES(*link_, 2);
  auto job = remote::Job::create();
  remote::Link& link = remote::connect_with_faults(*job, agent_->endpoint(), {}, engine::Faults{.lose_after_bytes = 3u << 20});
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
  std::atomic<int> faults{0};  // a Fault fails the test below, not the process
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        try {
          auto r = dev->alloc(edge::Memory::kDevice, 64);
          if (r) ids[t].push_back(r->id);
        } catch (const edge::Fault&) {
          faults.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(faults.load(), 0) << job_->fault_text();
  std::vector<std::uint64_t> all;
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all.size(), 400u);
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

}  // namespace
}  // namespace rig::test

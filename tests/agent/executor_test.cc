// The agent's executor without sockets: real devices (the host and simulated devices, which
// report completion at once or later), a real object table, and a recorder of what the
// executor sends the client. Ordering per device, waits on other devices, faults from a
// device, completion reported later.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "devices/wake.h"
#include "exec/executor.h"
#include "exec/handover.h"
#include "exec/staging.h"
#include "job/accounts.h"
#include "job/objects.h"
#include "random_bytes.h"
#include "raw_peer.h"
#include "rig/program/program.h"

namespace rig::agent {
namespace {

// What the executor sent, in order: "bytes D:V:P" (with the bytes) and "done D:V".
class Recorder final : public Reports {
 public:
  struct Event {
    std::string what;
    std::vector<std::byte> bytes;
  };
  wire::Outcome done(std::uint32_t device, std::uint64_t value) override {
    events.push_back({"done " + std::to_string(device) + ":" + std::to_string(value), {}});
    return {};
  }
  wire::Outcome bytes(std::uint32_t device, std::uint64_t value, std::uint32_t part, const PartBytes& b) override {
    Event e{"bytes " + std::to_string(device) + ":" + std::to_string(value) + ":" + std::to_string(part), {}};
    for (std::uint64_t k = b.at; k < b.at + b.n; ++k) {
      e.bytes.push_back(b.base[(k / b.shape.row_bytes) * b.pitch + k % b.shape.row_bytes]);
    }
    events.push_back(std::move(e));
    return {};
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.what);
    return out;
  }
  std::vector<Event> events;
};

using test::client_side;
using test::copy_part;
using test::object;

class ExecutorTest : public ::testing::TestWithParam<SimCompletion> {
 protected:
  ExecutorTest() {
    AgentConfig config;
    config.devices = 2;
    config.sim_completion = GetParam();
    config.instruction_budget = 10000;
    devices_ = open_devices(config);
    objects_ = std::make_unique<ObjectTable>(devices_, 1u << 16);
    executor_ = std::make_unique<Executor>(devices_, *objects_, staging_, recorder_, config.instruction_budget);
  }
  bool later() const { return GetParam() == SimCompletion::kLater; }

  void alloc(std::uint64_t id, std::uint32_t device, std::uint64_t bytes) {
    wire::Request q{};
    q.kind = static_cast<std::uint16_t>(wire::RequestKind::kAlloc);
    q.device = device;
    q.object = id;
    q.arg0 = bytes;
    Answer a;
    const wire::Outcome o = objects_->alloc(q, a);
    ASSERT_TRUE(o.ok()) << o.why();
    ASSERT_EQ(a.status, wire::AnswerStatus::kOk) << a.text;
  }
  std::byte* host(std::uint64_t id) { return objects_->object(id)->memory->host(); }

  // Hands a resolved handover over; `client_bytes[i]` are the received bytes of part i when its
  // source is the client (staged, as the session's Incoming leaves them when it cannot land them).
  void hand_over(std::uint32_t device, std::uint64_t value, std::vector<wire::Wait> waits,
                 std::vector<wire::Part> parts, std::vector<std::vector<std::byte>> client_bytes = {},
                 std::vector<std::uint32_t> words = {}) {
    wire::HandoverView h;
    h.fixed = {device, static_cast<std::uint32_t>(waits.size()), value,
               static_cast<std::uint32_t>(parts.size()), static_cast<std::uint32_t>(words.size())};
    h.waits = waits;
    h.parts = parts;
    h.words = words;
    std::string why;
    ASSERT_TRUE(wire::passed(executor_->check_value(device, value), why)) << why;
    PendingHandover ho;
    ASSERT_TRUE(wire::passed(resolve_handover(h, devices_, *objects_, ho), why)) << why;
    for (std::size_t i = 0; i < client_bytes.size(); ++i) {
      if (client_bytes[i].empty()) continue;
      ho.parts[i].staged = staging_.take(client_bytes[i].size(), ho.parts[i].staged_capacity);
      std::copy(client_bytes[i].begin(), client_bytes[i].end(), ho.parts[i].staged.get());
    }
    executor_->accept(std::move(ho));
  }
  // Runs what is ready and, for devices that report later, polls until nothing more comes.
  void run() {
    std::string why;
    ASSERT_TRUE(wire::passed(executor_->run_ready(), why)) << why;
    ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  }

  std::vector<std::unique_ptr<DeviceBackend>> devices_;
  std::unique_ptr<ObjectTable> objects_;
  JobStaging staging_;
  Recorder recorder_;
  std::unique_ptr<Executor> executor_;
};

TEST_P(ExecutorTest, ADevicesHandoversRunInTheOrderHandedOverAndEachValuesBytesPrecedeItsDone) {
  alloc(5, 1, 4096);
  const auto first = test::random_bytes(4096, 1), second = test::random_bytes(4096, 2);
  std::copy(first.begin(), first.end(), host(5));
  hand_over(1, 1, {}, {copy_part(object(5), client_side(), 4096)});
  hand_over(1, 2, {}, {copy_part(client_side(), object(5), 4096)}, {second});
  hand_over(1, 4, {}, {copy_part(object(5), client_side(), 4096)});
  run();
  const auto names = recorder_.names();
  ASSERT_EQ(names.size(), 5u);
  // Each value's bytes come before its done, and the dones come in value order; with later
  // completion the bytes of later values may pass earlier dones, never their own.
  auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  EXPECT_LT(at("bytes 1:1:0"), at("done 1:1"));
  EXPECT_LT(at("done 1:1"), at("done 1:2"));
  EXPECT_LT(at("done 1:2"), at("done 1:4"));
  EXPECT_LT(at("bytes 1:4:0"), at("done 1:4"));
  // Value 4 read what value 2 wrote, value 1 what was there before it.
  EXPECT_EQ(recorder_.events[at("bytes 1:1:0")].bytes, first);
  EXPECT_EQ(recorder_.events[at("bytes 1:4:0")].bytes, second);
  EXPECT_EQ(executor_->done(1), 4u);
}

TEST_P(ExecutorTest, AWaitOnAnotherDeviceHoldsOnlyTheWaitingDevicesQueue) {
  alloc(5, 1, 64);
  alloc(6, 2, 64);
  const auto bytes = test::random_bytes(64, 3);
  // Device 1's value 1 waits for device 2's value 1, which is not handed over yet.
  hand_over(1, 1, {wire::Wait{2, 0, 1}}, {copy_part(object(6), object(5), 64)});
  hand_over(1, 2, {}, {copy_part(object(5), client_side(), 64)});
  hand_over(0, 1, {}, {});
  run();
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 0:1"}));  // the host went on
  EXPECT_EQ(executor_->done(1), 0u);
  hand_over(2, 1, {}, {copy_part(client_side(), object(6), 64)}, {bytes});
  run();
  const std::vector<std::string> want =
      // Later: device 1 orders its work after device 2's finished value itself, so its bytes
      // (final: the device is idle) may go before device 2's report, and its reports follow it.
      later() ? std::vector<std::string>{"done 0:1", "bytes 1:2:0", "done 2:1", "done 1:1", "done 1:2"}
              : std::vector<std::string>{"done 0:1", "done 2:1", "done 1:1", "bytes 1:2:0", "done 1:2"};
  ASSERT_EQ(recorder_.names(), want);
  const auto sent = std::find(want.begin(), want.end(), "bytes 1:2:0") - want.begin();
  EXPECT_EQ(recorder_.events[sent].bytes, bytes);  // device 1 copied what device 2 received
}

TEST_P(ExecutorTest, AWaitOnAValueAnotherDeviceFinishedRunsOnceTheDeviceOrdersItAndIsReportedAfterThatValue) {
  alloc(5, 1, 64);
  alloc(6, 2, 64);
  const auto bytes = test::random_bytes(64, 5);
  hand_over(2, 1, {}, {copy_part(client_side(), object(6), 64)}, {bytes});
  // Device 1 (polled before device 2) copies what device 2's value 1 received.
  hand_over(1, 1, {wire::Wait{2, 0, 1}}, {copy_part(object(6), object(5), 64)});
  std::string why;
  ASSERT_TRUE(wire::passed(executor_->run_ready(), why)) << why;
  // A simulated device that reports later orders its work after another's finished value by
  // itself (as a GPU's stream waits on another GPU's event): the copy ran before any report.
  EXPECT_EQ(std::vector<std::byte>(host(5), host(5) + 64), bytes) << "held until the value it waits for was reported";
  ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 2:1", "done 1:1"}))
      << "a value was reported before the value it waited for";
}

TEST_P(ExecutorTest, TheHostWaitingOnAValueAnotherDeviceFinishedIsHeldUntilThatValueIsReported) {
  alloc(5, 0, 64);
  alloc(6, 2, 64);
  const auto bytes = test::random_bytes(64, 6);
  hand_over(2, 1, {}, {copy_part(client_side(), object(6), 64)}, {bytes});
  hand_over(0, 1, {wire::Wait{2, 0, 1}}, {copy_part(object(6), object(5), 64)});
  std::string why;
  ASSERT_TRUE(wire::passed(executor_->run_ready(), why)) << why;
  if (later()) {
    EXPECT_EQ(std::vector<std::byte>(host(5), host(5) + 64), std::vector<std::byte>(64)) << "the host's copy ran";
  }
  ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  EXPECT_EQ(std::vector<std::byte>(host(5), host(5) + 64), bytes);
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 2:1", "done 0:1"}));
}

TEST_P(ExecutorTest, AWaitAlreadyReachedDoesNotHoldTheHandover) {
  hand_over(2, 3, {}, {});
  run();
  hand_over(1, 1, {wire::Wait{2, 0, 3}}, {});
  run();
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 2:3", "done 1:1"}));
}

TEST_P(ExecutorTest, AValueNotAboveThePreviousOneIsRefusedWithBothValues) {
  hand_over(1, 5, {}, {});
  std::string why;
  EXPECT_FALSE(wire::passed(executor_->check_value(1, 5), why));
  EXPECT_NE(why.find("value 5 of device 1 is not above the previous one (5)"), std::string::npos) << why;
  EXPECT_TRUE(wire::passed(executor_->check_value(2, 5), why));
  EXPECT_EQ(executor_->check_value(1, 5).err(), -EPROTO);  // the client's violation
}

TEST_P(ExecutorTest, AFaultFromTheHostFailsWithTheDeviceAndTheProgramsReason) {
  wire::Request q{};
  q.kind = static_cast<std::uint16_t>(wire::RequestKind::kImage);
  q.object = 9;
  const auto binary = program::assemble("func spin params=0\nloop:\n jmp loop\nend\n");
  ASSERT_TRUE(std::holds_alternative<std::vector<std::byte>>(binary));
  Answer a;
  const wire::Outcome o = objects_->load_image(q, std::get<std::vector<std::byte>>(binary), a);
  ASSERT_TRUE(o.ok()) << o.why();
  ASSERT_EQ(objects_->entry(q, "spin").status, wire::AnswerStatus::kOk);
  wire::Part w{};
  w.kind = static_cast<std::uint16_t>(wire::PartKind::kWords);
  w.words.image = 9;
  w.words.function = 0;
  hand_over(0, 1, {}, {w});
  const wire::Outcome faulted = executor_->run_ready();
  EXPECT_EQ(faulted.err(), -EIO);  // a device's fault, not the client's violation
  const std::string& why = faulted.why();
  EXPECT_NE(why.find("device 0 (host) faulted: "), std::string::npos) << why;
  EXPECT_NE(why.find("spin"), std::string::npos) << why;
  EXPECT_TRUE(recorder_.events.empty()) << "a faulted value is never reported done";
}

TEST_P(ExecutorTest, CompletionReportedLaterIsReportedOnlyByAPollAndHoldsWaitsAndDirectLandingUntilThen) {
  hand_over(1, 1, {}, {});
  std::string why;
  ASSERT_TRUE(wire::passed(executor_->run_ready(), why)) << why;
  if (!later()) {
    EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 1:1"}));
    EXPECT_TRUE(executor_->runs_at_once({}));
    return;
  }
  EXPECT_TRUE(recorder_.events.empty()) << "reported before the device said so";
  EXPECT_EQ(executor_->done(1), 0u);
  EXPECT_FALSE(executor_->runs_at_once({})) << "bytes could land while the device's work runs";
  hand_over(2, 1, {wire::Wait{1, 0, 1}}, {});
  ASSERT_TRUE(wire::passed(executor_->run_ready(), why)) << why;
  EXPECT_TRUE(recorder_.events.empty()) << "a wait passed on a value not yet reported done";
  // One poll reports device 1's value, runs device 2's, and reports that too before it returns.
  ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 1:1", "done 2:1"}));
  EXPECT_TRUE(executor_->runs_at_once({}));
}

TEST_P(ExecutorTest, StagingIsGivenBackOnlyOnceItsValueIsDone) {
  alloc(5, 1, 1 << 20);
  hand_over(1, 1, {}, {copy_part(client_side(), object(5), 1 << 20)}, {test::random_bytes(1 << 20, 4)});
  std::string why;
  ASSERT_TRUE(wire::passed(executor_->run_ready(), why)) << why;
  EXPECT_EQ(staging_.spare_bytes(), later() ? 0u : std::uint64_t{1} << 20);
  ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  EXPECT_EQ(staging_.spare_bytes(), std::uint64_t{1} << 20);
}

TEST_P(ExecutorTest, ClearDropsPendingWorkAndWhatItHeld) {
  alloc(5, 1, 4096);
  hand_over(1, 1, {wire::Wait{2, 0, 1}}, {copy_part(object(5), client_side(), 4096)});
  std::weak_ptr<Memory> memory = objects_->object(5)->memory;
  objects_->clear();
  EXPECT_FALSE(memory.expired()) << "pending work lost its memory";
  executor_->clear();
  EXPECT_TRUE(memory.expired());
  EXPECT_EQ(devices_[1]->budget_left(), devices_[1]->account().budget);
}

// Devices whose work completes in the background (--sim-completion woken, as a GPU's): the
// executor asks them before the session waits, and only the wake's signal makes a poll see it.
class ExecutorWake : public ::testing::Test {
 protected:
  ExecutorWake() {
    AgentConfig config;
    config.devices = 2;
    config.sim_completion = SimCompletion::kWoken;
    devices_ = open_devices(config);
    objects_ = std::make_unique<ObjectTable>(devices_, 1u << 16);
    executor_ = std::make_unique<Executor>(devices_, *objects_, staging_, recorder_, 0);
  }
  void hand_over(std::uint32_t device, std::uint64_t value, std::vector<wire::Wait> waits = {}) {
    wire::HandoverView h;
    h.fixed = {device, static_cast<std::uint32_t>(waits.size()), value, 0, 0};
    h.waits = waits;
    std::string why;
    PendingHandover ho;
    ASSERT_TRUE(wire::passed(resolve_handover(h, devices_, *objects_, ho), why)) << why;
    executor_->accept(std::move(ho));
    ASSERT_TRUE(wire::passed(executor_->run_ready(), why)) << why;
    ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  }
  // The wake's count, read away (0: nothing signalled since the last read).
  std::uint64_t posts() {
    std::uint64_t n = 0;
    return ::read(wake_->fd(), &n, sizeof n) == sizeof n ? n : 0;
  }

  std::vector<std::unique_ptr<DeviceBackend>> devices_;
  std::unique_ptr<ObjectTable> objects_;
  JobStaging staging_;
  Recorder recorder_;
  std::unique_ptr<Executor> executor_;
  std::shared_ptr<Wake> wake_ = *Wake::make();
};

TEST_F(ExecutorWake, AValueIsReportedOnlyAfterItsDeviceWasArmedAndPostedTheWake) {
  hand_over(1, 1);
  EXPECT_TRUE(recorder_.events.empty()) << "reported before its work completed";
  EXPECT_EQ(posts(), 0u);
  executor_->arm_wakes(wake_);
  EXPECT_EQ(posts(), 1u);
  std::string why;
  ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 1:1"}));
  EXPECT_TRUE(executor_->idle());
  executor_->arm_wakes(wake_);
  EXPECT_EQ(posts(), 0u) << "woken with nothing to report";
}

TEST_F(ExecutorWake, AWaitingDevicesValueIsIssuedAtOnceArmedWithTheOtherAndReportedAfterIt) {
  hand_over(2, 1);
  hand_over(1, 1, {wire::Wait{2, 0, 1}});  // ordered by the device itself: issued now
  executor_->arm_wakes(wake_);              // both values complete, each device signals
  EXPECT_EQ(posts(), 2u);
  std::string why;
  ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 2:1", "done 1:1"}));
  EXPECT_TRUE(executor_->idle());
}

TEST_F(ExecutorWake, TheHostsValueRunsOnceTheValueItWaitsForIsReported) {
  hand_over(1, 1);
  hand_over(0, 1, {wire::Wait{1, 0, 1}});  // the host reports at once: held by the executor
  EXPECT_TRUE(recorder_.events.empty());
  executor_->arm_wakes(wake_);
  EXPECT_EQ(posts(), 1u);
  std::string why;
  ASSERT_TRUE(wire::passed(executor_->poll(), why)) << why;  // reports 1:1, then runs and reports 0:1
  EXPECT_EQ(recorder_.names(), (std::vector<std::string>{"done 1:1", "done 0:1"}));
}

INSTANTIATE_TEST_SUITE_P(Completion, ExecutorTest,
                         ::testing::Values(SimCompletion::kNow, SimCompletion::kLater),
                         [](const auto& info) { return info.param == SimCompletion::kNow ? "Now" : "Later"; });

}  // namespace
}  // namespace rig::agent

// A job's reading gathers on a busy stream (rig-agent --gather-us; engine::FrameReader::set_gather,
// whose own tests are engine/gathering_test.cc): a raw client of a real rig-agent that writes
// several handovers at a time makes the job's reader start gathering, counted in the status
// query's `job.gathers`; with --gather-us 0 it never does. Every value is still reported.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "raw_peer.h"
#include "rig/wire/codec.h"
#include "wire_parts.h"

namespace rig::test {
namespace {

// Reads frames until one `last` accepts: false if the stream ends or stays silent for 10 s.
template <class Last>
bool read_until(RawClient& c, Last last) {
  bool met = false;
  frames_until(c.fd(), [&](const RawFrame& f) { return met = last(f); });
  return met;
}

// The agent's status query, parsed (null if it did not come).
nlohmann::json status(RawClient& c) {
  if (!send_msg(c.fd(), wire::MsgType::kStatusQuery, wire::StatusQuery{77, 0})) return nullptr;
  std::string text;
  const bool got = read_until(c, [&](const RawFrame& f) {
    if (!is(f, wire::MsgType::kStatus)) return false;
    const auto b = f.bytes();
    if (b.size() > sizeof(wire::Status)) text.assign(reinterpret_cast<const char*>(b.data()) + sizeof(wire::Status), b.size() - sizeof(wire::Status));
    return true;
  });
  return got ? nlohmann::json::parse(text, nullptr, false) : nullptr;
}

// Rounds of three handovers in one write, each a copy inside object 5 of device 1, the client
// waiting for the last one's report before it writes the next: the job's reads find three
// frames each. Returns the job's `gathers` after 40 rounds (-1 if a report or the status did not come).
std::int64_t gathers_after_rounds_of_three(AgentProcess& agent) {
  RawClient c(agent.endpoint());
  c.hello(wire::kFeatureStatus);
  if (alloc(c, 5, 4096) != wire::AnswerStatus::kOk) return -1;
  std::uint64_t value = 0;
  for (int round = 0; round < 40; ++round) {
    std::vector<std::byte> out;
    for (int i = 0; i < 3; ++i) append_handover(out, 1, ++value, {copy_part(object(5), object(5, 64), 64)});
    if (!write_all(c.fd(), out.data(), out.size())) return -1;
    const bool reported = read_until(c, [&](const RawFrame& f) { return is(f, wire::MsgType::kDone) && done_value(f) == value; });
    if (!reported) return -1;
  }
  const nlohmann::json s = status(c);
  if (!s.is_object()) return -1;
  return s["job"]["gathers"].get<std::int64_t>();
}

TEST(AgentGathering, AClientThatWritesSeveralFramesAtATimeMakesItsJobGather) {
  AgentProcess agent;
  EXPECT_GE(gathers_after_rounds_of_three(agent), 1);
}

// A gathering job with a wait of a second: a handover from the client whose bytes frame comes
// later, alone (fewer bytes than the mark), still runs at once, because the job reads the bytes
// of a handover as the rest of its message, not as a message that may wait for the mark.
TEST(AgentGathering, TheBytesOfAHandoverAreReadWithoutWaitingForTheMark) {
  AgentProcess agent({"--gather-us", "1000000"});
  RawClient c(agent.endpoint());
  c.hello(wire::kFeatureStatus);
  ASSERT_EQ(alloc(c, 5, 4096), wire::AnswerStatus::kOk);
  std::uint64_t value = 0;
  // Rounds of three handovers: the job starts gathering after 16 reads (by the next one's end).
  for (int round = 0; round < 16; ++round) {
    std::vector<std::byte> out;
    for (int i = 0; i < 3; ++i) append_handover(out, 1, ++value, {copy_part(object(5), object(5, 64), 64)});
    ASSERT_TRUE(write_all(c.fd(), out.data(), out.size()));
    ASSERT_TRUE(read_until(c, [&](const RawFrame& f) { return is(f, wire::MsgType::kDone) && done_value(f) == value; }));
  }
  // Enough handovers to reach the mark (the wait ends at once), the last a copy from the
  // client, without its bytes.
  std::vector<std::byte> out;
  while (out.size() < 1024) append_handover(out, 1, ++value, {copy_part(object(5), object(5, 64), 64)});
  append_handover(out, 1, ++value, {copy_part(client_side(), object(5, 128), 64)});
  ASSERT_TRUE(write_all(c.fd(), out.data(), out.size()));
  // Its bytes, alone, once the job waits for them.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<std::byte> bytes;
  const std::vector<std::byte> payload(64, std::byte{7});
  append_msg(bytes, wire::MsgType::kBytes, wire::Bytes{1, 0, value, 0, 64, 0}, payload);
  ASSERT_TRUE(write_all(c.fd(), bytes.data(), bytes.size()));
  set_receive_timeout(c.fd(), 500);  // half the job's gathering wait
  RawFrame f;
  bool reported = false;
  while (!reported && read_frame(c.fd(), f)) reported = is(f, wire::MsgType::kDone) && done_value(f) == value;
  EXPECT_TRUE(reported) << "the handover's report did not come within 0.5 s";
  const nlohmann::json s = status(c);
  ASSERT_TRUE(s.is_object());
  EXPECT_GE(s["job"]["gathers"].get<std::int64_t>(), 1) << "the job never gathered: the test shows nothing";
}

TEST(AgentGathering, GatherUsZeroTurnsItOff) {
  AgentProcess agent({"--gather-us", "0"});
  EXPECT_EQ(gathers_after_rounds_of_three(agent), 0);
}

}  // namespace
}  // namespace rig::test

// What a job's session sends its client (agent/exec/outbox.cc), seen by a raw client of a real
// rig-agent: done reports of one device batched together go out as one, of the highest value,
// after the bytes of every value it covers; answers keep their place after the reports.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <string>
#include <vector>

#include "agent_process.h"
#include "raw_peer.h"

namespace rig::test {
namespace {

class Outbox : public ::testing::Test {
 protected:
  void SetUp() override {
    c_.hello();
    ASSERT_EQ(alloc(c_, 5, 4096), wire::AnswerStatus::kOk);
  }
  AgentProcess agent_;
  RawClient c_{agent_.endpoint()};
};

TEST_F(Outbox, ValuesDoneTogetherGetOneReportOfTheLastAfterTheBytesOfEach) {
  // Eight handovers in one write, each copying 8 bytes of object 5 to the client: the agent
  // reads them in one read and runs them before it sends.
  constexpr std::uint64_t kValues = 8;
  std::vector<std::byte> out;
  for (std::uint64_t v = 1; v <= kValues; ++v) {
    append_handover(out, 1, v, {copy_part(object(5, 8 * (v - 1)), client_side(), 8)});
  }
  ASSERT_TRUE(write_all(c_.fd(), out.data(), out.size()));
  const auto got = frames_until(c_.fd(), [](const RawFrame& f) { return is(f, wire::MsgType::kDone); });
  ASSERT_FALSE(got.empty());
  ASSERT_TRUE(is(got.back(), wire::MsgType::kDone)) << "no done report within 10 s";
  EXPECT_EQ(done_value(got.back()), kValues);
  EXPECT_EQ(got.size(), kValues + 1) << "the bytes of each value, then one report";
  for (std::size_t i = 0; i + 1 < got.size(); ++i) EXPECT_TRUE(is(got[i], wire::MsgType::kBytes)) << "frame " << i;
}

TEST_F(Outbox, AnAnswerToARequestAfterAHandoverComesAfterItsReport) {
  std::vector<std::byte> out;
  append_handover(out, 1, 1, {copy_part(object(5), object(5, 64), 64)});
  wire::Request r{};
  r.id = 9;
  r.kind = static_cast<std::uint16_t>(wire::RequestKind::kAlloc);
  r.device = 1;
  r.object = 6;
  r.arg0 = 64;
  append_msg(out, wire::MsgType::kRequest, r);
  ASSERT_TRUE(write_all(c_.fd(), out.data(), out.size()));
  const auto got = frames_until(c_.fd(), [](const RawFrame& f) { return is(f, wire::MsgType::kAnswer); });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(is(got[0], wire::MsgType::kDone));
  EXPECT_EQ(done_value(got[0]), 1u);
  EXPECT_TRUE(is(got[1], wire::MsgType::kAnswer));
}

TEST_F(Outbox, BytesOfAnotherDeviceComeAfterTheReportsBatchedBeforeThem) {
  ASSERT_EQ(alloc(c_, 6, 4096, 2), wire::AnswerStatus::kOk);
  std::vector<std::byte> out;
  append_handover(out, 1, 1, {copy_part(object(5), object(5, 64), 64)});
  append_handover(out, 2, 1, {copy_part(object(6), client_side(), 8)});
  ASSERT_TRUE(write_all(c_.fd(), out.data(), out.size()));
  int dones = 0;
  const auto got = frames_until(c_.fd(), [&](const RawFrame& f) { return is(f, wire::MsgType::kDone) && ++dones == 2; });
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(is(got[0], wire::MsgType::kDone)) << "device 1's report, batched first";
  EXPECT_TRUE(is(got[1], wire::MsgType::kBytes));
  EXPECT_TRUE(is(got[2], wire::MsgType::kDone));
}

}  // namespace
}  // namespace rig::test

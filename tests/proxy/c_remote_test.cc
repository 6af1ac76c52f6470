// The C ABI (rig/remote.h), driven by tests written in C (c_remote_*.c) against a real rig-agent:
// each C test returns NULL or its failed check.
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "agent_process.h"
#include "c_remote.h"
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
)";

class CRemote : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = std::make_unique<AgentProcess>(std::vector<std::string>{
        "--devices", "2", "--device-budget", std::to_string(256u << 20), "--host-budget",
        std::to_string(32u << 20)});
    auto out = program::assemble(kCounter);
    program_ = std::get<std::vector<std::byte>>(out);
    env_.endpoint = agent_->endpoint().c_str();
    env_.program = program_.data();
    env_.program_bytes = program_.size();
    env_.kill_agent = [](void* a) { static_cast<AgentProcess*>(a)->signal(SIGKILL); };
    env_.kill_arg = agent_.get();
  }

  std::unique_ptr<AgentProcess> agent_;
  std::vector<std::byte> program_;
  c_env env_{};
};

// A C test's verdict: NULL, or its failed check.
#define EXPECT_PASSES(call)                 \
  do {                                      \
    const char* failed = (call);            \
    EXPECT_EQ(failed, nullptr) << failed;   \
  } while (0)

TEST_F(CRemote, AccountsAreTheAgentsAndASmallerStructGetsNoMoreBytes) {
  EXPECT_PASSES(c_remote_accounts(&env_));
}
TEST_F(CRemote, MakeRefusesWhatThePageRefusesAndRegistersNothingThen) {
  EXPECT_PASSES(c_remote_make_rules(&env_));
}
TEST_F(CRemote, LinkOptionsAreReadWithinTheirSizeAndABadOneMakesNoLink) {
  EXPECT_PASSES(c_remote_options(&env_));
}
TEST_F(CRemote, MemoryAllocFreeLocatePeerMapAndDma) {
  EXPECT_PASSES(c_remote_memory(&env_));
}
TEST_F(CRemote, ACopyOf1MiBBothWaysIsExactToItsLastByte) {
  EXPECT_PASSES(c_remote_copies(&env_, 1u << 20));
}
TEST_F(CRemote, ACopyOf64MiBBothWaysIsExact) {
  EXPECT_PASSES(c_remote_copies(&env_, 64u << 20));
}
TEST_F(CRemote, StridedRowsOneAndTwoPitchEqualAndLargerEndingAtTheObjectsEnd) {
  EXPECT_PASSES(c_remote_strided_edges(&env_));
}
TEST_F(CRemote, RoomIsNeverLaterAndFitsAsThePageSays) {
  EXPECT_PASSES(c_remote_room(&env_));
}
TEST_F(CRemote, SleepReturnsAtOnceOrByItsBound) {
  EXPECT_PASSES(c_remote_sleep_bound(&env_));
}
TEST_F(CRemote, StopWritesTheLastValueAtOnceWhenNoCopyIsPending) {
  EXPECT_PASSES(c_remote_stop(&env_));
}
TEST_F(CRemote, AProxyReleasedWithACopyPendingIsNotQuietAndItsWordStillAdvances) {
  EXPECT_PASSES(c_remote_release_pending(&env_));
}
TEST_F(CRemote, CodeLoadsOnTheHostOnlyAndRuns) {
  EXPECT_PASSES(c_remote_code(&env_));
}
TEST_F(CRemote, AfterCloseCallsThatAskTheAgentFaultWithTheJobIsClosed) {
  EXPECT_PASSES(c_remote_closed(&env_));
}
TEST_F(CRemote, AnAgentKilledFaultsTheSleeperWithTheRootCause) {
  EXPECT_PASSES(c_remote_agent_killed(&env_));
}
TEST_F(CRemote, NullAndReleasedHandlesAreAnsweredBadHandle) {
  EXPECT_PASSES(c_remote_bad_handles(&env_));
}
TEST_F(CRemote, TextsAreTruncatedNulTerminatedAndSayTheirSize) {
  EXPECT_PASSES(c_remote_texts(&env_));
}
TEST_F(CRemote, ThreadsSubmitSleepAndAllocateAtOnce) {
  EXPECT_PASSES(c_remote_threads(&env_));
}

}  // namespace
}  // namespace rig::test

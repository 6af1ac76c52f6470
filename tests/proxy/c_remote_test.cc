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
        "--devices", "2", "--device-budget", std::to_string(256u << 20), "--host-budget", std::to_string(32u << 20)});
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

#define RIG_C_TEST(name, call)      \
  TEST_F(CRemote, name) {           \
    const char* failed = call;      \
    EXPECT_EQ(failed, nullptr) << failed; \
  }

RIG_C_TEST(AccountsAreTheAgentsAndASmallerStructGetsNoMoreBytes, c_remote_accounts(&env_))
RIG_C_TEST(MakeRefusesWhatThePageRefusesAndRegistersNothingThen, c_remote_make_rules(&env_))
RIG_C_TEST(MemoryAllocFreeLocatePeerMapAndDma, c_remote_memory(&env_))
RIG_C_TEST(ACopyOf1MiBBothWaysIsExactToItsLastByte, c_remote_copies(&env_, 1u << 20))
RIG_C_TEST(ACopyOf64MiBBothWaysIsExact, c_remote_copies(&env_, 64u << 20))
RIG_C_TEST(StridedRowsOneAndTwoPitchEqualAndLargerEndingAtTheObjectsEnd, c_remote_strided_edges(&env_))
RIG_C_TEST(RoomIsNeverLaterAndFitsAsThePageSays, c_remote_room(&env_))
RIG_C_TEST(SleepReturnsAtOnceOrByItsBound, c_remote_sleep_bound(&env_))
RIG_C_TEST(StopWritesTheLastValueAtOnceWhenNoCopyIsPending, c_remote_stop(&env_))
RIG_C_TEST(AProxyReleasedWithACopyPendingIsNotQuietAndItsWordStillAdvances, c_remote_release_pending(&env_))
RIG_C_TEST(CodeLoadsOnTheHostOnlyAndRuns, c_remote_code(&env_))
RIG_C_TEST(AfterCloseCallsThatAskTheAgentFaultWithTheJobIsClosed, c_remote_closed(&env_))
RIG_C_TEST(AnAgentKilledFaultsTheSleeperWithTheRootCause, c_remote_agent_killed(&env_))
RIG_C_TEST(NullAndReleasedHandlesAreAnsweredBadHandle, c_remote_bad_handles(&env_))
RIG_C_TEST(TextsAreTruncatedNulTerminatedAndSayTheirSize, c_remote_texts(&env_))
RIG_C_TEST(ThreadsSubmitSleepAndAllocateAtOnce, c_remote_threads(&env_))

}  // namespace
}  // namespace rig::test

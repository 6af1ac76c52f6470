// The C header compiles as C, and a C caller drives a proxy through it.
#include <vector>

#include "fixture.h"

extern "C" int c_round_trip(rig_proxy* d, uint64_t handle, const void* from, void* to, uint64_t n,
                            uint64_t value, const char** why);

namespace rig::test {
namespace {

class CApi : public AgentSuite {};

TEST_F(CApi, ACCallerRoundTripsBytesThroughTheCFunctions) {
  alignas(8) std::uint64_t word = 0;
  auto p = remote::device(*link_, *link_->account(1), remote::abi::Device{1}).make(&word);
  auto r = p->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(r);
  std::vector<unsigned char> from(4096), to(4096, 0);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>(i * 31);
  const char* why = nullptr;
  ASSERT_EQ(c_round_trip(p->c_handle(), remote::Proxy::locate(*r).handle, from.data(), to.data(),
                         from.size(), 1, &why),
            RIG_COMMITTED)
      << (why ? why : "");
  while (p->signaled() < 1) p->sleep(p->signaled(), 1000);
  EXPECT_EQ(from, to);
  p->stop(std::nullopt);
}

}  // namespace
}  // namespace rig::test

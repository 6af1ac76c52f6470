// The sanitized builds check the sources' asserts: they default to the Sanitize build type
// (CMakeLists.txt: -O1 -g, no -DNDEBUG), which every target of a build shares, so an assert
// compiled here is compiled in the library, the agent and the tests alike.
#include <gtest/gtest.h>

namespace rig::test {
namespace {

TEST(BuildType, TheSanitizedBuildsCheckTheSourcesAsserts) {
#if defined(RIG_TSAN) || defined(RIG_ASAN)
#ifdef NDEBUG
  FAIL() << "a sanitized build with NDEBUG defined: its runs check none of the sources' asserts "
            "(configure it with the Sanitize build type, the default under RIG_TSAN and RIG_ASAN)";
#endif
#else
  GTEST_SKIP() << "skipped: the normal build leaves asserts off (RelWithDebInfo)";
#endif
}

}  // namespace
}  // namespace rig::test

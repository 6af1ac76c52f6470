// The RIG_* variables (env_settings.h): one rule for all. Unset or empty: the default; a value a
// variable does not take is an error naming the variable and what it takes, never the default.
#include "rig/engine/env_settings.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <string>

namespace rig::engine {
namespace {

using Env = std::map<std::string, std::string>;

wire::Result<EnvSettings> parsed(const Env& env) {
  return parse_env_settings([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// The settings of an environment whose values are all taken.
EnvSettings parse(const Env& env) {
  wire::Result<EnvSettings> s = parsed(env);
  EXPECT_TRUE(s.ok()) << s.outcome().why();
  return s.ok() ? *s : EnvSettings{};
}

// The error that `name=value` is (-EINVAL), or "" if it is taken.
std::string error_of(const std::string& name, const std::string& value) {
  const wire::Outcome o = parsed({{name, value}}).outcome();
  EXPECT_EQ(o.err(), o.ok() ? 0 : -EINVAL) << o.why();
  return o.why();
}

TEST(EnvSettings, UnsetOrEmptyIsTheDefault) {
  for (const Env& env : {Env{}, Env{{"RIG_SOCKET_BACKEND", ""}, {"RIG_POLL_US", ""}, {"RIG_SEND_ZC_BYTES", ""},
                                    {"RIG_SQPOLL", ""}, {"RIG_STRIPES", ""}, {"RIG_STRIPE_WINDOW_BYTES", ""}}}) {
    const EnvSettings s = parse(env);
    EXPECT_FALSE(s.backend);
    EXPECT_EQ(s.poll_us, 0);
    EXPECT_FALSE(s.send_zc_bytes);
    EXPECT_FALSE(s.sq_polling);
    EXPECT_FALSE(s.stripes);
    EXPECT_EQ(s.stripe_window_bytes, 0u);
  }
}

TEST(EnvSettings, EachVariableTakesWhatItSays) {
  const EnvSettings s = parse({{"RIG_SOCKET_BACKEND", "plain"}, {"RIG_POLL_US", "1000000"},
                               {"RIG_SEND_ZC_BYTES", "64KiB"}, {"RIG_SQPOLL", "off"}, {"RIG_STRIPES", "16"},
                               {"RIG_STRIPE_WINDOW_BYTES", "1TiB"}});
  EXPECT_EQ(s.backend, Backend::kPlain);
  EXPECT_EQ(s.poll_us, 1'000'000) << "the bound itself";
  EXPECT_EQ(s.send_zc_bytes, 65536u);
  EXPECT_EQ(s.sq_polling, false);
  EXPECT_EQ(s.stripes, 16) << "the bound itself";
  EXPECT_EQ(s.stripe_window_bytes, std::size_t{1} << 40) << "the bound itself";
  EXPECT_EQ(parse({{"RIG_SOCKET_BACKEND", "uring"}}).backend, Backend::kUring);
  EXPECT_EQ(parse({{"RIG_SQPOLL", "1"}}).sq_polling, true);
  EXPECT_EQ(parse({{"RIG_SQPOLL", "on"}}).sq_polling, true);
  EXPECT_EQ(parse({{"RIG_SQPOLL", "0"}}).sq_polling, false);
  EXPECT_EQ(parse({{"RIG_STRIPES", "0"}}).stripes, 0) << "0: no striping, not the default";
  EXPECT_EQ(parse({{"RIG_SEND_ZC_BYTES", "0"}}).send_zc_bytes, 0u) << "0: never zero-copy, not the default";
  EXPECT_EQ(parse({{"RIG_SEND_ZC_BYTES", "4096"}}).send_zc_bytes, 4096u);
  EXPECT_EQ(parse({{"RIG_STRIPE_WINDOW_BYTES", "262144"}}).stripe_window_bytes, 262144u);
}

TEST(EnvSettings, ABadValueIsAnErrorNamingTheVariableItsValueAndWhatItTakes) {
  EXPECT_EQ(error_of("RIG_STRIPES", "-3"),
            "RIG_STRIPES=-3: RIG_STRIPES takes a whole number from 0 to 16 (unset or empty: none on loopback, 4 otherwise)");
  EXPECT_EQ(error_of("RIG_SOCKET_BACKEND", "foo").rfind("RIG_SOCKET_BACKEND=foo: RIG_SOCKET_BACKEND takes uring or plain", 0), 0u);
  EXPECT_EQ(error_of("RIG_SQPOLL", "maybe").rfind("RIG_SQPOLL=maybe: RIG_SQPOLL takes 1, on, 0 or off", 0), 0u);
  EXPECT_EQ(error_of("RIG_POLL_US", "abc").rfind("RIG_POLL_US=abc: RIG_POLL_US takes a whole number of microseconds", 0), 0u);
  EXPECT_EQ(error_of("RIG_SEND_ZC_BYTES", "1.5GiB").rfind("RIG_SEND_ZC_BYTES=1.5GiB: RIG_SEND_ZC_BYTES takes a byte count", 0), 0u);
}

TEST(EnvSettings, EveryMalformedOrOutOfRangeValueIsAnError) {
  const std::map<std::string, std::vector<std::string>> bad = {
      {"RIG_SOCKET_BACKEND", {"foo", "Plain", " uring", "uring "}},
      {"RIG_POLL_US", {"abc", "1000001", "-1", "+5", " 5", "5 ", "1k", "18446744073709551616"}},
      {"RIG_SEND_ZC_BYTES", {"lots", "1.5GiB", "1GB", "1k", "-1", "1 MiB", "1099511627777", "1025GiB",
                             "17179869184GiB"}},
      {"RIG_SQPOLL", {"maybe", "yes", "true", "2", "ON"}},
      {"RIG_STRIPES", {"-3", "17", "4x", " 4", "1KiB"}},
      {"RIG_STRIPE_WINDOW_BYTES", {"abc", "1TiB1", "1099511627777", "17179869184GiB", "64kib"}},
  };
  for (const auto& [name, values] : bad) {
    for (const std::string& value : values) {
      EXPECT_EQ(error_of(name, value).rfind(name + "=" + value + ": " + name + " takes ", 0), 0u)
          << name << "='" << value << "': " << error_of(name, value);
    }
  }
}

TEST(EnvSettings, TheFirstBadVariableIsTheErrorWhateverTheOthersHold) {
  const wire::Outcome o = parsed({{"RIG_POLL_US", "20"}, {"RIG_STRIPES", "99"}}).outcome();
  EXPECT_EQ(o.err(), -EINVAL);
  EXPECT_EQ(o.why().rfind("RIG_STRIPES=99: ", 0), 0u) << o.why();
}

TEST(EnvSettings, TheProcesssSettingsAreReadOnceAndKept) {
  // This process's environment is the test's (ctest's runs set RIG_SQPOLL, RIG_STRIPE_WINDOW_BYTES):
  // good, so the same object comes back each time.
  EXPECT_TRUE(env_settings().ok()) << env_settings().outcome().why();
  EXPECT_EQ(&env_settings(), &env_settings());
}

TEST(EnvSettings, EnvTextIsNullWhenUnsetOrEmpty) {
  EXPECT_EQ(env_text("RIG_TEST_NO_SUCH_VARIABLE"), nullptr);
  EXPECT_NE(env_text("PATH"), nullptr);
}

}  // namespace
}  // namespace rig::engine

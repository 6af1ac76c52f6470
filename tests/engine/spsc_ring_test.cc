#include "rig/engine/spsc_ring.h"

#include <gtest/gtest.h>

#include <thread>

namespace rig::engine {
namespace {

TEST(SpscRing, ConsumerSeesEveryPublishedItemInOrder) {
  SpscRing<std::uint64_t> ring(64);
  constexpr std::uint64_t kItems = 200000;
  std::thread producer([&] {
    for (std::uint64_t i = 1; i <= kItems;) {
      const std::size_t room = ring.free_slots();
      if (room == 0) {
        std::this_thread::yield();
        continue;
      }
      std::size_t k = 0;
      for (; k < room && i + k <= kItems; ++k) ring.claim(k) = (i + k) * 2654435761u;
      ring.publish(k);
      i += k;
    }
  });
  std::uint64_t sum = 0, expect = 0;
  for (std::uint64_t i = 1; i <= kItems;) {
    if (ring.empty()) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(ring.front(), i * 2654435761u) << "item " << i;
    sum += ring.front();
    ring.pop();
    ++i;
  }
  producer.join();
  for (std::uint64_t i = 1; i <= kItems; ++i) expect += i * 2654435761u;
  EXPECT_EQ(sum, expect);
  EXPECT_TRUE(ring.drained());
}

}  // namespace
}  // namespace rig::engine

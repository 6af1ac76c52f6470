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

// Each side keeps a copy of the other's index: a copy that showed the ring full or empty must be
// reloaded, or the side would never see the other's progress.
TEST(SpscRing, TheProducerSeesTheSlotsTheConsumerFreedAfterTheRingWasFull) {
  SpscRing<int> ring(4);
  ASSERT_TRUE(ring.has_room(4));
  for (int k = 0; k < 4; ++k) ring.claim(static_cast<std::size_t>(k)) = k;
  ring.publish(4);
  EXPECT_EQ(ring.free_slots(), 0u);
  EXPECT_FALSE(ring.has_room(1));
  ASSERT_TRUE(ring.has_items(4));
  ring.pop(2);
  EXPECT_EQ(ring.free_slots(), 2u);
  EXPECT_TRUE(ring.has_room(2));
  EXPECT_FALSE(ring.has_room(3));
  ring.claim(0) = 4;
  ring.claim(1) = 5;
  ring.publish(2);
  for (int want = 2; want <= 5; ++want) {
    ASSERT_FALSE(ring.empty());
    EXPECT_EQ(ring.front(), want);
    ring.pop();
  }
  EXPECT_TRUE(ring.drained());
}

// The edge of the reload: a producer whose copy shows the ring full has room for exactly the
// slots freed since, the whole ring included, and not one more; whichever it asks first (the
// first question reloads the consumer's index).
TEST(SpscRing, AProducerThatSawTheRingFullHasRoomForExactlyTheSlotsFreedSince) {
  for (const bool exact_first : {true, false}) {
    for (std::size_t freed = 1; freed <= 4; ++freed) {
      SpscRing<int> ring(4);
      for (int k = 0; k < 4; ++k) ring.claim(static_cast<std::size_t>(k)) = k;
      ring.publish(4);  // the producer's copy of the head now shows no room
      ASSERT_TRUE(ring.has_items(4));
      ring.pop(freed);
      if (exact_first) {
        EXPECT_TRUE(ring.has_room(freed)) << freed << " freed";
      }
      EXPECT_FALSE(ring.has_room(freed + 1)) << freed << " freed";
      EXPECT_TRUE(ring.has_room(freed)) << freed << " freed";
    }
  }
}

TEST(SpscRing, TheConsumerSeesItemsPublishedAfterItFoundTheRingEmpty) {
  SpscRing<int> ring(8);
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.size(), 0u);
  ASSERT_TRUE(ring.has_room(1));
  ring.claim() = 7;
  ring.publish();
  ASSERT_FALSE(ring.empty());
  EXPECT_EQ(ring.front(), 7);
  ring.claim() = 8;
  ring.claim(1) = 9;
  ring.publish(2);
  EXPECT_TRUE(ring.has_items(3)) << "the consumer must reload the tail when its copy shows too few";
  EXPECT_EQ(ring.at(2), 9);
  ring.pop(3);
  EXPECT_TRUE(ring.empty());
  EXPECT_TRUE(ring.drained());
}

}  // namespace
}  // namespace rig::engine

#include "rig/engine/iov_cursor.h"

#include <gtest/gtest.h>

#include <vector>

namespace rig::engine {
namespace {

TEST(IovCursor, WalksPartialTransfersAcrossEntries) {
  char a[10], b[0 + 1], c[30];
  const iovec iov[] = {{a, 10}, {b, 0}, {c, 30}};
  IovCursor cur(iov);
  iovec w[IovCursor::kWindow];
  ASSERT_EQ(cur.window(w), 2u);  // the empty entry is skipped
  EXPECT_EQ(w[0].iov_base, a);
  EXPECT_EQ(w[1].iov_len, 30u);
  cur.advance(7);
  ASSERT_EQ(cur.window(w), 2u);
  EXPECT_EQ(w[0].iov_base, a + 7);
  EXPECT_EQ(w[0].iov_len, 3u);
  cur.advance(3 + 29);
  ASSERT_EQ(cur.window(w), 1u);
  EXPECT_EQ(w[0].iov_base, c + 29);
  EXPECT_EQ(w[0].iov_len, 1u);
  EXPECT_FALSE(cur.done());
  cur.advance(1);
  EXPECT_TRUE(cur.done());
}

TEST(IovCursor, WindowsAtMostKWindowEntries) {
  std::vector<char> mem(200);
  std::vector<iovec> iov;
  for (int i = 0; i < 200; ++i) iov.push_back({&mem[i], 1});
  IovCursor cur(iov);
  iovec w[IovCursor::kWindow];
  std::size_t total = 0;
  while (!cur.done()) {
    const std::size_t n = cur.window(w);
    ASSERT_LE(n, IovCursor::kWindow);
    cur.advance(n);
    total += n;
  }
  EXPECT_EQ(total, 200u);
}

}  // namespace
}  // namespace rig::engine

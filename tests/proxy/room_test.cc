// The page's room: RIG_FITS for everything the proxy can run that its RIG_NEVER list does not
// name; the deviations that remain (docs/SEMANTICS.md) are pinned here too.
#include <algorithm>
#include <utility>
#include <variant>
#include <vector>

#include "fixture.h"
#include "rig/program/program.h"
#include "rig/wire/messages.h"

namespace rig::test {
namespace {

class Room : public AgentSuite {};

TEST_F(Room, WaitsThatStayHereNeverCountHoweverMany) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  alignas(8) static std::uint64_t local_word = 5;  // a local device's word, reached already
  Work w;
  for (int i = 0; i < 1000; ++i) w.wait(&local_word, 0, 1 + i % 5);
  w.between(*r, 0, *r, 0, 64);
  ASSERT_EQ(dev.room(w), RIG_FITS);
  dev.wait(dev.run(w));
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Room, TravellingWaitsAreMergedPerDeviceKeepingTheLargestValue) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  auto ra = a->alloc(edge::Memory::kDevice, 64);
  auto rb = b->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(ra && rb);
  Work held;
  for (int i = 0; i < 300; ++i) held.wait(b.word(), 2, i % 2 == 0 ? 1 : 3 - i % 3);  // largest: 3
  held.between(*ra, 0, *ra, 0, 64);
  ASSERT_EQ(a.room(held), RIG_FITS);
  const std::uint64_t v = a.run(held);
  Work go;
  go.between(*rb, 0, *rb, 0, 64);
  b.run(go);
  b.wait(b.run(go));  // b at 2: below the largest wait
  a->sleep(0, 100);
  EXPECT_LT(a->signaled(), v) << "a handover ran before its largest wait was reached";
  b.wait(b.run(go));  // b at 3
  a.wait(v);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Room, AZeroByteCopyFitsAndSendsNothing) {
  std::vector<std::byte> down(64);
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  std::vector<std::byte> here(64, std::byte{3});
  Work empty;  // zero rows from here, zero-byte rows into here: both fit, neither is sent
  empty.copy(rig_copy{harness::host_side(here.data()), harness::region_side(*r, 0), 0, 64, 64, 64})
      .copy(rig_copy{harness::region_side(*r, 0), harness::host_side(down.data()), 1, 0, 0, 0});
  ASSERT_EQ(dev.room(empty), RIG_FITS);
  const std::uint64_t before = sent();
  dev.wait(dev.run(empty));
  EXPECT_EQ(sent() - before, sizeof(wire::FrameHeader) + sizeof(wire::Handover)) << "a part was sent";
  // Beside copies that move bytes, the parts after it keep their place on the wire.
  Work mixed;
  mixed.copy(rig_copy{harness::host_side(here.data()), harness::region_side(*r, 0), 0, 8, 8, 8})
      .to_device(here.data(), *r, 0, 64)
      .copy(rig_copy{harness::region_side(*r, 0), harness::host_side(down.data()), 0, 8, 8, 8})
      .to_host(*r, 0, down.data(), 64);
  dev.wait(dev.run(mixed));
  EXPECT_EQ(down, here);
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Room, MorePartsAndWordsThanTheOldBoundsFitUpToWhatOneFrameCarries) {
  Driven host(*link_, 0);
  auto r = host->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work parts;
  for (int i = 0; i < 5000; ++i) parts.between(*r, 0, *r, 0, 4);
  ASSERT_EQ(host.room(parts), RIG_FITS);
  host.wait(host.run(parts));
  auto bin = program::assemble("func wide params=16\n ret\nend\n");
  ASSERT_TRUE(std::holds_alternative<std::vector<std::byte>>(bin));
  auto loaded = host->image(std::get<std::vector<std::byte>>(bin));
  ASSERT_TRUE((std::holds_alternative<edge::Loaded<remote::Region, remote::Image>>(loaded)));
  const remote::Image img = std::get<edge::Loaded<remote::Region, remote::Image>>(loaded).image;
  const auto e = host->entry(img, "wide");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(e));
  Work words;  // 80 000 words
  for (int i = 0; i < 5000; ++i) words.words(img.id, std::get<edge::Entry>(e).function, std::vector<std::uint32_t>(16, 7));
  ASSERT_EQ(host.room(words), RIG_FITS);
  host.wait(host.run(words));
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_F(Room, TheRemainingDeviationsAreNever) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 1 << 16);
  ASSERT_TRUE(r);
  Work past_the_frame;  // a handover one frame cannot carry
  for (std::uint32_t i = 0; i <= wire::kMaxParts; ++i) past_the_frame.between(*r, 0, *r, 0, 4);
  EXPECT_EQ(dev.room(past_the_frame), RIG_NEVER);
  // Rows overlap on either side (a pitch one byte short of the row, the other side's pitch
  // equal to the row or larger): never; both pitches equal to the row: fits, and runs.
  for (const auto& [src_pitch, dst_pitch] : {std::pair<std::uint64_t, std::uint64_t>{63, 64}, {64, 63}, {63, 128},
                                            {128, 63}}) {
    Work overlapping;
    overlapping.copy(rig_copy{harness::region_side(*r, 0), harness::region_side(*r, 4096), 2, 64, src_pitch, dst_pitch});
    EXPECT_EQ(dev.room(overlapping), RIG_NEVER) << "source pitch " << src_pitch << ", destination pitch " << dst_pitch;
  }
  Work edge;
  edge.copy(rig_copy{harness::region_side(*r, 0), harness::region_side(*r, 4096), 2, 64, 64, 64});
  ASSERT_EQ(dev.room(edge), RIG_FITS);
  dev.wait(dev.run(edge));
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

// Each copy into this process's memory is a record the receiving thread keeps until its bytes
// land, and a handover takes room for all of its records at once: past kMaxCopiesIntoHere it
// could never have it. room says RIG_NEVER; a submit that goes on anyway fails with the reason
// (it does not wait for ever) and the job goes on. Exactly that many run and land, twice.
TEST_F(Room, MoreCopiesIntoHereThanAHandoverHoldsAreNeverAndExactlySoManyLand) {
  constexpr std::uint32_t kMost = remote::Proxy::kMaxCopiesIntoHere;
  std::vector<std::uint8_t> back(kMost + 1, 0);
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, kMost);
  ASSERT_TRUE(r);
  std::vector<std::uint8_t> pattern(kMost);
  for (std::uint32_t i = 0; i < kMost; ++i) pattern[i] = static_cast<std::uint8_t>(i * 7 + 1);
  Work fill;
  fill.to_device(pattern.data(), *r, 0, kMost);
  dev.run(fill);
  Work most;  // one byte each
  for (std::uint32_t i = 0; i < kMost; ++i) most.to_host(*r, i, &back[i], 1);
  ASSERT_EQ(dev.room(most), RIG_FITS);
  dev.wait(dev.run(most));
  EXPECT_TRUE(std::equal(pattern.begin(), pattern.end(), back.begin()));
  // Again: the submitting side last saw its ring of records full, and every record is free.
  std::fill(back.begin(), back.end(), 0);
  ASSERT_EQ(dev.room(most), RIG_FITS);
  dev.wait(dev.run(most));
  EXPECT_TRUE(std::equal(pattern.begin(), pattern.end(), back.begin())) << "the second time";
  Work one_more;
  for (std::uint32_t i = 0; i <= kMost; ++i) one_more.to_host(*r, i % kMost, &back[i], 1);
  EXPECT_EQ(dev.room(one_more), RIG_NEVER);
  const char* why = nullptr;
  EXPECT_EQ(rig_proxy_submit(dev->c_handle(), &one_more.submission(), dev.last_value() + 1, &why), RIG_FAILED);
  ASSERT_NE(why, nullptr);
  EXPECT_STREQ(why, "more copies into this process's memory than a handover can hold");
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

}  // namespace
}  // namespace rig::test

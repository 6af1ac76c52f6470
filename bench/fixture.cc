#include "fixture.h"

#include <stdexcept>

#include "pattern.h"
#include "progress.h"
#include "report.h"

namespace rig::bench {

Fixture::Fixture(remote::Link& link, std::uint32_t device, std::uint64_t bytes)
    : link_(link), bytes_(bytes), dev_(link, device) {
  auto a = dev_->alloc(edge::Memory::kDevice, bytes);
  if (!a) throw std::runtime_error("the agent refused " + size_text(bytes) + " on " + dev_->name());
  a_ = *a;
  auto b = dev_->alloc(edge::Memory::kDevice, bytes);
  if (!b) {
    dev_->free(a_);
    throw std::runtime_error("the agent refused a second " + size_text(bytes) + " on " + dev_->name() +
                             " (rig-agent --device-budget)");
  }
  b_ = *b;
  pattern_.reset(new std::byte[bytes]);
  scratch_.reset(new std::byte[bytes]);
  progress("preparing two regions of %s on %s: region A filled and checked", size_text(bytes).c_str(),
           dev_->name().c_str());
  fill_pattern({pattern_.get(), bytes}, 0x5eed);
  poison({scratch_.get(), bytes});
  upload(pattern_.get(), a_, 0, bytes);
  download(a_, 0, scratch_.get(), bytes);
  expect_bytes(scratch_.get(), pattern_.get(), bytes, "the first upload of region A");
}

Fixture::~Fixture() {
  // The regions go with the job anyway; a failed job refuses nothing here that matters.
  try {
    dev_->free(a_);
    dev_->free(b_);
  } catch (const std::exception&) {
  }
}

void Fixture::upload(const void* host, const remote::Region& dst, std::uint64_t offset, std::uint64_t n) {
  harness::Work w;
  w.to_device(host, dst, offset, n);
  dev_.wait(dev_.run(w));
}

void Fixture::download(const remote::Region& src, std::uint64_t offset, void* host, std::uint64_t n) {
  harness::Work w;
  w.to_host(src, offset, host, n);
  dev_.wait(dev_.run(w));
}

void Fixture::scramble_b() {
  harness::Work w;
  w.between(a_, kRotation, b_, 0, bytes_ - kRotation);
  w.between(a_, 0, b_, bytes_ - kRotation, kRotation);
  dev_.wait(dev_.run(w));
}

}  // namespace rig::bench

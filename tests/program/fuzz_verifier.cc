// libFuzzer target: arbitrary bytes into Image::load; whatever verifies is run, every function
// of it, with a small budget over a couple of small buffers. Nothing may crash, read or write
// out of bounds, or break the Outcome contract.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <span>
#include <vector>

#include "rig/program/program.h"

namespace {

using rig::program::Image;
using rig::program::Launch;
using rig::program::Outcome;

constexpr std::uint64_t kBudget = 4096;
constexpr std::uint32_t kLargestScratch = 64 * 1024;  // larger scratch is legal, just slow here

class FuzzObjects : public rig::program::Objects {
 public:
  // Object 1 is 64 bytes, object 2 is 37 (not a whole number of words); 3 names nothing.
  FuzzObjects() : one_(64), two_(37) {}
  std::span<std::byte> resolve(std::uint32_t id) override {
    if (id == 1) return one_;
    if (id == 2) return two_;
    return {};
  }

 private:
  std::vector<std::byte> one_, two_;
};

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> binary(reinterpret_cast<const std::byte*>(data), size);
  auto loaded = Image::load(binary);
  if (auto* reason = std::get_if<std::string>(&loaded)) {
    check(!reason->empty());
    return 0;
  }
  const Image& image = std::get<Image>(loaded);
  check(image.function_count() > 0);
  FuzzObjects objects;
  for (std::uint32_t f = 0; f < image.function_count(); ++f) {
    const auto& info = image.function(f);
    check(image.find(info.name) == f);
    if (info.scratch_bytes > kLargestScratch) continue;
    std::vector<std::byte> scratch(info.scratch_bytes);
    // Buffer params alternate between the two objects (and name nothing for the last one of
    // every three); other params take words from the input.
    std::vector<std::uint32_t> words(info.n_params);
    for (std::uint32_t p = 0; p < info.n_params; ++p) {
      if (info.buffer_mask >> p & 1u) {
        words[p] = p % 3 + 1;
      } else {
        words[p] = p < size ? data[p] * 0x01010101u : p;
      }
    }
    const Outcome outcome = rig::program::run(Launch{&image, f, words, scratch}, objects, kBudget);
    check(outcome.instructions <= kBudget);
    check(outcome.ok == outcome.fault.empty());
    // A launch with every buffer known has a chance to run; also launch it with them all.
    for (std::uint32_t p = 0; p < info.n_params; ++p) {
      if (info.buffer_mask >> p & 1u) words[p] = p % 2 + 1;
    }
    const Outcome second = rig::program::run(Launch{&image, f, words, scratch}, objects, kBudget);
    check(second.instructions <= kBudget);
    check(second.ok == second.fault.empty());
  }
  return 0;
}

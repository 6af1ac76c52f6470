// Interpreter throughput: the shipped examples over 1 MiB buffers, in words processed per
// second (items_per_second) and bytes per second.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rig/program/program.h"

namespace {

using rig::program::Image;
using rig::program::Launch;

constexpr std::size_t kBytes = 1 << 20;
constexpr std::size_t kWords = kBytes / 4;
constexpr std::uint64_t kBudget = std::uint64_t{1} << 40;

Image load_example(const std::string& file) {
  std::ifstream in(std::string(RIG_PROGRAM_EXAMPLES_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto binary = rig::program::assemble(text.str());
  if (auto* reason = std::get_if<std::string>(&binary)) throw std::runtime_error(file + ": " + *reason);
  auto image = Image::load(std::get<std::vector<std::byte>>(binary));
  if (auto* reason = std::get_if<std::string>(&image)) throw std::runtime_error(file + ": " + *reason);
  return std::get<Image>(std::move(image));
}

class Buffers : public rig::program::Objects {
 public:
  explicit Buffers(int count) {
    for (int id = 1; id <= count; ++id) {
      auto& b = buffers_[id];
      b.resize(kBytes);
      for (std::size_t i = 0; i < kBytes; ++i) b[i] = static_cast<std::byte>(i * 31 + id);
    }
  }
  std::span<std::byte> resolve(std::uint32_t id) override {
    auto it = buffers_.find(id);
    return it == buffers_.end() ? std::span<std::byte>() : std::span<std::byte>(it->second);
  }

 private:
  std::map<std::uint32_t, std::vector<std::byte>> buffers_;
};

void run_example(benchmark::State& state, const std::string& file, const std::string& function,
                 std::vector<std::uint32_t> words, int buffers) {
  const Image image = load_example(file);
  Buffers objects(buffers);
  const Launch launch{&image, *image.find(function), words, {}};
  std::uint64_t instructions = 0;
  for (auto _ : state) {
    const auto outcome = rig::program::run(launch, objects, kBudget);
    if (!outcome.ok) {
      state.SkipWithError(outcome.fault.c_str());
      break;
    }
    instructions = outcome.instructions;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kWords));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
  state.counters["insns_per_word"] = static_cast<double>(instructions) / kWords;
  state.counters["insns_per_second"] = benchmark::Counter(
      static_cast<double>(instructions) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_Fill(benchmark::State& state) { run_example(state, "fill.rasm", "fill", {1, 0xA5A5A5A5}, 1); }
void BM_Add(benchmark::State& state) { run_example(state, "add.rasm", "add", {1, 2, 3}, 3); }
void BM_Checksum(benchmark::State& state) {
  run_example(state, "checksum.rasm", "checksum", {1, 2}, 2);
}

BENCHMARK(BM_Fill)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Add)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Checksum)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// rig.program: the code the machine's host runs for `words` parts.
//
// Contract between the agent (which loads, verifies and runs programs) and this library.
// A binary is verified once at load (Image::load); a verified image can be run any number of
// times, concurrently, each launch with its own scratch memory. Nothing here is native code:
// every instruction is interpreted with bounds-checked memory access and an instruction budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rig::program {

// Limits a binary must respect; the verifier rejects anything past them.
inline constexpr std::size_t kMaxBinaryBytes = 1u << 20;   // 1 MiB
inline constexpr std::uint32_t kMaxFunctions = 256;
inline constexpr std::uint32_t kMaxNameBytes = 64;
inline constexpr std::uint32_t kMaxParams = 32;            // words a launch passes
inline constexpr std::uint32_t kMaxScratchBytes = 64u << 20;

struct FunctionInfo {
  std::string name;
  std::uint32_t n_params = 0;      // words a launch of it passes, exactly
  std::uint32_t buffer_mask = 0;   // bit i set: param i is a buffer, the word is an object id
  std::uint32_t scratch_bytes = 0; // per-launch scratch memory, a multiple of 4
};

class Image {
 public:
  // Verifies `binary` and returns the image, or the precise reason it is rejected
  // (this text is what the proxy's image returns as its Error).
  static std::variant<Image, std::string> load(std::span<const std::byte> binary);

  std::optional<std::uint32_t> find(std::string_view name) const;
  const FunctionInfo& function(std::uint32_t index) const;
  std::size_t function_count() const;

  // Implementation-defined members below (decoded, verified code).
  struct Impl;
  Image(const Image&) = default;
  Image(Image&&) noexcept = default;
  Image& operator=(const Image&) = default;
  Image& operator=(Image&&) noexcept = default;
  ~Image();
  const Impl& impl() const { return *impl_; }

 private:
  Image() = default;
  std::shared_ptr<const Impl> impl_;
};

// The memory a launch reaches: resolves a buffer word (an agent object id) to its bytes.
// An empty span means the id names no object the launch may touch: the launch faults.
class Objects {
 public:
  virtual ~Objects() = default;
  virtual std::span<std::byte> resolve(std::uint32_t object_id) = 0;
};

struct Launch {
  const Image* image = nullptr;
  std::uint32_t function = 0;             // index from Image::find
  std::span<const std::uint32_t> words;   // exactly function(function).n_params words
  std::span<std::byte> scratch;           // at least scratch_bytes, made by the caller beforehand
};

struct Outcome {
  bool ok = false;
  std::string fault;                // why the launch faulted, when !ok (names function and pc)
  std::uint64_t instructions = 0;   // executed
};

// Runs one launch. Never throws for anything the program does; an out-of-bounds access,
// an unknown buffer, a wrong word count or an exhausted budget is an Outcome with ok=false.
Outcome run(const Launch& launch, Objects& objects, std::uint64_t budget);

// Assembles the text form into a binary, or returns "line N: reason".
std::variant<std::vector<std::byte>, std::string> assemble(std::string_view text);

}  // namespace rig::program

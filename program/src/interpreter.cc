// The interpreter: runs one launch of a verified function.
//
// The verifier has already proven every register, param, memory space and branch target in
// range and that the code cannot run off its end, so the loop below checks only what depends
// on the launch: memory indices against the buffers' sizes, divisors, and the budget.
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "format.h"
#include "image_impl.h"
#include "rig/program/program.h"

namespace rig::program {
namespace {

using format::Op;

// One memory space a launch reaches: a buffer param or the scratch.
struct Memory {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  std::size_t words = 0;  // whole 32-bit words; a trailing partial word is reachable by byte only
};

enum class Trap { kReturned, kBudget, kWordIndex, kByteIndex, kDivisionByZero };

struct Stop {
  Trap trap = Trap::kReturned;
  std::uint32_t pc = 0;     // instruction index
  std::uint32_t index = 0;  // the index out of bounds, for kWordIndex and kByteIndex
  std::uint64_t instructions = 0;
};

// Words in memory are little-endian, whatever the host.
inline std::uint32_t load_word(const std::byte* p) {
  std::uint32_t v;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, sizeof v);
  } else {
    v = std::to_integer<std::uint32_t>(p[0]) | std::to_integer<std::uint32_t>(p[1]) << 8 |
        std::to_integer<std::uint32_t>(p[2]) << 16 | std::to_integer<std::uint32_t>(p[3]) << 24;
  }
  return v;
}

inline void store_word(std::byte* p, std::uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, sizeof v);
  } else {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
  }
}

inline std::uint32_t saturate(std::size_t n) {
  return n > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                        : static_cast<std::uint32_t>(n);
}

// Where word or byte `i` of `m` lies (kWordIndex: word i, kByteIndex: byte i), or null once
// `stop` notes the index out of bounds.
inline std::byte* element(const Memory& m, std::uint32_t i, Trap out_of_bounds, Stop& stop) {
  const bool words = out_of_bounds == Trap::kWordIndex;
  if (i >= (words ? m.words : m.bytes)) {
    stop.trap = out_of_bounds;
    stop.index = i;
    return nullptr;
  }
  return m.data + (words ? std::size_t{i} * 4 : std::size_t{i});
}

Stop execute(const Insn* code, const std::uint32_t* words,
             const std::array<Memory, kMemorySlots>& mem, std::uint64_t budget) {
  std::uint32_t r[kRegisterFile] = {};  // r[kZeroRegister] is never written
  std::uint64_t remaining = budget;
  std::uint32_t pc = 0;
  Stop stop;

  for (;;) {
    if (remaining == 0) {
      stop.trap = Trap::kBudget;
      break;
    }
    --remaining;
    const Insn& in = code[pc];
    switch (in.op) {
      case Op::kRet:
        stop.trap = Trap::kReturned;
        stop.pc = pc;
        stop.instructions = budget - remaining;
        return stop;
      case Op::kConst:
        r[in.a] = in.imm;
        ++pc;
        break;
      case Op::kMov:
        r[in.a] = r[in.b];
        ++pc;
        break;
      case Op::kParam:
        r[in.a] = words[in.b];
        ++pc;
        break;

      case Op::kAdd: r[in.a] = r[in.b] + r[in.c]; ++pc; break;
      case Op::kSub: r[in.a] = r[in.b] - r[in.c]; ++pc; break;
      case Op::kMul: r[in.a] = r[in.b] * r[in.c]; ++pc; break;
      case Op::kDivu:
        if (r[in.c] == 0) {
          stop.trap = Trap::kDivisionByZero;
          goto trapped;
        }
        r[in.a] = r[in.b] / r[in.c];
        ++pc;
        break;
      case Op::kRemu:
        if (r[in.c] == 0) {
          stop.trap = Trap::kDivisionByZero;
          goto trapped;
        }
        r[in.a] = r[in.b] % r[in.c];
        ++pc;
        break;
      case Op::kAnd: r[in.a] = r[in.b] & r[in.c]; ++pc; break;
      case Op::kOr: r[in.a] = r[in.b] | r[in.c]; ++pc; break;
      case Op::kXor: r[in.a] = r[in.b] ^ r[in.c]; ++pc; break;
      // Shift amounts are taken modulo 32.
      case Op::kShl: r[in.a] = r[in.b] << (r[in.c] & 31); ++pc; break;
      case Op::kShr: r[in.a] = r[in.b] >> (r[in.c] & 31); ++pc; break;
      case Op::kSar:
        r[in.a] = static_cast<std::uint32_t>(static_cast<std::int32_t>(r[in.b]) >> (r[in.c] & 31));
        ++pc;
        break;

      case Op::kAddI: r[in.a] = r[in.b] + in.imm; ++pc; break;
      case Op::kSubI: r[in.a] = r[in.b] - in.imm; ++pc; break;
      case Op::kMulI: r[in.a] = r[in.b] * in.imm; ++pc; break;
      case Op::kDivuI: r[in.a] = r[in.b] / in.imm; ++pc; break;  // verified non-zero
      case Op::kRemuI: r[in.a] = r[in.b] % in.imm; ++pc; break;  // verified non-zero
      case Op::kAndI: r[in.a] = r[in.b] & in.imm; ++pc; break;
      case Op::kOrI: r[in.a] = r[in.b] | in.imm; ++pc; break;
      case Op::kXorI: r[in.a] = r[in.b] ^ in.imm; ++pc; break;
      case Op::kShlI: r[in.a] = r[in.b] << (in.imm & 31); ++pc; break;
      case Op::kShrI: r[in.a] = r[in.b] >> (in.imm & 31); ++pc; break;
      case Op::kSarI:
        r[in.a] = static_cast<std::uint32_t>(static_cast<std::int32_t>(r[in.b]) >> (in.imm & 31));
        ++pc;
        break;

      case Op::kJmp: pc = in.imm; break;
      case Op::kBeq: pc = r[in.a] == r[in.b] ? in.imm : pc + 1; break;
      case Op::kBne: pc = r[in.a] != r[in.b] ? in.imm : pc + 1; break;
      case Op::kBltu: pc = r[in.a] < r[in.b] ? in.imm : pc + 1; break;
      case Op::kBgeu: pc = r[in.a] >= r[in.b] ? in.imm : pc + 1; break;
      case Op::kBlt:
        pc = static_cast<std::int32_t>(r[in.a]) < static_cast<std::int32_t>(r[in.b]) ? in.imm
                                                                                    : pc + 1;
        break;
      case Op::kBge:
        pc = static_cast<std::int32_t>(r[in.a]) >= static_cast<std::int32_t>(r[in.b]) ? in.imm
                                                                                     : pc + 1;
        break;

      case Op::kLd:
        if (const std::byte* p = element(mem[in.b], r[in.c] + in.imm, Trap::kWordIndex, stop)) {
          r[in.a] = load_word(p);
          ++pc;
          break;
        }
        goto trapped;
      case Op::kSt:
        if (std::byte* p = element(mem[in.b], r[in.c] + in.imm, Trap::kWordIndex, stop)) {
          store_word(p, r[in.a]);
          ++pc;
          break;
        }
        goto trapped;
      case Op::kLdb:
        if (const std::byte* p = element(mem[in.b], r[in.c] + in.imm, Trap::kByteIndex, stop)) {
          r[in.a] = std::to_integer<std::uint32_t>(*p);
          ++pc;
          break;
        }
        goto trapped;
      case Op::kStb:
        if (std::byte* p = element(mem[in.b], r[in.c] + in.imm, Trap::kByteIndex, stop)) {
          *p = static_cast<std::byte>(r[in.a] & 0xFF);
          ++pc;
          break;
        }
        goto trapped;
      case Op::kSize: r[in.a] = saturate(mem[in.b].words); ++pc; break;
      case Op::kSizeb: r[in.a] = saturate(mem[in.b].bytes); ++pc; break;
    }
  }
trapped:
  stop.pc = pc;
  stop.instructions = budget - remaining;
  return stop;
}

std::string mnemonic(const Insn& insn) {
  return std::string(format::op_info(static_cast<std::uint8_t>(insn.op))->mnemonic);
}

std::string space_name(std::uint8_t slot) {
  if (slot == kScratchSlot) return "the scratch";
  return "param " + std::to_string(slot) + "'s buffer";
}

Outcome fault(std::string text, std::uint64_t instructions = 0) {
  return Outcome{false, std::move(text), instructions};
}

}  // namespace

Outcome run(const Launch& launch, Objects& objects, std::uint64_t budget) {
  if (launch.image == nullptr) return fault("launch names no image");
  const Image::Impl& image = launch.image->impl();
  if (launch.function >= image.functions.size()) {
    return fault("launch names function " + std::to_string(launch.function) + "; the image has " +
                 std::to_string(image.functions.size()) + " functions");
  }
  const FunctionInfo& info = image.functions[launch.function];
  const DecodedFunction& fn = image.decoded[launch.function];
  const std::string where = "function '" + info.name + "': ";
  const std::string at_entry = where + "at entry (pc 0): ";

  if (launch.words.size() != info.n_params) {
    return fault(at_entry + "launch passes " + std::to_string(launch.words.size()) +
                 " words; the function takes " + std::to_string(info.n_params));
  }
  if (launch.scratch.size() < info.scratch_bytes) {
    return fault(at_entry + "launch scratch is " + std::to_string(launch.scratch.size()) +
                 " bytes; the function needs " + std::to_string(info.scratch_bytes));
  }

  std::array<Memory, kMemorySlots> mem{};
  for (std::uint32_t p = 0; p < info.n_params; ++p) {
    if ((info.buffer_mask >> p & 1u) == 0) continue;
    const std::span<std::byte> object = objects.resolve(launch.words[p]);
    if (object.empty()) {
      return fault(at_entry + "param " + std::to_string(p) + " is object " +
                   std::to_string(launch.words[p]) +
                   ", which is no buffer this launch may touch");
    }
    mem[p] = Memory{object.data(), object.size(), object.size() / 4};
  }
  // The program sees exactly the scratch it declared, zeroed: nothing of an earlier launch.
  if (info.scratch_bytes != 0) {
    std::memset(launch.scratch.data(), 0, info.scratch_bytes);
    mem[kScratchSlot] = Memory{launch.scratch.data(), info.scratch_bytes, info.scratch_bytes / 4};
  }

  const Stop stop = execute(fn.code.data(), launch.words.data(), mem, budget);
  if (stop.trap == Trap::kReturned) return Outcome{true, {}, stop.instructions};

  const Insn& insn = fn.code[stop.pc];
  std::string text = where + "pc " + std::to_string(stop.pc * format::kInsnBytes) +
                     " (instruction " + std::to_string(stop.pc) + "): ";
  switch (stop.trap) {
    case Trap::kReturned:
      break;
    case Trap::kBudget:
      text += "instruction budget of " + std::to_string(budget) + " exhausted";
      break;
    case Trap::kWordIndex:
      text += mnemonic(insn) + ": word index " + std::to_string(stop.index) + " is outside " +
              space_name(insn.b) + " (" + std::to_string(mem[insn.b].words) + " words)";
      break;
    case Trap::kByteIndex:
      text += mnemonic(insn) + ": byte index " + std::to_string(stop.index) + " is outside " +
              space_name(insn.b) + " (" + std::to_string(mem[insn.b].bytes) + " bytes)";
      break;
    case Trap::kDivisionByZero:
      text += mnemonic(insn) + ": division by zero";
      break;
  }
  return fault(std::move(text), stop.instructions);
}

}  // namespace rig::program

// Image::Impl: a verified binary, decoded once into the form the interpreter runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format.h"
#include "rig/program/program.h"

namespace rig::program {

// One decoded instruction. Compared with the binary encoding, operands are rewritten so that
// the interpreter needs no checks the verifier already made:
//   - branch and jump targets are instruction indices, not byte offsets;
//   - a memory space is a slot index: 0..kMaxParams-1 a buffer param, kScratchSlot the scratch;
//   - a missing index register (kNoIndex) reads kZeroRegister, which always holds 0.
struct Insn {
  format::Op op;
  std::uint8_t a;
  std::uint8_t b;
  std::uint8_t c;
  std::uint32_t imm;
};
static_assert(sizeof(Insn) == 8);

inline constexpr std::uint8_t kScratchSlot = kMaxParams;
inline constexpr std::uint32_t kMemorySlots = kMaxParams + 1;
inline constexpr std::uint8_t kZeroRegister = format::kRegisters;  // never written
inline constexpr std::uint32_t kRegisterFile = format::kRegisters + 1;

struct DecodedFunction {
  std::vector<Insn> code;  // non-empty; the last instruction is ret or jmp
};

struct Image::Impl {
  std::vector<FunctionInfo> functions;
  std::vector<DecodedFunction> decoded;  // parallel to functions
  std::map<std::string, std::uint32_t, std::less<>> by_name;
};

}  // namespace rig::program

// The rig.program binary layout (FORMAT.md is the prose form of this file).
//
// All integers are little-endian. A binary is, with nothing before, between or after:
//   header            kHeaderBytes
//   function table    function_count entries of kEntryBytes
//   names section     names_bytes bytes
//   code section      code_bytes bytes of kInsnBytes-byte instructions
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace rig::program::format {

inline constexpr std::array<char, 4> kMagic = {'R', 'I', 'G', 'P'};
inline constexpr std::uint16_t kVersion = 1;

// Header fields, byte offsets.
inline constexpr std::size_t kHeaderMagic = 0;           // char[4]
inline constexpr std::size_t kHeaderVersion = 4;         // u16
inline constexpr std::size_t kHeaderReserved = 6;        // u16, must be 0
inline constexpr std::size_t kHeaderFunctionCount = 8;   // u32
inline constexpr std::size_t kHeaderNamesBytes = 12;     // u32
inline constexpr std::size_t kHeaderCodeBytes = 16;      // u32
inline constexpr std::size_t kHeaderBytes = 20;

// Function table entry fields, byte offsets within the entry.
inline constexpr std::size_t kEntryNameOffset = 0;    // u32, into the names section
inline constexpr std::size_t kEntryNameLength = 4;    // u32
inline constexpr std::size_t kEntryParams = 8;        // u32
inline constexpr std::size_t kEntryBufferMask = 12;   // u32
inline constexpr std::size_t kEntryScratchBytes = 16; // u32
inline constexpr std::size_t kEntryCodeOffset = 20;   // u32, into the code section
inline constexpr std::size_t kEntryCodeLength = 24;   // u32, bytes
inline constexpr std::size_t kEntryBytes = 28;

// Instruction: opcode, three operand bytes, a 32-bit immediate.
inline constexpr std::size_t kInsnOp = 0;
inline constexpr std::size_t kInsnA = 1;
inline constexpr std::size_t kInsnB = 2;
inline constexpr std::size_t kInsnC = 3;
inline constexpr std::size_t kInsnImm = 4;
inline constexpr std::size_t kInsnBytes = 8;

inline constexpr std::uint32_t kRegisters = 16;
// Operand byte values with a special meaning.
inline constexpr std::uint8_t kScratchSpace = 0xFF;  // memory space operand: the scratch memory
inline constexpr std::uint8_t kNoIndex = 0xFF;       // index register operand: none, index is imm

enum class Op : std::uint8_t {
  // 0x00 is deliberately no opcode, so zero-filled code is rejected.
  kRet = 0x01,
  kConst = 0x02,
  kMov = 0x03,
  kParam = 0x04,

  kAdd = 0x10,
  kSub = 0x11,
  kMul = 0x12,
  kDivu = 0x13,
  kRemu = 0x14,
  kAnd = 0x15,
  kOr = 0x16,
  kXor = 0x17,
  kShl = 0x18,
  kShr = 0x19,
  kSar = 0x1A,

  // Register-immediate forms: the register form's opcode + kImmediateForm.
  kAddI = 0x20,
  kSubI = 0x21,
  kMulI = 0x22,
  kDivuI = 0x23,
  kRemuI = 0x24,
  kAndI = 0x25,
  kOrI = 0x26,
  kXorI = 0x27,
  kShlI = 0x28,
  kShrI = 0x29,
  kSarI = 0x2A,

  kJmp = 0x30,
  kBeq = 0x31,
  kBne = 0x32,
  kBltu = 0x33,
  kBgeu = 0x34,
  kBlt = 0x35,
  kBge = 0x36,

  kLd = 0x40,
  kSt = 0x41,
  kLdb = 0x42,
  kStb = 0x43,
  kSize = 0x44,
  kSizeb = 0x45,
};
inline constexpr std::uint8_t kImmediateForm = 0x10;

// What each operand field of an opcode holds; the verifier requires unused fields to be zero.
enum class Form : std::uint8_t {
  kNone,      // ret:          nothing
  kRegImm,    // const:        a=rd, imm=value
  kRegReg,    // mov:          a=rd, b=rs
  kRegParam,  // param:        a=rd, b=param index
  kAlu,       // add..sar:     a=rd, b=ra, c=rb
  kAluImm,    // addi..sari:   a=rd, b=ra, imm=value
  kJump,      // jmp:          imm=target (byte offset in the function's code)
  kBranch,    // beq..bge:     a=ra, b=rb, imm=target
  kMemory,    // ld..stb:      a=data register, b=space, c=index register or kNoIndex, imm=offset
  kSize,      // size, sizeb:  a=rd, b=space
};

struct OpInfo {
  Op op;
  std::string_view mnemonic;
  Form form;
};

// Every opcode, in opcode order.
std::span<const OpInfo> ops();
// The opcode's description, or nullopt for a byte that is no opcode.
std::optional<OpInfo> op_info(std::uint8_t byte);
// The opcode named `mnemonic` in its register form (ALU immediates are chosen by operand).
std::optional<OpInfo> op_by_mnemonic(std::string_view mnemonic);

// Names use these bytes only, so that they read plainly in every message.
bool is_name_byte(char c);

// Little-endian field access over bytes the caller has bounds-checked.
std::uint16_t read_u16(std::span<const std::byte> bytes, std::size_t offset);
std::uint32_t read_u32(std::span<const std::byte> bytes, std::size_t offset);
void write_u16(std::vector<std::byte>& out, std::uint16_t value);
void write_u32(std::vector<std::byte>& out, std::uint32_t value);

}  // namespace rig::program::format

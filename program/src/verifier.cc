#include "verifier.h"

#include <cstdint>
#include <optional>
#include <string_view>

#include "format.h"

namespace rig::program {
namespace {

using format::Form;
using format::Op;

std::string hex(std::uint32_t value) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[value & 0xF]);
    value >>= 4;
  } while (value != 0);
  return "0x" + out;
}

std::string num(std::uint64_t value) { return std::to_string(value); }

// Checks one instruction of a function and decodes it; the caller prefixes each reason with
// the function and instruction.
class InstructionChecker {
 public:
  InstructionChecker(const FunctionInfo& info, std::uint32_t code_length)
      : info_(info), code_length_(code_length) {}

  std::optional<std::string> check(std::span<const std::byte> bytes, Insn& out) const {
    const std::uint8_t op_byte = std::to_integer<std::uint8_t>(bytes[format::kInsnOp]);
    const std::uint8_t a = std::to_integer<std::uint8_t>(bytes[format::kInsnA]);
    const std::uint8_t b = std::to_integer<std::uint8_t>(bytes[format::kInsnB]);
    const std::uint8_t c = std::to_integer<std::uint8_t>(bytes[format::kInsnC]);
    const std::uint32_t imm = format::read_u32(bytes, format::kInsnImm);

    const std::optional<format::OpInfo> info = format::op_info(op_byte);
    if (!info) return "opcode " + hex(op_byte) + " is not an instruction";
    const std::string m(info->mnemonic);
    out = Insn{info->op, a, b, c, imm};

    // Which fields the form uses; each used one is checked below, unused ones must be zero.
    bool uses_a = false, uses_b = false, uses_c = false, uses_imm = false;
    switch (info->form) {
      case Form::kNone:
        break;
      case Form::kRegImm:
        uses_a = uses_imm = true;
        if (auto r = check_register(m, "a", a)) return r;
        break;
      case Form::kRegReg:
        uses_a = uses_b = true;
        if (auto r = check_register(m, "a", a)) return r;
        if (auto r = check_register(m, "b", b)) return r;
        break;
      case Form::kRegParam:
        uses_a = uses_b = true;
        if (auto r = check_register(m, "a", a)) return r;
        if (b >= info_.n_params) return param_out_of_range(m, b);
        break;
      case Form::kAlu:
        uses_a = uses_b = uses_c = true;
        if (auto r = check_register(m, "a", a)) return r;
        if (auto r = check_register(m, "b", b)) return r;
        if (auto r = check_register(m, "c", c)) return r;
        break;
      case Form::kAluImm:
        uses_a = uses_b = uses_imm = true;
        if (auto r = check_register(m, "a", a)) return r;
        if (auto r = check_register(m, "b", b)) return r;
        if ((info->op == Op::kDivuI || info->op == Op::kRemuI) && imm == 0) {
          return m + ": divisor is 0";
        }
        break;
      case Form::kJump:
        uses_imm = true;
        if (auto r = check_target(m, imm, out.imm)) return r;
        break;
      case Form::kBranch:
        uses_a = uses_b = uses_imm = true;
        if (auto r = check_register(m, "a", a)) return r;
        if (auto r = check_register(m, "b", b)) return r;
        if (auto r = check_target(m, imm, out.imm)) return r;
        break;
      case Form::kMemory:
        uses_a = uses_b = uses_c = uses_imm = true;
        if (auto r = check_register(m, "a", a)) return r;
        if (auto r = check_space(m, b, out.b)) return r;
        if (c == format::kNoIndex) {
          out.c = kZeroRegister;
        } else if (auto r = check_register(m, "c", c)) {
          return r;
        }
        break;
      case Form::kSize:
        uses_a = uses_b = true;
        if (auto r = check_register(m, "a", a)) return r;
        if (auto r = check_space(m, b, out.b)) return r;
        break;
    }
    if (!uses_a && a != 0) return unused(m, "operand a", a);
    if (!uses_b && b != 0) return unused(m, "operand b", b);
    if (!uses_c && c != 0) return unused(m, "operand c", c);
    if (!uses_imm && imm != 0) return unused(m, "immediate", imm);
    return std::nullopt;
  }

 private:
  static std::optional<std::string> check_register(const std::string& m, std::string_view field,
                                                   std::uint8_t reg) {
    if (reg < format::kRegisters) return std::nullopt;
    return m + ": operand " + std::string(field) + " names register " + num(reg) +
           "; registers are 0.." + num(format::kRegisters - 1);
  }

  static std::string unused(const std::string& m, std::string_view field, std::uint32_t value) {
    return m + ": " + std::string(field) + " is " + hex(value) + ", must be 0 (unused)";
  }

  std::string param_out_of_range(const std::string& m, std::uint8_t param) const {
    return m + ": param " + num(param) + " is out of range; the function takes " +
           num(info_.n_params) + " params";
  }

  std::optional<std::string> check_space(const std::string& m, std::uint8_t space,
                                         std::uint8_t& slot) const {
    if (space == format::kScratchSpace) {
      if (info_.scratch_bytes == 0) {
        return m + ": uses scratch, but the function declares no scratch bytes";
      }
      slot = kScratchSlot;
      return std::nullopt;
    }
    if (space >= info_.n_params) return param_out_of_range(m, space);
    if ((info_.buffer_mask >> space & 1u) == 0) {
      return m + ": param " + num(space) + " is not a buffer (buffer_mask " +
             hex(info_.buffer_mask) + ")";
    }
    slot = space;
    return std::nullopt;
  }

  std::optional<std::string> check_target(const std::string& m, std::uint32_t target,
                                          std::uint32_t& index) const {
    if (target >= code_length_) {
      return m + ": branch target " + num(target) + " is outside the code (" +
             num(code_length_) + " bytes)";
    }
    if (target % format::kInsnBytes != 0) {
      return m + ": branch target " + num(target) +
             " is not on an instruction boundary (a multiple of 8)";
    }
    index = target / format::kInsnBytes;
    return std::nullopt;
  }

  const FunctionInfo& info_;
  std::uint32_t code_length_;
};

struct Sections {
  std::span<const std::byte> table;
  std::span<const std::byte> names;
  std::span<const std::byte> code;
};

std::variant<Sections, std::string> check_header(std::span<const std::byte> binary) {
  if (binary.size() < format::kHeaderBytes) {
    return "binary is " + num(binary.size()) + " bytes, shorter than the " +
           num(format::kHeaderBytes) + "-byte header";
  }
  if (binary.size() > kMaxBinaryBytes) {
    return "binary is " + num(binary.size()) + " bytes, more than the limit of " +
           num(kMaxBinaryBytes);
  }
  for (std::size_t i = 0; i < format::kMagic.size(); ++i) {
    if (std::to_integer<char>(binary[format::kHeaderMagic + i]) != format::kMagic[i]) {
      return std::string("magic is not \"RIGP\"");
    }
  }
  const std::uint16_t version = format::read_u16(binary, format::kHeaderVersion);
  if (version != format::kVersion) {
    return "version " + num(version) + " is not supported (this reader knows version " +
           num(format::kVersion) + ")";
  }
  const std::uint16_t reserved = format::read_u16(binary, format::kHeaderReserved);
  if (reserved != 0) return "reserved header field is " + hex(reserved) + ", must be 0";

  const std::uint32_t count = format::read_u32(binary, format::kHeaderFunctionCount);
  const std::uint32_t names_bytes = format::read_u32(binary, format::kHeaderNamesBytes);
  const std::uint32_t code_bytes = format::read_u32(binary, format::kHeaderCodeBytes);
  if (count == 0) return std::string("binary declares no functions");
  if (count > kMaxFunctions) {
    return "function count " + num(count) + " is more than the limit of " + num(kMaxFunctions);
  }
  // 64-bit sums: no 32-bit field can make them wrap.
  const std::uint64_t table_end = format::kHeaderBytes + std::uint64_t{count} * format::kEntryBytes;
  const std::uint64_t names_end = table_end + names_bytes;
  const std::uint64_t code_end = names_end + code_bytes;
  if (table_end > binary.size()) {
    return "function table of " + num(count) + " entries (" +
           num(table_end - format::kHeaderBytes) + " bytes) runs past the end of the binary (" +
           num(binary.size()) + " bytes)";
  }
  if (names_end > binary.size()) {
    return "names section of " + num(names_bytes) + " bytes at offset " + num(table_end) +
           " runs past the end of the binary (" + num(binary.size()) + " bytes)";
  }
  if (code_end > binary.size()) {
    return "code section of " + num(code_bytes) + " bytes at offset " + num(names_end) +
           " runs past the end of the binary (" + num(binary.size()) + " bytes)";
  }
  if (code_end < binary.size()) {
    return num(binary.size() - code_end) + " bytes of trailing garbage after the code section";
  }
  if (code_bytes % format::kInsnBytes != 0) {
    return "code section is " + num(code_bytes) + " bytes, not a whole number of " +
           num(format::kInsnBytes) + "-byte instructions";
  }
  return Sections{
      binary.subspan(format::kHeaderBytes, table_end - format::kHeaderBytes),
      binary.subspan(table_end, names_bytes),
      binary.subspan(names_end, code_bytes),
  };
}

// Checks the name of function `index`; on success `name` holds it.
std::optional<std::string> check_name(std::span<const std::byte> entry,
                                      std::span<const std::byte> names, std::uint32_t index,
                                      const Image::Impl& image, std::string& name) {
  const std::string where = "function " + num(index) + ": ";
  const std::uint32_t offset = format::read_u32(entry, format::kEntryNameOffset);
  const std::uint32_t length = format::read_u32(entry, format::kEntryNameLength);
  if (length == 0) return where + "name is empty";
  if (length > kMaxNameBytes) {
    return where + "name is " + num(length) + " bytes, more than the limit of " +
           num(kMaxNameBytes);
  }
  if (std::uint64_t{offset} + length > names.size()) {
    return where + "name (offset " + num(offset) + ", length " + num(length) +
           ") runs past the names section (" + num(names.size()) + " bytes)";
  }
  name.clear();
  for (std::uint32_t i = 0; i < length; ++i) {
    const char c = std::to_integer<char>(names[offset + i]);
    if (!format::is_name_byte(c)) {
      return where + "name byte " + num(i) + " is " + hex(static_cast<unsigned char>(c)) +
             "; names use letters, digits, '_', '.' and '-'";
    }
    name.push_back(c);
  }
  if (auto it = image.by_name.find(name); it != image.by_name.end()) {
    return where + "name '" + name + "' is already the name of function " + num(it->second);
  }
  return std::nullopt;
}

std::optional<std::string> check_function(std::span<const std::byte> entry,
                                          std::span<const std::byte> code_section,
                                          FunctionInfo& info, DecodedFunction& decoded) {
  const std::string where = "function '" + info.name + "': ";
  info.n_params = format::read_u32(entry, format::kEntryParams);
  info.buffer_mask = format::read_u32(entry, format::kEntryBufferMask);
  info.scratch_bytes = format::read_u32(entry, format::kEntryScratchBytes);
  const std::uint32_t code_offset = format::read_u32(entry, format::kEntryCodeOffset);
  const std::uint32_t code_length = format::read_u32(entry, format::kEntryCodeLength);

  if (info.n_params > kMaxParams) {
    return where + "takes " + num(info.n_params) + " params, more than the limit of " +
           num(kMaxParams);
  }
  if (const std::uint64_t beyond = std::uint64_t{info.buffer_mask} >> info.n_params;
      beyond != 0) {
    std::uint32_t param = info.n_params;
    while ((info.buffer_mask >> param & 1u) == 0) ++param;
    return where + "buffer_mask " + hex(info.buffer_mask) + " marks param " + num(param) +
           " as a buffer, but the function takes " + num(info.n_params) + " params";
  }
  if (info.scratch_bytes % 4 != 0) {
    return where + "scratch_bytes " + num(info.scratch_bytes) + " is not a multiple of 4";
  }
  if (info.scratch_bytes > kMaxScratchBytes) {
    return where + "scratch_bytes " + num(info.scratch_bytes) + " is more than the limit of " +
           num(kMaxScratchBytes);
  }
  if (code_length == 0) return where + "code is empty";
  if (code_offset % format::kInsnBytes != 0) {
    return where + "code offset " + num(code_offset) +
           " is not on an instruction boundary (a multiple of 8)";
  }
  if (code_length % format::kInsnBytes != 0) {
    return where + "code length " + num(code_length) +
           " is not a whole number of 8-byte instructions";
  }
  if (std::uint64_t{code_offset} + code_length > code_section.size()) {
    return where + "code (offset " + num(code_offset) + ", length " + num(code_length) +
           ") runs past the code section (" + num(code_section.size()) + " bytes)";
  }

  const std::span<const std::byte> code = code_section.subspan(code_offset, code_length);
  const std::size_t count = code.size() / format::kInsnBytes;
  decoded.code.resize(count);
  const InstructionChecker checker(info, code_length);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t pc = k * format::kInsnBytes;
    if (auto reason = checker.check(code.subspan(pc, format::kInsnBytes), decoded.code[k])) {
      return where + "instruction " + num(k) + " (pc " + num(pc) + "): " + *reason;
    }
  }
  const Op last = decoded.code.back().op;
  if (last != Op::kRet && last != Op::kJmp) {
    return where + "last instruction " + num(count - 1) + " (pc " +
           num((count - 1) * format::kInsnBytes) + ") is '" +
           std::string(format::op_info(static_cast<std::uint8_t>(last))->mnemonic) +
           "'; code must end with ret or jmp";
  }
  return std::nullopt;
}

}  // namespace

std::variant<Image::Impl, std::string> verify(std::span<const std::byte> binary) {
  auto header = check_header(binary);
  if (auto* reason = std::get_if<std::string>(&header)) return std::move(*reason);
  const Sections& sections = std::get<Sections>(header);

  Image::Impl image;
  const std::uint32_t count =
      static_cast<std::uint32_t>(sections.table.size() / format::kEntryBytes);
  image.functions.resize(count);
  image.decoded.resize(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto entry = sections.table.subspan(std::size_t{i} * format::kEntryBytes,
                                              format::kEntryBytes);
    FunctionInfo& info = image.functions[i];
    if (auto reason = check_name(entry, sections.names, i, image, info.name)) {
      return std::move(*reason);
    }
    if (auto reason = check_function(entry, sections.code, info, image.decoded[i])) {
      return std::move(*reason);
    }
    image.by_name.emplace(info.name, i);
  }
  return image;
}

}  // namespace rig::program

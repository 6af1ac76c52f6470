// The assembler: the text form of FORMAT.md ("Assembly") into a binary.
//
// One pass over the lines collects each function's instructions with their labels still
// unresolved; a function's `end` resolves its labels; the binary is laid out at the end of the
// text and checked once more by the verifier.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "assembly.h"
#include "format.h"
#include "rig/program/program.h"
#include "verifier.h"

namespace rig::program {
namespace {

using format::Form;
using format::Op;
using namespace assembly;

class Assembler {
 public:
  std::vector<std::byte> run(std::string_view text) {
    int number = 0;
    for (std::size_t start = 0; start < text.size();) {
      const std::size_t stop = std::min(text.find('\n', start), text.size());
      line_ = ++number;
      line(text.substr(start, stop - start));
      start = stop + 1;
    }
    if (current_) {
      line_ = current_->line;
      throw Error{"function " + quoted(current_->info.name) + " has no 'end'"};
    }
    if (functions_.empty()) {
      line_ = std::max(number, 1);
      throw Error{"the text defines no functions"};
    }
    return lay_out(functions_);
  }

  int line_number() const { return line_; }

 private:
  void line(std::string_view raw) {
    std::string_view s = raw.substr(0, raw.find_first_of(";#"));
    s = trim(s);
    // Leading labels, "name:".
    for (;;) {
      std::size_t n = 0;
      while (n < s.size() && format::is_name_byte(s[n])) ++n;
      if (n == 0 || n >= s.size() || s[n] != ':') break;
      define_label(s.substr(0, n));
      s = trim(s.substr(n + 1));
    }
    if (s.empty()) return;

    const std::size_t space = s.find_first_of(" \t");
    const std::string_view mnemonic = s.substr(0, space);
    const std::string_view rest = space == std::string_view::npos ? "" : trim(s.substr(space));
    if (mnemonic == "func") return begin_function(rest);
    if (mnemonic == "end") return end_function(rest);
    if (!current_) {
      throw Error{quoted(mnemonic) + " is outside a function (start one with 'func NAME')"};
    }
    instruction(mnemonic, rest);
  }

  void define_label(std::string_view name) {
    if (!current_) throw Error{"label " + quoted(name) + " is outside a function"};
    if (name.size() > kMaxNameBytes) {
      throw Error{"label " + quoted(name) + " is longer than " + std::to_string(kMaxNameBytes) +
                  " bytes"};
    }
    const auto [it, inserted] =
        current_->labels.try_emplace(std::string(name), current_->code.size(), line_);
    if (!inserted) {
      throw Error{"label " + quoted(name) + " is already defined on line " +
                  std::to_string(it->second.second)};
    }
  }

  void begin_function(std::string_view rest) {
    if (current_) {
      throw Error{"'func' inside function " + quoted(current_->info.name) + " (missing 'end'?)"};
    }
    if (functions_.size() == kMaxFunctions) {
      throw Error{"more than " + std::to_string(kMaxFunctions) + " functions"};
    }
    Function f;
    f.line = line_;
    std::vector<std::string_view> words;
    for (std::size_t i = 0; i < rest.size();) {
      const std::size_t end = std::min(rest.find_first_of(" \t", i), rest.size());
      if (end > i) words.push_back(rest.substr(i, end - i));
      i = end + 1;
    }
    if (words.empty()) throw Error{"'func' needs a name"};
    if (!is_name(words[0])) {
      throw Error{"function name " + quoted(words[0]) + " is not 1.." +
                  std::to_string(kMaxNameBytes) + " letters, digits, '_', '.' or '-'"};
    }
    f.info.name = std::string(words[0]);
    for (const Function& other : functions_) {
      if (other.info.name == f.info.name) {
        throw Error{"function " + quoted(f.info.name) + " is already defined on line " +
                    std::to_string(other.line)};
      }
    }

    std::set<std::string_view> seen;
    std::vector<std::uint64_t> buffers;
    for (std::size_t i = 1; i < words.size(); ++i) {
      const std::size_t eq = words[i].find('=');
      if (eq == std::string_view::npos) {
        throw Error{quoted(words[i]) + " is not KEY=VALUE (keys: params, buffers, scratch)"};
      }
      const std::string_view key = words[i].substr(0, eq);
      const std::string_view value = words[i].substr(eq + 1);
      if (key != "params" && key != "buffers" && key != "scratch") {
        throw Error{"unknown key " + quoted(key) + " (keys: params, buffers, scratch)"};
      }
      if (!seen.insert(key).second) throw Error{"key " + quoted(key) + " is given twice"};
      if (key == "params") {
        f.info.n_params = static_cast<std::uint32_t>(parse_unsigned(value, kMaxParams, "params"));
      } else if (key == "scratch") {
        f.info.scratch_bytes =
            static_cast<std::uint32_t>(parse_unsigned(value, kMaxScratchBytes, "scratch"));
        if (f.info.scratch_bytes % 4 != 0) {
          throw Error{"scratch " + std::string(value) + " is not a multiple of 4"};
        }
      } else {
        for (std::size_t j = 0; j <= value.size();) {
          const std::size_t comma = std::min(value.find(',', j), value.size());
          buffers.push_back(parse_unsigned(value.substr(j, comma - j), kMaxParams - 1, "buffer"));
          j = comma + 1;
        }
      }
    }
    for (const std::uint64_t b : buffers) {
      if (b >= f.info.n_params) {
        throw Error{"buffer " + std::to_string(b) + " is not a param (params=" +
                    std::to_string(f.info.n_params) + ")"};
      }
      if (f.info.buffer_mask >> b & 1u) {
        throw Error{"buffer " + std::to_string(b) + " is listed twice"};
      }
      f.info.buffer_mask |= 1u << b;
    }
    current_ = std::move(f);
  }

  void end_function(std::string_view rest) {
    if (!current_) throw Error{"'end' outside a function"};
    if (!rest.empty()) throw Error{"'end' takes no operands"};
    Function& f = *current_;
    if (f.code.empty()) throw Error{"function " + quoted(f.info.name) + " has no instructions"};
    for (const auto& [name, where] : f.labels) {
      if (where.first == f.code.size()) {
        line_ = where.second;
        throw Error{"label " + quoted(name) + " is at the end of function " +
                    quoted(f.info.name) + "; a label must precede an instruction"};
      }
    }
    for (const LabelUse& use : f.uses) {
      const auto it = f.labels.find(use.label);
      if (it == f.labels.end()) {
        line_ = use.line;
        throw Error{"label " + quoted(use.label) + " is not defined in function " +
                    quoted(f.info.name)};
      }
      f.code[use.insn].imm = static_cast<std::uint32_t>(it->second.first * format::kInsnBytes);
    }
    const Op last = static_cast<Op>(f.code.back().op);
    if (last != Op::kRet && last != Op::kJmp) {
      line_ = f.code_lines.back();
      throw Error{"the last instruction of function " + quoted(f.info.name) +
                  " is not 'ret' or 'jmp', so the code could run off its end"};
    }
    functions_.push_back(std::move(f));
    current_.reset();
  }

  // Splits "a, b, c" at commas.
  static std::vector<std::string_view> operands(std::string_view rest) {
    std::vector<std::string_view> out;
    if (rest.empty()) return out;
    for (std::size_t i = 0; i <= rest.size();) {
      const std::size_t comma = std::min(rest.find(',', i), rest.size());
      const std::string_view operand = trim(rest.substr(i, comma - i));
      if (operand.empty()) throw Error{"empty operand " + std::to_string(out.size() + 1)};
      out.push_back(operand);
      i = comma + 1;
    }
    return out;
  }

  std::uint8_t reg(std::string_view m, std::size_t n, std::string_view s) const {
    if (!looks_like_register(s)) {
      throw Error{std::string(m) + ": operand " + std::to_string(n) +
                  " must be a register r0..r15, not " + quoted(s)};
    }
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(s.data() + 1, s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || value >= format::kRegisters) {
      throw Error{quoted(s) + " is not a register; registers are r0..r15"};
    }
    return static_cast<std::uint8_t>(value);
  }

  std::uint8_t param(std::string_view s) const {
    const std::optional<std::uint64_t> index =
        s.size() >= 2 && s[0] == 'p' ? parse_number(s.substr(1)) : std::nullopt;
    if (!index) throw Error{quoted(s) + " is not a param (p0, p1, ...)"};
    if (*index >= current_->info.n_params) {
      throw Error{"param " + quoted(s) + " is out of range; function " +
                  quoted(current_->info.name) + " takes " +
                  std::to_string(current_->info.n_params) + " params"};
    }
    return static_cast<std::uint8_t>(*index);
  }

  // A memory space: "scratch" or a buffer param "pN".
  std::uint8_t space(std::string_view s) const {
    const FunctionInfo& info = current_->info;
    if (s == "scratch") {
      if (info.scratch_bytes == 0) {
        throw Error{"function " + quoted(info.name) + " declares no scratch (scratch=BYTES)"};
      }
      return format::kScratchSpace;
    }
    const std::uint8_t p = param(s);
    if ((info.buffer_mask >> p & 1u) == 0) {
      throw Error{"param " + quoted(s) + " is not a buffer of function " + quoted(info.name) +
                  " (list it in buffers=)"};
    }
    return p;
  }

  // "SPACE[rX]", "SPACE[rX+imm]", "SPACE[rX-imm]" or "SPACE[imm]".
  void memory(std::string_view s, Encoded& e) const {
    const std::size_t open = s.find('[');
    if (open == std::string_view::npos || s.back() != ']') {
      throw Error{quoted(s) + " is not a memory operand SPACE[INDEX]"};
    }
    e.b = space(trim(s.substr(0, open)));
    std::string index;
    for (char c : s.substr(open + 1, s.size() - open - 2)) {
      if (c != ' ' && c != '\t') index.push_back(c);
    }
    if (index.empty()) throw Error{"memory operand " + quoted(s) + " has no index"};
    if (!looks_like_register(index)) {
      e.c = format::kNoIndex;
      e.imm = parse_immediate(index);
      return;
    }
    const std::size_t sign = index.find_first_of("+-");
    e.c = reg("memory index", 0, std::string_view(index).substr(0, sign));
    if (sign == std::string::npos) return;
    const std::uint32_t offset = parse_immediate(std::string_view(index).substr(sign + 1));
    e.imm = index[sign] == '+' ? offset : 0u - offset;
  }

  void branch_target(std::string_view s) {
    if (!is_name(s)) throw Error{quoted(s) + " is not a label"};
    current_->uses.push_back(LabelUse{current_->code.size(), std::string(s), line_});
  }

  void instruction(std::string_view m, std::string_view rest) {
    const std::optional<format::OpInfo> info = format::op_by_mnemonic(m);
    if (!info) throw Error{"unknown instruction " + quoted(m)};
    const std::vector<std::string_view> ops = operands(rest);
    auto expect = [&](std::size_t n) {
      if (ops.size() != n) {
        throw Error{std::string(m) + " takes " + std::to_string(n) + " operands, not " +
                    std::to_string(ops.size())};
      }
    };
    Encoded e;
    e.op = static_cast<std::uint8_t>(info->op);
    switch (info->form) {
      case Form::kNone:
        expect(0);
        break;
      case Form::kRegImm:
        expect(2);
        e.a = reg(m, 1, ops[0]);
        e.imm = parse_immediate(ops[1]);
        break;
      case Form::kRegReg:
        expect(2);
        e.a = reg(m, 1, ops[0]);
        e.b = reg(m, 2, ops[1]);
        break;
      case Form::kRegParam:
        expect(2);
        e.a = reg(m, 1, ops[0]);
        e.b = param(ops[1]);
        break;
      case Form::kAlu:
      case Form::kAluImm:
        expect(3);
        e.a = reg(m, 1, ops[0]);
        e.b = reg(m, 2, ops[1]);
        if (info->form == Form::kAlu && looks_like_register(ops[2])) {
          e.c = reg(m, 3, ops[2]);
        } else {
          if (info->form == Form::kAlu) e.op += format::kImmediateForm;
          e.imm = parse_immediate(ops[2]);
          const Op op = static_cast<Op>(e.op);
          if ((op == Op::kDivuI || op == Op::kRemuI) && e.imm == 0) {
            throw Error{std::string(m) + ": divisor is 0"};
          }
        }
        break;
      case Form::kJump:
        expect(1);
        branch_target(ops[0]);
        break;
      case Form::kBranch:
        expect(3);
        e.a = reg(m, 1, ops[0]);
        e.b = reg(m, 2, ops[1]);
        branch_target(ops[2]);
        break;
      case Form::kMemory:
        expect(2);
        // Loads name the register first, stores the memory first: "ld r1, p0[r2]",
        // "st p0[r2], r1".
        if (info->op == Op::kLd || info->op == Op::kLdb) {
          e.a = reg(m, 1, ops[0]);
          memory(ops[1], e);
        } else {
          memory(ops[0], e);
          e.a = reg(m, 2, ops[1]);
        }
        break;
      case Form::kSize:
        expect(2);
        e.a = reg(m, 1, ops[0]);
        e.b = space(ops[1]);
        break;
    }
    current_->code.push_back(e);
    current_->code_lines.push_back(line_);
  }

  std::vector<Function> functions_;
  std::optional<Function> current_;
  int line_ = 0;
};

}  // namespace

std::variant<std::vector<std::byte>, std::string> assemble(std::string_view text) {
  Assembler assembler;
  std::vector<std::byte> binary;
  try {
    binary = assembler.run(text);
  } catch (const Error& error) {
    return "line " + std::to_string(assembler.line_number()) + ": " + error.reason;
  }
  // Everything above is checked as the verifier checks it; this guards the two from drifting.
  auto verified = verify(binary);
  if (auto* reason = std::get_if<std::string>(&verified)) {
    return "line " + std::to_string(assembler.line_number()) +
           ": internal error: the assembled binary fails verification: " + *reason;
  }
  return binary;
}

}  // namespace rig::program

// assemble(): the text form, its encoding, and each error with its line.
#include <gtest/gtest.h>

#include "program_test_support.h"

namespace rig::program::testing {
namespace {

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// ---- what it produces ----

TEST(Assembler, ProducesTheDocumentedLayout) {
  const auto binary = assemble_or_fail(R"(
func ab params=2 buffers=1 scratch=8
  const r3, 0x11223344
top:
  ld r4, p1[r3+2]
  st scratch[5], r4
  beq r3, r4, top
  ret
end
)");
  std::vector<std::byte> expected = bytes({
      'R', 'I', 'G', 'P', 1, 0, 0, 0,  // magic, version 1, reserved
      1, 0, 0, 0,                      // function count
      2, 0, 0, 0,                      // names bytes
      40, 0, 0, 0,                     // code bytes
      0, 0, 0, 0, 2, 0, 0, 0,          // name offset, name length
      2, 0, 0, 0, 2, 0, 0, 0,          // params, buffer mask
      8, 0, 0, 0,                      // scratch bytes
      0, 0, 0, 0, 40, 0, 0, 0,         // code offset, code length
      'a', 'b',                        // names
      0x02, 3, 0, 0, 0x44, 0x33, 0x22, 0x11,  // const r3, 0x11223344
      0x40, 4, 1, 3, 2, 0, 0, 0,              // ld r4, p1[r3+2]
      0x41, 4, 0xFF, 0xFF, 5, 0, 0, 0,        // st scratch[5], r4
      0x31, 3, 4, 0, 8, 0, 0, 0,              // beq r3, r4, top (byte 8)
      0x01, 0, 0, 0, 0, 0, 0, 0,              // ret
  });
  EXPECT_EQ(binary, expected);
}

TEST(Assembler, FunctionsAreLaidOutInOrder) {
  const Image image = assemble_and_load(R"(
func one params=1
  ret
end
func two params=3 buffers=0,2 scratch=4
  ret
end
)");
  ASSERT_EQ(image.function_count(), 2u);
  EXPECT_EQ(image.find("one"), 0u);
  EXPECT_EQ(image.find("two"), 1u);
  EXPECT_EQ(image.function(0).n_params, 1u);
  EXPECT_EQ(image.function(0).buffer_mask, 0u);
  EXPECT_EQ(image.function(1).n_params, 3u);
  EXPECT_EQ(image.function(1).buffer_mask, 0b101u);
  EXPECT_EQ(image.function(1).scratch_bytes, 4u);
}

TEST(Assembler, CommentsBlankLinesTabsAndCrLfAreAccepted) {
  const auto plain = assemble_or_fail("func f params=1 buffers=0\nloop: ld r1, p0[0]\njmp loop\nend\n");
  EXPECT_EQ(assemble_or_fail("# header comment\r\n"
                             "\r\n"
                             "func f   params=1\tbuffers=0   ; trailing comment\r\n"
                             "loop:\tld\tr1 ,\tp0[ 0 ]  # comment\r\n"
                             "\r\n"
                             "  jmp loop\r\n"
                             "end"),
            plain);
}

TEST(Assembler, SeveralLabelsMayMarkOneInstruction) {
  EXPECT_EQ(assemble_or_fail("func f\na: b:\nc: jmp b\nend\n"),
            assemble_or_fail("func f\nx: jmp x\nend\n"));
}

TEST(Assembler, LabelsAreLocalToTheirFunction) {
  EXPECT_EQ(assembly_error("func f\nloop: jmp loop\nend\nfunc g\nloop: jmp loop\nend\n"), "");
  EXPECT_EQ(assembly_error("func f\nloop: jmp loop\nend\nfunc g\n jmp loop\nend\n"),
            "line 5: label 'loop' is not defined in function 'g'");
}

TEST(Assembler, ImmediatesAreDecimalHexOrNegative) {
  EXPECT_EQ(assemble_or_fail("func f\n const r0, 0xFFFFFFFF\n ret\nend\n"),
            assemble_or_fail("func f\n const r0, 4294967295\n ret\nend\n"));
  EXPECT_EQ(assemble_or_fail("func f\n const r0, -1\n ret\nend\n"),
            assemble_or_fail("func f\n const r0, 0xffffffff\n ret\nend\n"));
  EXPECT_EQ(assemble_or_fail("func f\n const r0, -2147483648\n ret\nend\n"),
            assemble_or_fail("func f\n const r0, 0x80000000\n ret\nend\n"));
  EXPECT_EQ(assemble_or_fail("func f\n const r0, +7\n ret\nend\n"),
            assemble_or_fail("func f\n const r0, 7\n ret\nend\n"));
}

// ---- errors in instructions ----

TEST(Assembler, UnknownInstructionIsAnError) {
  EXPECT_EQ(assembly_error("func f\n  mull r1, r2, r3\n ret\nend\n"),
            "line 2: unknown instruction 'mull'");
}

TEST(Assembler, WrongOperandCountIsAnError) {
  EXPECT_EQ(assembly_error("func f\n add r1, r2\n ret\nend\n"), "line 2: add takes 3 operands, not 2");
  EXPECT_EQ(assembly_error("func f\n ret r1\nend\n"), "line 2: ret takes 0 operands, not 1");
}

TEST(Assembler, EmptyOperandIsAnError) {
  EXPECT_EQ(assembly_error("func f\n add r1, , r2\n ret\nend\n"), "line 2: empty operand 2");
  EXPECT_EQ(assembly_error("func f\n mov r1,\n ret\nend\n"), "line 2: empty operand 2");
}

TEST(Assembler, RegisterOutOfRangeIsAnError) {
  EXPECT_EQ(assembly_error("func f\n const r16, 1\n ret\nend\n"),
            "line 2: 'r16' is not a register; registers are r0..r15");
  EXPECT_EQ(assembly_error("func f\n mov r1, r2x\n ret\nend\n"),
            "line 2: 'r2x' is not a register; registers are r0..r15");
}

TEST(Assembler, NonRegisterWhereRegisterBelongsIsAnError) {
  EXPECT_EQ(assembly_error("func f\n mov r1, x\n ret\nend\n"),
            "line 2: mov: operand 2 must be a register r0..r15, not 'x'");
  EXPECT_EQ(assembly_error("func f\n const 5, 5\n ret\nend\n"),
            "line 2: const: operand 1 must be a register r0..r15, not '5'");
}

TEST(Assembler, ImmediateOutside32BitsIsAnError) {
  EXPECT_EQ(assembly_error("func f\n const r1, 4294967296\n ret\nend\n"),
            "line 2: immediate '4294967296' does not fit in 32 bits (-2147483648..4294967295)");
  EXPECT_EQ(assembly_error("func f\n const r1, -2147483649\n ret\nend\n"),
            "line 2: immediate '-2147483649' does not fit in 32 bits (-2147483648..4294967295)");
  EXPECT_EQ(assembly_error("func f\n const r1, 99999999999999999999999\n ret\nend\n"),
            "line 2: immediate '99999999999999999999999' does not fit in 32 bits "
            "(-2147483648..4294967295)");
}

TEST(Assembler, ImmediateThatIsNoNumberIsAnError) {
  EXPECT_EQ(assembly_error("func f\n const r1, abc\n ret\nend\n"),
            "line 2: immediate 'abc' is not a number");
  EXPECT_EQ(assembly_error("func f\n add r1, r1, 0x\n ret\nend\n"),
            "line 2: immediate '0x' is not a number");
  EXPECT_EQ(assembly_error("func f\n const r1, 12ab\n ret\nend\n"),
            "line 2: immediate '12ab' is not a number");
}

TEST(Assembler, ImmediateDivisorZeroIsAnError) {
  EXPECT_EQ(assembly_error("func f\n divu r1, r2, 0\n ret\nend\n"), "line 2: divu: divisor is 0");
  EXPECT_EQ(assembly_error("func f\n remui r1, r2, 0x0\n ret\nend\n"), "line 2: remui: divisor is 0");
}

TEST(Assembler, ParamOutOfRangeIsAnError) {
  EXPECT_EQ(assembly_error("func f params=2\n param r1, p2\n ret\nend\n"),
            "line 2: param 'p2' is out of range; function 'f' takes 2 params");
  EXPECT_EQ(assembly_error("func f params=2\n param r1, 1\n ret\nend\n"),
            "line 2: '1' is not a param (p0, p1, ...)");
  EXPECT_EQ(assembly_error("func f params=2\n param r1, pq\n ret\nend\n"),
            "line 2: 'pq' is not a param (p0, p1, ...)");
  EXPECT_EQ(assembly_error("func f params=2\n param r1, p300\n ret\nend\n"),
            "line 2: param 'p300' is out of range; function 'f' takes 2 params");
}

TEST(Assembler, MemoryAccessToParamThatIsNoBufferIsAnError) {
  EXPECT_EQ(assembly_error("func f params=2 buffers=1\n ld r1, p0[0]\n ret\nend\n"),
            "line 2: param 'p0' is not a buffer of function 'f' (list it in buffers=)");
  EXPECT_EQ(assembly_error("func f params=2 buffers=1\n size r1, p0\n ret\nend\n"),
            "line 2: param 'p0' is not a buffer of function 'f' (list it in buffers=)");
}

TEST(Assembler, ScratchAccessWithoutScratchIsAnError) {
  EXPECT_EQ(assembly_error("func f\n st scratch[0], r1\n ret\nend\n"),
            "line 2: function 'f' declares no scratch (scratch=BYTES)");
}

TEST(Assembler, MalformedMemoryOperandIsAnError) {
  EXPECT_EQ(assembly_error("func f params=1 buffers=0\n ld r1, p0\n ret\nend\n"),
            "line 2: 'p0' is not a memory operand SPACE[INDEX]");
  EXPECT_EQ(assembly_error("func f params=1 buffers=0\n ld r1, p0[]\n ret\nend\n"),
            "line 2: memory operand 'p0[]' has no index");
  EXPECT_EQ(assembly_error("func f params=1 buffers=0\n ld r1, p0[r1*2]\n ret\nend\n"),
            "line 2: 'r1*2' is not a register; registers are r0..r15");
  EXPECT_EQ(assembly_error("func f params=1 buffers=0\n ld r1, p0[r1+]\n ret\nend\n"),
            "line 2: immediate '' is not a number");
}

// ---- errors in labels ----

TEST(Assembler, UndefinedLabelIsAnError) {
  EXPECT_EQ(assembly_error("func f\n ret\n jmp nowhere\nend\n"),
            "line 3: label 'nowhere' is not defined in function 'f'");
}

TEST(Assembler, DuplicateLabelIsAnError) {
  EXPECT_EQ(assembly_error("func f\na: ret\n\na: ret\nend\n"),
            "line 4: label 'a' is already defined on line 2");
}

TEST(Assembler, LabelAtTheEndOfAFunctionIsAnError) {
  EXPECT_EQ(assembly_error("func f\n ret\ndone:\nend\n"),
            "line 3: label 'done' is at the end of function 'f'; a label must precede an "
            "instruction");
}

TEST(Assembler, LabelLongerThanLimitIsAnError) {
  const std::string label(kMaxNameBytes + 1, 'l');
  EXPECT_EQ(assembly_error("func f\n" + label + ": jmp " + label + "\nend\n"),
            "line 2: label '" + label + "' is longer than 64 bytes");
  const std::string longest(kMaxNameBytes, 'l');
  EXPECT_EQ(assembly_error("func f\n" + longest + ": jmp " + longest + "\nend\n"), "");
}

TEST(Assembler, LabelOutsideAFunctionIsAnError) {
  EXPECT_EQ(assembly_error("x:\nfunc f\n ret\nend\n"), "line 1: label 'x' is outside a function");
}

TEST(Assembler, BranchToSomethingThatIsNoLabelIsAnError) {
  EXPECT_EQ(assembly_error("func f\n jmp a b\nend\n"), "line 2: 'a b' is not a label");
}

// ---- errors in functions ----

TEST(Assembler, InstructionOutsideAFunctionIsAnError) {
  EXPECT_EQ(assembly_error("ret\n"),
            "line 1: 'ret' is outside a function (start one with 'func NAME')");
  EXPECT_EQ(assembly_error("func f\n ret\nend\n ret\n"),
            "line 4: 'ret' is outside a function (start one with 'func NAME')");
}

TEST(Assembler, FunctionWithoutEndIsAnError) {
  EXPECT_EQ(assembly_error("\nfunc f\n ret\n"), "line 2: function 'f' has no 'end'");
}

TEST(Assembler, FunctionInsideAFunctionIsAnError) {
  EXPECT_EQ(assembly_error("func f\n ret\nfunc g\n ret\nend\n"),
            "line 3: 'func' inside function 'f' (missing 'end'?)");
}

TEST(Assembler, EndOutsideAFunctionIsAnError) {
  EXPECT_EQ(assembly_error("end\n"), "line 1: 'end' outside a function");
}

TEST(Assembler, EndWithOperandsIsAnError) {
  EXPECT_EQ(assembly_error("func f\n ret\nend now\n"), "line 3: 'end' takes no operands");
}

TEST(Assembler, FunctionWithoutInstructionsIsAnError) {
  EXPECT_EQ(assembly_error("func f\nend\n"), "line 2: function 'f' has no instructions");
}

TEST(Assembler, CodeThatCanRunOffItsEndIsAnError) {
  EXPECT_EQ(assembly_error("func f\n ret\n add r1, r1, 1\nend\n"),
            "line 3: the last instruction of function 'f' is not 'ret' or 'jmp', so the code "
            "could run off its end");
}

TEST(Assembler, DuplicateFunctionNameIsAnError) {
  EXPECT_EQ(assembly_error("func f\n ret\nend\nfunc f\n ret\nend\n"),
            "line 4: function 'f' is already defined on line 1");
}

TEST(Assembler, InvalidFunctionNameIsAnError) {
  EXPECT_EQ(assembly_error("func a/b\n ret\nend\n"),
            "line 1: function name 'a/b' is not 1..64 letters, digits, '_', '.' or '-'");
  EXPECT_EQ(assembly_error("func " + std::string(65, 'x') + "\n ret\nend\n"),
            "line 1: function name '" + std::string(65, 'x') +
                "' is not 1..64 letters, digits, '_', '.' or '-'");
  EXPECT_EQ(assembly_error("func\n ret\nend\n"), "line 1: 'func' needs a name");
}

TEST(Assembler, UnknownFunctionKeyIsAnError) {
  EXPECT_EQ(assembly_error("func f param=1\n ret\nend\n"),
            "line 1: unknown key 'param' (keys: params, buffers, scratch)");
  EXPECT_EQ(assembly_error("func f params\n ret\nend\n"),
            "line 1: 'params' is not KEY=VALUE (keys: params, buffers, scratch)");
}

TEST(Assembler, RepeatedFunctionKeyIsAnError) {
  EXPECT_EQ(assembly_error("func f params=1 params=2\n ret\nend\n"),
            "line 1: key 'params' is given twice");
}

TEST(Assembler, MoreParamsThanLimitIsAnError) {
  EXPECT_EQ(assembly_error("func f params=33\n ret\nend\n"), "line 1: params '33' is more than 32");
  EXPECT_EQ(assembly_error("func f params=x\n ret\nend\n"), "line 1: params 'x' is not a number");
}

TEST(Assembler, BufferThatIsNoParamIsAnError) {
  EXPECT_EQ(assembly_error("func f params=2 buffers=0,2\n ret\nend\n"),
            "line 1: buffer 2 is not a param (params=2)");
  EXPECT_EQ(assembly_error("func f buffers=0\n ret\nend\n"),
            "line 1: buffer 0 is not a param (params=0)");
  EXPECT_EQ(assembly_error("func f params=2 buffers=0,\n ret\nend\n"),
            "line 1: buffer '' is not a number");
}

TEST(Assembler, BufferListedTwiceIsAnError) {
  EXPECT_EQ(assembly_error("func f params=2 buffers=1,1\n ret\nend\n"),
            "line 1: buffer 1 is listed twice");
}

TEST(Assembler, BadScratchSizeIsAnError) {
  EXPECT_EQ(assembly_error("func f scratch=6\n ret\nend\n"), "line 1: scratch 6 is not a multiple of 4");
  EXPECT_EQ(assembly_error("func f scratch=67108868\n ret\nend\n"),
            "line 1: scratch '67108868' is more than 67108864");
}

TEST(Assembler, TextWithoutFunctionsIsAnError) {
  EXPECT_EQ(assembly_error(""), "line 1: the text defines no functions");
  EXPECT_EQ(assembly_error("; nothing\n\n"), "line 2: the text defines no functions");
}

TEST(Assembler, MoreFunctionsThanLimitIsAnError) {
  std::string text;
  for (std::uint32_t i = 0; i <= kMaxFunctions; ++i) {
    text += "func f" + std::to_string(i) + "\n ret\nend\n";
  }
  EXPECT_EQ(assembly_error(text), "line 769: more than 256 functions");
}

TEST(Assembler, BinaryLargerThanLimitIsAnError) {
  std::string text = "func f\n";
  const std::size_t instructions = kMaxBinaryBytes / 8;
  for (std::size_t i = 0; i < instructions; ++i) text += "ret\n";
  text += "end\n";
  // 20 header + 28 entry + 1 name + 8 * 131072 code.
  EXPECT_EQ(assembly_error(text),
            "line 131074: the binary would be 1048625 bytes, more than the limit of 1048576");
}

}  // namespace
}  // namespace rig::program::testing

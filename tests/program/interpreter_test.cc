// run(): the semantics of each instruction, and every way a launch faults.
#include <gtest/gtest.h>

#include <thread>

#include "program_test_support.h"

namespace rig::program::testing {
namespace {

constexpr std::uint32_t kOut = 100;  // object id of the output buffer

// r2 = r0 OP r1 with r0 = a, r1 = b, read back through a buffer.
std::uint32_t alu(std::string_view op, std::uint32_t a, std::uint32_t b) {
  const Image image = assemble_and_load(
      "func f params=3 buffers=2\n"
      "  param r0, p0\n"
      "  param r1, p1\n  " +
      std::string(op) +
      " r2, r0, r1\n"
      "  st p2[0], r2\n"
      "  ret\n"
      "end\n");
  MemoryObjects objects;
  objects.set_words(kOut, {0xDEADBEEF});
  const Outcome outcome = run_function(image, "f", {a, b, kOut}, objects);
  EXPECT_TRUE(outcome.ok) << outcome.fault;
  return objects.words(kOut)[0];
}

// r2 = r0 OP imm with r0 = a, through the immediate form of OP.
std::uint32_t alu_imm(std::string_view op, std::uint32_t a, std::uint32_t imm) {
  const Image image = assemble_and_load(
      "func f params=2 buffers=1\n"
      "  param r0, p0\n  " +
      std::string(op) + " r2, r0, " + std::to_string(imm) +
      "\n"
      "  st p1[0], r2\n"
      "  ret\n"
      "end\n");
  MemoryObjects objects;
  objects.set_words(kOut, {0xDEADBEEF});
  const Outcome outcome = run_function(image, "f", {a, kOut}, objects);
  EXPECT_TRUE(outcome.ok) << outcome.fault;
  return objects.words(kOut)[0];
}

// Whether `OP r0, r1, target` branches with r0 = a, r1 = b.
bool branches(std::string_view op, std::uint32_t a, std::uint32_t b) {
  const Image image = assemble_and_load(
      "func f params=3 buffers=2\n"
      "  param r0, p0\n"
      "  param r1, p1\n"
      "  const r2, 1\n  " +
      std::string(op) +
      " r0, r1, out\n"
      "  const r2, 0\n"
      "out:\n"
      "  st p2[0], r2\n"
      "  ret\n"
      "end\n");
  MemoryObjects objects;
  objects.set_words(kOut, {0xDEADBEEF});
  const Outcome outcome = run_function(image, "f", {a, b, kOut}, objects);
  EXPECT_TRUE(outcome.ok) << outcome.fault;
  const std::uint32_t result = objects.words(kOut)[0];
  EXPECT_TRUE(result == 0 || result == 1) << result;
  return result == 1;
}

// ---- moving values ----

TEST(Interpreter, ConstMovAndParamSetRegisters) {
  const Image image = assemble_and_load(R"(
func f params=3 buffers=2
  const r5, 0x12345678
  mov   r6, r5
  param r7, p1
  param r8, p2          ; a buffer param's word is its object id
  st    p2[0], r5
  st    p2[1], r6
  st    p2[2], r7
  st    p2[3], r8
  st    p2[4], r9       ; never written: registers start at zero
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(kOut, {1, 1, 1, 1, 1});
  const Outcome outcome = run_function(image, "f", {7, 0xCAFE, kOut}, objects);
  ASSERT_TRUE(outcome.ok) << outcome.fault;
  EXPECT_EQ(objects.words(kOut),
            (std::vector<std::uint32_t>{0x12345678, 0x12345678, 0xCAFE, kOut, 0}));
  EXPECT_EQ(outcome.instructions, 10u);
  EXPECT_EQ(outcome.fault, "");
}

TEST(Interpreter, NegativeImmediateIsTwosComplement) {
  EXPECT_EQ(alu_imm("add", 10, static_cast<std::uint32_t>(-3)), 7u);
  const Image image = assemble_and_load(
      "func f params=1 buffers=0\n const r1, -1\n st p0[0], r1\n ret\nend\n");
  MemoryObjects objects;
  objects.set_words(kOut, {0});
  ASSERT_TRUE(run_function(image, "f", {kOut}, objects).ok);
  EXPECT_EQ(objects.words(kOut)[0], 0xFFFFFFFFu);
}

// ---- arithmetic ----

TEST(Interpreter, AddAndSubWrapModulo2To32) {
  EXPECT_EQ(alu("add", 2, 3), 5u);
  EXPECT_EQ(alu("add", 0xFFFFFFFF, 2), 1u);
  EXPECT_EQ(alu("add", 0x7FFFFFFF, 1), 0x80000000u);
  EXPECT_EQ(alu("sub", 5, 3), 2u);
  EXPECT_EQ(alu("sub", 3, 5), 0xFFFFFFFEu);
  EXPECT_EQ(alu("sub", 0x80000000, 1), 0x7FFFFFFFu);
}

TEST(Interpreter, MulKeepsLow32Bits) {
  EXPECT_EQ(alu("mul", 6, 7), 42u);
  EXPECT_EQ(alu("mul", 0x10000, 0x10000), 0u);
  EXPECT_EQ(alu("mul", 0xFFFFFFFF, 0xFFFFFFFF), 1u);
  EXPECT_EQ(alu("mul", 0x7FFFFFFF, 3), 0x7FFFFFFDu);
}

TEST(Interpreter, DivuAndRemuAreUnsigned) {
  EXPECT_EQ(alu("divu", 42, 5), 8u);
  EXPECT_EQ(alu("remu", 42, 5), 2u);
  EXPECT_EQ(alu("divu", 0xFFFFFFFF, 2), 0x7FFFFFFFu);
  EXPECT_EQ(alu("remu", 0x80000000, 0xFFFFFFFF), 0x80000000u);
  EXPECT_EQ(alu("divu", 3, 7), 0u);
}

TEST(Interpreter, BitwiseOperations) {
  EXPECT_EQ(alu("and", 0xF0F0FF00, 0x0FF0F0F0), 0x00F0F000u);
  EXPECT_EQ(alu("or", 0xF0F0FF00, 0x0FF0F0F0), 0xFFF0FFF0u);
  EXPECT_EQ(alu("xor", 0xF0F0FF00, 0x0FF0F0F0), 0xFF000FF0u);
}

TEST(Interpreter, ShiftAmountsAreTakenModulo32) {
  EXPECT_EQ(alu("shl", 1, 31), 0x80000000u);
  EXPECT_EQ(alu("shl", 1, 32), 1u);
  EXPECT_EQ(alu("shl", 3, 33), 6u);
  EXPECT_EQ(alu("shr", 0x80000000, 31), 1u);
  EXPECT_EQ(alu("shr", 0x80000000, 32), 0x80000000u);
  EXPECT_EQ(alu("sar", 0x80000000, 0xFFFFFFFF), 0xFFFFFFFFu);  // 0xFFFFFFFF & 31 = 31
  EXPECT_EQ(alu_imm("shl", 1, 32), 1u);
  EXPECT_EQ(alu_imm("shr", 4, 34), 1u);
  EXPECT_EQ(alu_imm("sar", 0xF0000000, 36), 0xFF000000u);
}

TEST(Interpreter, ShrIsLogicalAndSarIsArithmetic) {
  EXPECT_EQ(alu("shr", 0xF0000000, 4), 0x0F000000u);
  EXPECT_EQ(alu("sar", 0xF0000000, 4), 0xFF000000u);
  EXPECT_EQ(alu("sar", 0x70000000, 4), 0x07000000u);
}

TEST(Interpreter, ImmediateFormsComputeAsRegisterForms) {
  const std::uint32_t values[] = {0, 1, 5, 31, 32, 0x7FFFFFFF, 0x80000000, 0xDEADBEEF, 0xFFFFFFFF};
  for (const char* op : {"add", "sub", "mul", "and", "or", "xor", "shl", "shr", "sar"}) {
    for (std::uint32_t a : values) {
      for (std::uint32_t b : values) {
        EXPECT_EQ(alu_imm(op, a, b), alu(op, a, b)) << op << " " << a << ", " << b;
      }
    }
  }
  for (const char* op : {"divu", "remu"}) {
    for (std::uint32_t a : values) {
      for (std::uint32_t b : values) {
        if (b != 0) {
          EXPECT_EQ(alu_imm(op, a, b), alu(op, a, b)) << op << " " << a << ", " << b;
        }
      }
    }
  }
}

TEST(Interpreter, ExplicitImmediateMnemonicsAssembleToTheSameCode) {
  EXPECT_EQ(assemble_or_fail("func f\n addi r1, r2, 5\n ret\nend\n"),
            assemble_or_fail("func f\n add r1, r2, 5\n ret\nend\n"));
  EXPECT_NE(assemble_or_fail("func f\n add r1, r2, 5\n ret\nend\n"),
            assemble_or_fail("func f\n add r1, r2, r5\n ret\nend\n"));
}

// ---- control flow ----

TEST(Interpreter, BranchesCompareAsTheirNameSays) {
  EXPECT_TRUE(branches("beq", 4, 4));
  EXPECT_FALSE(branches("beq", 4, 5));
  EXPECT_TRUE(branches("bne", 4, 5));
  EXPECT_FALSE(branches("bne", 5, 5));
  // Unsigned: 0xFFFFFFFF is the largest.
  EXPECT_TRUE(branches("bltu", 1, 0xFFFFFFFF));
  EXPECT_FALSE(branches("bltu", 0xFFFFFFFF, 1));
  EXPECT_FALSE(branches("bltu", 3, 3));
  EXPECT_TRUE(branches("bgeu", 3, 3));
  EXPECT_TRUE(branches("bgeu", 0xFFFFFFFF, 1));
  EXPECT_FALSE(branches("bgeu", 1, 0xFFFFFFFF));
  // Signed: 0xFFFFFFFF is -1.
  EXPECT_FALSE(branches("blt", 1, 0xFFFFFFFF));
  EXPECT_TRUE(branches("blt", 0xFFFFFFFF, 1));
  EXPECT_TRUE(branches("blt", 0x80000000, 0x7FFFFFFF));
  EXPECT_FALSE(branches("blt", 3, 3));
  EXPECT_TRUE(branches("bge", 3, 3));
  EXPECT_TRUE(branches("bge", 1, 0xFFFFFFFF));
  EXPECT_FALSE(branches("bge", 0x80000000, 0x7FFFFFFF));
}

TEST(Interpreter, JmpGoesBackwardAndForward) {
  const Image image = assemble_and_load(R"(
func f params=1 buffers=0
  jmp forward
back:
  const r1, 2
  st p0[0], r1
  ret
forward:
  jmp back
end
)");
  MemoryObjects objects;
  objects.set_words(kOut, {0});
  const Outcome outcome = run_function(image, "f", {kOut}, objects);
  ASSERT_TRUE(outcome.ok) << outcome.fault;
  EXPECT_EQ(objects.words(kOut)[0], 2u);
  EXPECT_EQ(outcome.instructions, 5u);
}

TEST(Interpreter, RetEndsTheLaunchEarly) {
  const Image image = assemble_and_load(R"(
func f params=1 buffers=0
  ret
  const r1, 9
  st p0[0], r1
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(kOut, {0});
  const Outcome outcome = run_function(image, "f", {kOut}, objects);
  ASSERT_TRUE(outcome.ok) << outcome.fault;
  EXPECT_EQ(objects.words(kOut)[0], 0u);
  EXPECT_EQ(outcome.instructions, 1u);
}

// ---- memory ----

TEST(Interpreter, WordsInBuffersAreLittleEndian) {
  const Image image = assemble_and_load(R"(
func f params=1 buffers=0
  ld r1, p0[0]
  st p0[1], r1
  const r2, 0x0A0B0C0D
  st p0[2], r2
  ret
end
)");
  MemoryObjects objects;
  auto& bytes = objects.bytes(kOut);
  bytes.assign(12, std::byte{0});
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::byte>(i + 1);
  ASSERT_TRUE(run_function(image, "f", {kOut}, objects).ok);
  EXPECT_EQ(objects.words(kOut)[1], 0x04030201u);
  EXPECT_EQ(bytes[8], std::byte{0x0D});
  EXPECT_EQ(bytes[11], std::byte{0x0A});
}

TEST(Interpreter, IndexIsRegisterPlusOffsetOrOffsetAlone) {
  const Image image = assemble_and_load(R"(
func f params=1 buffers=0
  const r1, 2
  const r2, 11
  st p0[r1+3], r2     ; word 5
  const r2, 22
  st p0[r1 - 1], r2   ; word 1
  const r2, 33
  st p0[7], r2        ; word 7
  const r2, 44
  st p0[r1], r2       ; word 2
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(kOut, std::vector<std::uint32_t>(8, 0));
  ASSERT_TRUE(run_function(image, "f", {kOut}, objects).ok);
  EXPECT_EQ(objects.words(kOut), (std::vector<std::uint32_t>{0, 22, 44, 0, 0, 11, 0, 33}));
}

TEST(Interpreter, ByteLoadsZeroExtendAndByteStoresKeepTheLowByte) {
  const Image image = assemble_and_load(R"(
func f params=1 buffers=0
  ldb r1, p0[1]
  st  p0[1], r1
  const r2, 0x1234ABCD
  stb p0[2], r2
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(kOut, {0x0000F000, 0});
  ASSERT_TRUE(run_function(image, "f", {kOut}, objects).ok);
  EXPECT_EQ(objects.words(kOut), (std::vector<std::uint32_t>{0x00CDF000, 0xF0}));
}

TEST(Interpreter, SizeCountsWholeWordsAndSizebCountsBytes) {
  const Image image = assemble_and_load(R"(
func f params=2 buffers=0,1 scratch=12
  size  r1, p0
  sizeb r2, p0
  size  r3, scratch
  sizeb r4, scratch
  st p1[0], r1
  st p1[1], r2
  st p1[2], r3
  st p1[3], r4
  ret
end
)");
  MemoryObjects objects;
  objects.bytes(1).assign(10, std::byte{0});
  objects.set_words(kOut, {0, 0, 0, 0});
  ASSERT_TRUE(run_function(image, "f", {1, kOut}, objects).ok);
  EXPECT_EQ(objects.words(kOut), (std::vector<std::uint32_t>{2, 10, 3, 12}));
}

TEST(Interpreter, TrailingPartialWordIsReachableByByteOnly) {
  const Image image = assemble_and_load(R"(
func bytes params=1 buffers=0
  ldb r1, p0[9]
  stb p0[8], r1
  ret
end
func word params=1 buffers=0
  ld r1, p0[2]
  ret
end
)");
  MemoryObjects objects;
  objects.bytes(1).assign(10, std::byte{0});
  objects.bytes(1)[9] = std::byte{0x5A};
  ASSERT_TRUE(run_function(image, "bytes", {1}, objects).ok);
  EXPECT_EQ(objects.bytes(1)[8], std::byte{0x5A});
  EXPECT_EQ(run_function(image, "word", {1}, objects).fault,
            "function 'word': pc 0 (instruction 0): ld: word index 2 is outside param 0's buffer "
            "(2 words)");
}

TEST(Interpreter, ScratchStartsZeroedWhateverTheCallerLeftInIt) {
  const Image image = assemble_and_load(R"(
func f params=1 buffers=0 scratch=8
  ld r1, scratch[0]
  ld r2, scratch[1]
  or r1, r1, r2
  st p0[0], r1
  const r3, 77
  st scratch[1], r3    ; dirties it for the next launch
  ld r4, scratch[1]
  st p0[1], r4
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(kOut, {1, 1});
  std::vector<std::byte> scratch(8, std::byte{0xFF});
  ASSERT_TRUE(run_function(image, "f", {kOut}, objects, 100, scratch).ok);
  EXPECT_EQ(objects.words(kOut), (std::vector<std::uint32_t>{0, 77}));
  ASSERT_TRUE(run_function(image, "f", {kOut}, objects, 100, scratch).ok);
  EXPECT_EQ(objects.words(kOut)[0], 0u);
}

TEST(Interpreter, ScratchIsOnlyAsLargeAsDeclared) {
  const Image image = assemble_and_load(R"(
func f params=0 scratch=8
  ld r1, scratch[2]
  ret
end
)");
  MemoryObjects objects;
  std::vector<std::byte> scratch(64);
  const Outcome outcome = run_function(image, "f", {}, objects, 100, scratch);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.fault,
            "function 'f': pc 0 (instruction 0): ld: word index 2 is outside the scratch (2 "
            "words)");
}

TEST(Interpreter, SameObjectMayBePassedAsSeveralBuffers) {
  const Image image = assemble_and_load(R"(
func twice params=2 buffers=0,1
  size r0, p0
  const r1, 0
loop:
  ld r2, p0[r1]
  add r2, r2, r2
  st p1[r1], r2
  add r1, r1, 1
  bltu r1, r0, loop
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(5, {1, 2, 3});
  const Outcome outcome = run_function(image, "twice", {5, 5}, objects);
  ASSERT_TRUE(outcome.ok) << outcome.fault;
  EXPECT_EQ(objects.words(5), (std::vector<std::uint32_t>{2, 4, 6}));
}

// ---- faults ----

TEST(Interpreter, WrongWordCountFaults) {
  const Image image = assemble_and_load("func f params=2\n ret\nend\n");
  MemoryObjects objects;
  Outcome outcome = run_function(image, "f", {1}, objects);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.fault,
            "function 'f': at entry (pc 0): launch passes 1 words; the function takes 2");
  EXPECT_EQ(outcome.instructions, 0u);
  outcome = run_function(image, "f", {1, 2, 3}, objects);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.fault,
            "function 'f': at entry (pc 0): launch passes 3 words; the function takes 2");
  EXPECT_TRUE(run_function(image, "f", {1, 2}, objects).ok);
}

TEST(Interpreter, UnknownBufferFaultsBeforeAnyInstruction) {
  const Image image = assemble_and_load(R"(
func f params=2 buffers=0,1
  const r1, 5
  st p0[0], r1
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(1, {0});
  const Outcome outcome = run_function(image, "f", {1, 77}, objects);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.fault,
            "function 'f': at entry (pc 0): param 1 is object 77, which is no buffer this launch "
            "may touch");
  EXPECT_EQ(outcome.instructions, 0u);
  EXPECT_EQ(objects.words(1)[0], 0u);  // nothing ran
}

TEST(Interpreter, EmptyObjectIsNoBuffer) {
  const Image image = assemble_and_load("func f params=1 buffers=0\n ret\nend\n");
  MemoryObjects objects;
  objects.bytes(3).clear();
  EXPECT_EQ(run_function(image, "f", {3}, objects).fault,
            "function 'f': at entry (pc 0): param 0 is object 3, which is no buffer this launch "
            "may touch");
}

TEST(Interpreter, OutOfBoundsLoadFaults) {
  const Image image = assemble_and_load(R"(
func f params=2 buffers=0
  param r1, p1
  ld r3, p0[r1+1]
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(1, {0, 0, 0, 0});
  EXPECT_TRUE(run_function(image, "f", {1, 2}, objects).ok);
  const Outcome outcome = run_function(image, "f", {1, 3}, objects);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.fault,
            "function 'f': pc 8 (instruction 1): ld: word index 4 is outside param 0's buffer "
            "(4 words)");
  EXPECT_EQ(outcome.instructions, 2u);  // the faulting instruction counts
}

TEST(Interpreter, IndexBelowZeroWrapsAndFaults) {
  const Image image = assemble_and_load("func f params=1 buffers=0\n ld r1, p0[r2-1]\n ret\nend\n");
  MemoryObjects objects;
  objects.set_words(1, {0});
  EXPECT_EQ(run_function(image, "f", {1}, objects).fault,
            "function 'f': pc 0 (instruction 0): ld: word index 4294967295 is outside param 0's "
            "buffer (1 words)");
}

TEST(Interpreter, OutOfBoundsStoreFaultsWithoutWriting) {
  const Image image = assemble_and_load(R"(
func f params=2 buffers=0,1
  const r1, 9
  st p0[0], r1
  st p1[r1], r1
  st p0[1], r1
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(1, {0, 0});
  objects.set_words(2, std::vector<std::uint32_t>(9, 0));
  const Outcome outcome = run_function(image, "f", {1, 2}, objects);
  EXPECT_EQ(outcome.fault,
            "function 'f': pc 16 (instruction 2): st: word index 9 is outside param 1's buffer "
            "(9 words)");
  // The store before the fault happened; the faulting one and the one after did not.
  EXPECT_EQ(objects.words(1), (std::vector<std::uint32_t>{9, 0}));
  EXPECT_EQ(objects.words(2), std::vector<std::uint32_t>(9, 0));
}

TEST(Interpreter, OutOfBoundsByteAccessFaults) {
  const Image image = assemble_and_load(R"(
func load params=1 buffers=0
  ldb r1, p0[5]
  ret
end
func store params=1 buffers=0
  stb p0[r1-1], r1
  ret
end
)");
  MemoryObjects objects;
  objects.bytes(1).assign(5, std::byte{0});
  EXPECT_EQ(run_function(image, "load", {1}, objects).fault,
            "function 'load': pc 0 (instruction 0): ldb: byte index 5 is outside param 0's "
            "buffer (5 bytes)");
  EXPECT_EQ(run_function(image, "store", {1}, objects).fault,
            "function 'store': pc 0 (instruction 0): stb: byte index 4294967295 is outside "
            "param 0's buffer (5 bytes)");
}

TEST(Interpreter, DivisionByZeroFaults) {
  const Image image = assemble_and_load(R"(
func div params=2
  param r1, p0
  param r2, p1
  divu r3, r1, r2
  ret
end
func rem params=2
  param r1, p0
  param r2, p1
  remu r3, r1, r2
  ret
end
)");
  MemoryObjects objects;
  EXPECT_TRUE(run_function(image, "div", {7, 2}, objects).ok);
  EXPECT_EQ(run_function(image, "div", {7, 0}, objects).fault,
            "function 'div': pc 16 (instruction 2): divu: division by zero");
  EXPECT_EQ(run_function(image, "rem", {7, 0}, objects).fault,
            "function 'rem': pc 16 (instruction 2): remu: division by zero");
}

TEST(Interpreter, InfiniteLoopExhaustsTheBudget) {
  const Image image = assemble_and_load(R"(
func spin params=0
  const r1, 0
loop:
  add r1, r1, 1
  jmp loop
end
)");
  MemoryObjects objects;
  const Outcome outcome = run_function(image, "spin", {}, objects, 1000);
  EXPECT_FALSE(outcome.ok);
  // const, then add and jmp alternately: the 1000th instruction is an add, and the one the
  // budget refuses is the jmp at pc 16.
  EXPECT_EQ(outcome.fault,
            "function 'spin': pc 16 (instruction 2): instruction budget of 1000 exhausted");
  EXPECT_EQ(outcome.instructions, 1000u);
}

TEST(Interpreter, BudgetCountsEveryInstruction) {
  const Image image = assemble_and_load(R"(
func counter params=1 buffers=0
  ld  r0, p0[0]
  add r0, r0, 1
  st  p0[0], r0
  ret
end
)");
  MemoryObjects objects;
  objects.set_words(1, {41});
  Outcome outcome = run_function(image, "counter", {1}, objects, 4);
  ASSERT_TRUE(outcome.ok) << outcome.fault;
  EXPECT_EQ(outcome.instructions, 4u);
  EXPECT_EQ(objects.words(1)[0], 42u);
  outcome = run_function(image, "counter", {1}, objects, 3);
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.fault,
            "function 'counter': pc 24 (instruction 3): instruction budget of 3 exhausted");
  EXPECT_EQ(outcome.instructions, 3u);
  outcome = run_function(image, "counter", {1}, objects, 0);
  EXPECT_EQ(outcome.fault,
            "function 'counter': pc 0 (instruction 0): instruction budget of 0 exhausted");
  EXPECT_EQ(outcome.instructions, 0u);
}

TEST(Interpreter, ScratchSmallerThanDeclaredFaults) {
  const Image image = assemble_and_load("func f params=0 scratch=16\n ret\nend\n");
  MemoryObjects objects;
  std::vector<std::byte> scratch(8);
  Launch launch{&image, 0, {}, scratch};
  EXPECT_EQ(run(launch, objects, 10).fault,
            "function 'f': at entry (pc 0): launch scratch is 8 bytes; the function needs 16");
}

TEST(Interpreter, LaunchOfFunctionNotInImageFaults) {
  const Image image = assemble_and_load("func f\n ret\nend\n");
  MemoryObjects objects;
  Launch launch{&image, 1, {}, {}};
  EXPECT_EQ(run(launch, objects, 10).fault, "launch names function 1; the image has 1 functions");
  launch.image = nullptr;
  EXPECT_EQ(run(launch, objects, 10).fault, "launch names no image");
}

// ---- images ----

TEST(Interpreter, ImageCopyOutlivesTheOriginal) {
  std::optional<Image> copy;
  {
    const Image original = assemble_and_load("func f params=1 buffers=0\n const r1, 3\n st p0[0], r1\n ret\nend\n");
    copy = original;
  }
  MemoryObjects objects;
  objects.set_words(1, {0});
  ASSERT_TRUE(run_function(*copy, "f", {1}, objects).ok);
  EXPECT_EQ(objects.words(1)[0], 3u);
}

TEST(Interpreter, OneImageRunsInSeveralThreadsAtOnce) {
  const Image image = assemble_and_load(R"(
func counter params=1 buffers=0 scratch=4
  ld  r0, p0[0]
  st  scratch[0], r0
  ld  r1, scratch[0]
  add r1, r1, 1
  st  p0[0], r1
  ret
end
)");
  constexpr int kThreads = 4;
  constexpr int kLaunches = 2000;
  std::vector<MemoryObjects> objects(kThreads);
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    objects[t].set_words(1, {0});
    threads.emplace_back([&, t] {
      std::vector<std::byte> scratch(4);
      for (int i = 0; i < kLaunches; ++i) {
        const std::uint32_t words[] = {1};
        if (!run(Launch{&image, 0, words, scratch}, objects[t], 100).ok) ++failures[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0);
    EXPECT_EQ(objects[t].words(1)[0], static_cast<std::uint32_t>(kLaunches));
  }
}

}  // namespace
}  // namespace rig::program::testing

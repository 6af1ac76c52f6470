// Image::load: every rule of FORMAT.md, each with its own rejection reason.
#include <gtest/gtest.h>

#include "program_test_support.h"

namespace rig::program::testing {
namespace {

// One function "f" (name 1 byte) with `code`: the names section is at 20 + 28 = 48 and the
// code section at 49.
std::vector<std::byte> one_function(std::vector<Raw> code, std::uint32_t n_params = 0,
                                    std::uint32_t buffer_mask = 0, std::uint32_t scratch = 0) {
  return build({RawFunction{"f", n_params, buffer_mask, scratch, std::move(code)}});
}

constexpr std::size_t kNamesBytesField = 12;
constexpr std::size_t kCodeBytesField = 16;
constexpr std::size_t kNameOffset = 0, kNameLength = 4, kParams = 8, kBufferMask = 12,
                      kScratchBytes = 16, kCodeOffset = 20, kCodeLength = 24;

// ---- accepted binaries ----

TEST(Verifier, WellFormedBinaryLoadsWithItsFunctionTable) {
  const auto binary = build({
      RawFunction{"first", 3, 0b101, 16, {Raw{kRet}}},
      RawFunction{"second", 0, 0, 0, {Raw{kConst, 1, 0, 0, 7}, Raw{kRet}}},
  });
  auto loaded = Image::load(binary);
  ASSERT_TRUE(std::holds_alternative<Image>(loaded)) << std::get<std::string>(loaded);
  const Image& image = std::get<Image>(loaded);
  ASSERT_EQ(image.function_count(), 2u);
  EXPECT_EQ(image.find("first"), 0u);
  EXPECT_EQ(image.find("second"), 1u);
  EXPECT_EQ(image.find("third"), std::nullopt);
  EXPECT_EQ(image.find(""), std::nullopt);
  const FunctionInfo& first = image.function(0);
  EXPECT_EQ(first.name, "first");
  EXPECT_EQ(first.n_params, 3u);
  EXPECT_EQ(first.buffer_mask, 0b101u);
  EXPECT_EQ(first.scratch_bytes, 16u);
  EXPECT_EQ(image.function(1).name, "second");
}

TEST(Verifier, LimitsThemselvesAreAccepted) {
  RawFunction f;
  f.name = std::string(kMaxNameBytes, 'n');
  f.n_params = kMaxParams;
  f.buffer_mask = 0xFFFFFFFFu;
  f.scratch_bytes = kMaxScratchBytes;
  EXPECT_EQ(rejection(build({f})), "");
}

TEST(Verifier, NameMayUseLettersDigitsUnderscoreDotAndDash) {
  EXPECT_EQ(rejection(build({RawFunction{"Ab_9.x-y"}})), "");
}

TEST(Verifier, MaximumFunctionCountIsAccepted) {
  std::vector<RawFunction> functions;
  for (std::uint32_t i = 0; i < kMaxFunctions; ++i) functions.push_back({"f" + std::to_string(i)});
  auto loaded = Image::load(build(functions));
  ASSERT_TRUE(std::holds_alternative<Image>(loaded)) << std::get<std::string>(loaded);
  EXPECT_EQ(std::get<Image>(loaded).function_count(), kMaxFunctions);
  EXPECT_EQ(std::get<Image>(loaded).find("f255"), 255u);
}

// ---- header ----

TEST(Verifier, BinaryShorterThanHeaderIsRejected) {
  std::vector<std::byte> binary(7);
  EXPECT_EQ(rejection(binary), "binary is 7 bytes, shorter than the 20-byte header");
  EXPECT_EQ(rejection({}), "binary is 0 bytes, shorter than the 20-byte header");
}

TEST(Verifier, BinaryLargerThanLimitIsRejected) {
  auto binary = one_function({Raw{kRet}});
  binary.resize(kMaxBinaryBytes + 1);
  EXPECT_EQ(rejection(binary), "binary is 1048577 bytes, more than the limit of 1048576");
}

TEST(Verifier, WrongMagicIsRejected) {
  auto binary = one_function({Raw{kRet}});
  binary[3] = std::byte{'Q'};
  EXPECT_EQ(rejection(binary), "magic is not \"RIGP\"");
}

TEST(Verifier, UnknownVersionIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u16(binary, 4, 2);
  EXPECT_EQ(rejection(binary), "version 2 is not supported (this reader knows version 1)");
  put_u16(binary, 4, 0);
  EXPECT_EQ(rejection(binary), "version 0 is not supported (this reader knows version 1)");
}

TEST(Verifier, NonZeroReservedFieldIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u16(binary, 6, 0x100);
  EXPECT_EQ(rejection(binary), "reserved header field is 0x100, must be 0");
}

TEST(Verifier, BinaryWithoutFunctionsIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, 8, 0);
  EXPECT_EQ(rejection(binary), "binary declares no functions");
}

TEST(Verifier, MoreFunctionsThanLimitAreRejected) {
  std::vector<RawFunction> functions;
  for (std::uint32_t i = 0; i <= kMaxFunctions; ++i) functions.push_back({"f" + std::to_string(i)});
  EXPECT_EQ(rejection(build(functions)), "function count 257 is more than the limit of 256");
}

TEST(Verifier, FunctionTablePastEndIsRejected) {
  auto binary = one_function({Raw{kRet}});  // 20 + 28 + 1 + 8 = 57 bytes
  put_u32(binary, 8, 2);
  EXPECT_EQ(rejection(binary),
            "function table of 2 entries (56 bytes) runs past the end of the binary (57 bytes)");
}

TEST(Verifier, NamesSectionPastEndIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, kNamesBytesField, 1000);
  EXPECT_EQ(rejection(binary),
            "names section of 1000 bytes at offset 48 runs past the end of the binary (57 bytes)");
}

TEST(Verifier, CodeSectionPastEndIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, kCodeBytesField, 16);
  EXPECT_EQ(rejection(binary),
            "code section of 16 bytes at offset 49 runs past the end of the binary (57 bytes)");
}

TEST(Verifier, SectionSizesThatWrapIn32BitsAreRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, kNamesBytesField, 0xFFFFFFFFu);
  put_u32(binary, kCodeBytesField, 10);  // 0xFFFFFFFF + 10 wraps to 9 in 32 bits
  EXPECT_EQ(rejection(binary),
            "names section of 4294967295 bytes at offset 48 runs past the end of the binary "
            "(57 bytes)");
}

TEST(Verifier, TrailingGarbageIsRejected) {
  auto binary = one_function({Raw{kRet}});
  binary.resize(binary.size() + 3);
  EXPECT_EQ(rejection(binary), "3 bytes of trailing garbage after the code section");
}

TEST(Verifier, CodeSectionOfPartialInstructionIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, kNamesBytesField, 2);  // moves one byte of code into the names
  put_u32(binary, kCodeBytesField, 7);
  EXPECT_EQ(rejection(binary), "code section is 7 bytes, not a whole number of 8-byte instructions");
}

TEST(Verifier, EveryTruncationOfAValidBinaryIsRejected) {
  const auto binary = build({RawFunction{"a", 1, 1, 4, {Raw{kSize, 0, 0}, Raw{kRet}}},
                             RawFunction{"bb", 0, 0, 0, {Raw{kRet}}}});
  ASSERT_EQ(rejection(binary), "");
  for (std::size_t n = 0; n < binary.size(); ++n) {
    EXPECT_NE(rejection(std::span(binary).first(n)), "") << "prefix of " << n << " bytes";
  }
}

// ---- names ----

TEST(Verifier, EmptyNameIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, entry_offset(0) + kNameLength, 0);
  EXPECT_EQ(rejection(binary), "function 0: name is empty");
}

TEST(Verifier, NameLongerThanLimitIsRejected) {
  const auto binary = build({RawFunction{std::string(kMaxNameBytes + 1, 'n')}});
  EXPECT_EQ(rejection(binary), "function 0: name is 65 bytes, more than the limit of 64");
}

TEST(Verifier, NamePastNamesSectionIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, entry_offset(0) + kNameOffset, 5);
  EXPECT_EQ(rejection(binary),
            "function 0: name (offset 5, length 1) runs past the names section (1 bytes)");
  put_u32(binary, entry_offset(0) + kNameOffset, 0xFFFFFFFFu);  // offset + length wraps
  EXPECT_EQ(rejection(binary),
            "function 0: name (offset 4294967295, length 1) runs past the names section "
            "(1 bytes)");
}

TEST(Verifier, NameWithForbiddenByteIsRejected) {
  EXPECT_EQ(rejection(build({RawFunction{"a b"}})),
            "function 0: name byte 1 is 0x20; names use letters, digits, '_', '.' and '-'");
  EXPECT_EQ(rejection(build({RawFunction{"ok", 0, 0, 0}, RawFunction{std::string("x\n", 2)}})),
            "function 1: name byte 1 is 0xA; names use letters, digits, '_', '.' and '-'");
}

TEST(Verifier, DuplicateNameIsRejected) {
  const auto binary = build({RawFunction{"f"}, RawFunction{"g"}, RawFunction{"f"}});
  EXPECT_EQ(rejection(binary), "function 2: name 'f' is already the name of function 0");
}

// ---- function entries ----

TEST(Verifier, MoreParamsThanLimitAreRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kRet}}, 33)),
            "function 'f': takes 33 params, more than the limit of 32");
}

TEST(Verifier, BufferMaskBeyondParamsIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kRet}}, 2, 0b1101)),
            "function 'f': buffer_mask 0xD marks param 2 as a buffer, but the function takes 2 "
            "params");
  EXPECT_EQ(rejection(one_function({Raw{kRet}}, 0, 0x80000000u)),
            "function 'f': buffer_mask 0x80000000 marks param 31 as a buffer, but the function "
            "takes 0 params");
}

TEST(Verifier, ScratchNotMultipleOfFourIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kRet}}, 0, 0, 6)),
            "function 'f': scratch_bytes 6 is not a multiple of 4");
}

TEST(Verifier, ScratchAboveLimitIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kRet}}, 0, 0, kMaxScratchBytes + 4)),
            "function 'f': scratch_bytes 67108868 is more than the limit of 67108864");
}

TEST(Verifier, EmptyCodeIsRejected) {
  auto binary = one_function({Raw{kRet}});
  put_u32(binary, entry_offset(0) + kCodeLength, 0);
  EXPECT_EQ(rejection(binary), "function 'f': code is empty");
}

TEST(Verifier, CodeOffsetOffInstructionBoundaryIsRejected) {
  auto binary = one_function({Raw{kRet}, Raw{kRet}});
  put_u32(binary, entry_offset(0) + kCodeOffset, 4);
  put_u32(binary, entry_offset(0) + kCodeLength, 8);
  EXPECT_EQ(rejection(binary),
            "function 'f': code offset 4 is not on an instruction boundary (a multiple of 8)");
}

TEST(Verifier, CodeLengthOfPartialInstructionIsRejected) {
  auto binary = one_function({Raw{kRet}, Raw{kRet}});
  put_u32(binary, entry_offset(0) + kCodeLength, 12);
  EXPECT_EQ(rejection(binary),
            "function 'f': code length 12 is not a whole number of 8-byte instructions");
}

TEST(Verifier, CodePastCodeSectionIsRejected) {
  auto binary = one_function({Raw{kRet}, Raw{kRet}});
  put_u32(binary, entry_offset(0) + kCodeOffset, 8);
  put_u32(binary, entry_offset(0) + kCodeLength, 16);
  EXPECT_EQ(rejection(binary),
            "function 'f': code (offset 8, length 16) runs past the code section (16 bytes)");
  put_u32(binary, entry_offset(0) + kCodeOffset, 0xFFFFFFF8u);  // offset + length wraps
  EXPECT_EQ(rejection(binary),
            "function 'f': code (offset 4294967288, length 16) runs past the code section "
            "(16 bytes)");
}

TEST(Verifier, FunctionsMayShareCode) {
  auto binary = build({RawFunction{"a"}, RawFunction{"b"}});
  put_u32(binary, entry_offset(1) + kCodeOffset, 0);
  EXPECT_EQ(rejection(binary), "");
}

// ---- instructions ----

TEST(Verifier, UnknownOpcodeIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{0x00}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): opcode 0x0 is not an instruction");
  EXPECT_EQ(rejection(one_function({Raw{kRet}, Raw{0xEE}})),
            "function 'f': instruction 1 (pc 8): opcode 0xEE is not an instruction");
}

TEST(Verifier, RegisterOutOfRangeIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kConst, 16}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): const: operand a names register 16; registers "
            "are 0..15");
  EXPECT_EQ(rejection(one_function({Raw{kMov, 1, 200}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): mov: operand b names register 200; registers "
            "are 0..15");
  EXPECT_EQ(rejection(one_function({Raw{kRet}, Raw{kAdd, 1, 2, 16}, Raw{kRet}})),
            "function 'f': instruction 1 (pc 8): add: operand c names register 16; registers "
            "are 0..15");
  EXPECT_EQ(rejection(one_function({Raw{kBeq, 0, 17, 0, 0}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): beq: operand b names register 17; registers "
            "are 0..15");
}

TEST(Verifier, NonZeroUnusedOperandIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kRet, 0, 7}})),
            "function 'f': instruction 0 (pc 0): ret: operand b is 0x7, must be 0 (unused)");
  EXPECT_EQ(rejection(one_function({Raw{kConst, 1, 0, 1, 5}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): const: operand c is 0x1, must be 0 (unused)");
  EXPECT_EQ(rejection(one_function({Raw{kMov, 1, 2, 0, 5}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): mov: immediate is 0x5, must be 0 (unused)");
  EXPECT_EQ(rejection(one_function({Raw{kJmp, 1, 0, 0, 0}})),
            "function 'f': instruction 0 (pc 0): jmp: operand a is 0x1, must be 0 (unused)");
}

TEST(Verifier, ParamOutOfRangeIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kParam, 0, 2}, Raw{kRet}}, 2)),
            "function 'f': instruction 0 (pc 0): param: param 2 is out of range; the function "
            "takes 2 params");
}

TEST(Verifier, MemoryAccessToParamOutOfRangeIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kLd, 0, 3, kNoIndex}, Raw{kRet}}, 1, 1)),
            "function 'f': instruction 0 (pc 0): ld: param 3 is out of range; the function takes "
            "1 params");
}

TEST(Verifier, MemoryAccessToParamThatIsNoBufferIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kRet}, Raw{kLd, 0, 0, 1}, Raw{kRet}}, 2, 0b10)),
            "function 'f': instruction 1 (pc 8): ld: param 0 is not a buffer (buffer_mask 0x2)");
  EXPECT_EQ(rejection(one_function({Raw{kSize, 0, 1}, Raw{kRet}}, 2, 0b01)),
            "function 'f': instruction 0 (pc 0): size: param 1 is not a buffer (buffer_mask 0x1)");
}

TEST(Verifier, ScratchAccessWithoutScratchIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kLd, 0, kScratch, 0}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): ld: uses scratch, but the function declares no "
            "scratch bytes");
  EXPECT_EQ(rejection(one_function({Raw{kLd, 0, kScratch, 0}, Raw{kRet}}, 0, 0, 4)), "");
}

TEST(Verifier, IndexRegisterOutOfRangeIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kLd, 0, 0, 16}, Raw{kRet}}, 1, 1)),
            "function 'f': instruction 0 (pc 0): ld: operand c names register 16; registers are "
            "0..15");
  EXPECT_EQ(rejection(one_function({Raw{kLd, 0, 0, kNoIndex, 3}, Raw{kRet}}, 1, 1)), "");
}

TEST(Verifier, BranchOutsideCodeIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kJmp, 0, 0, 0, 912}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): jmp: branch target 912 is outside the code (16 "
            "bytes)");
  // The first byte past the end is outside too.
  EXPECT_EQ(rejection(one_function({Raw{kRet}, Raw{kBeq, 1, 2, 0, 16}})),
            "function 'f': instruction 1 (pc 8): beq: branch target 16 is outside the code (16 "
            "bytes)");
}

TEST(Verifier, BranchIntoMiddleOfInstructionIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kBeq, 0, 0, 0, 4}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): beq: branch target 4 is not on an instruction "
            "boundary (a multiple of 8)");
}

TEST(Verifier, BranchTargetIsRelativeToItsOwnFunction) {
  // "b"'s code starts at byte 8 of the code section; its target 8 would be past its end.
  const auto binary = build({RawFunction{"a"}, RawFunction{"b", 0, 0, 0, {Raw{kJmp, 0, 0, 0, 8}}}});
  EXPECT_EQ(rejection(binary),
            "function 'b': instruction 0 (pc 0): jmp: branch target 8 is outside the code (8 "
            "bytes)");
}

TEST(Verifier, ImmediateDivisionByZeroIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kDivuI, 1, 2, 0, 0}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): divui: divisor is 0");
  EXPECT_EQ(rejection(one_function({Raw{kRemuI, 1, 2, 0, 0}, Raw{kRet}})),
            "function 'f': instruction 0 (pc 0): remui: divisor is 0");
}

TEST(Verifier, CodeThatCanRunOffItsEndIsRejected) {
  EXPECT_EQ(rejection(one_function({Raw{kRet}, Raw{kConst, 1, 0, 0, 1}})),
            "function 'f': last instruction 1 (pc 8) is 'const'; code must end with ret or jmp");
  EXPECT_EQ(rejection(one_function({Raw{kBeq, 0, 0, 0, 0}})),
            "function 'f': last instruction 0 (pc 0) is 'beq'; code must end with ret or jmp");
  EXPECT_EQ(rejection(one_function({Raw{kJmp}})), "");
}

TEST(Verifier, FirstBadFunctionIsReportedAfterEarlierOnesPass) {
  const auto binary =
      build({RawFunction{"good"}, RawFunction{"bad", 0, 0, 0, {Raw{kConst, 99}, Raw{kRet}}}});
  EXPECT_EQ(rejection(binary),
            "function 'bad': instruction 0 (pc 0): const: operand a names register 99; registers "
            "are 0..15");
}

}  // namespace
}  // namespace rig::program::testing

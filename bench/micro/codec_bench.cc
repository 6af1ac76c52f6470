// The codec on the hot path: framing a handover with N copy parts the way submit lays it out
// (header, fixed part, parts), and the receiver's check_header + decode of it.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "rig/wire/codec.h"

namespace {

using namespace rig::wire;

Part copy_part(std::uint64_t i) {
  Part p{};
  p.kind = static_cast<std::uint16_t>(PartKind::kCopy);
  p.queue = 1;
  p.copy.src.kind = static_cast<std::uint8_t>(SideKind::kObject);
  p.copy.src.handle = (1ull << 48) | (i + 1);
  p.copy.src.offset = i * 4096;
  p.copy.dst.kind = static_cast<std::uint8_t>(SideKind::kClient);
  p.copy.rows = 1;
  p.copy.row_bytes = 64;
  p.copy.src_pitch = 64;
  p.copy.dst_pitch = 64;
  return p;
}

// Lays a handover of `parts` into `out` (resized), as Proxy::submit does.
void frame_handover(std::vector<std::byte>& out, std::uint64_t value, const std::vector<Part>& parts) {
  const std::size_t body = sizeof(Handover) + parts.size() * sizeof(Part);
  out.resize(sizeof(FrameHeader) + body);
  const auto framed = frame(MsgType::kHandover,
                            Handover{1, 0, value, static_cast<std::uint32_t>(parts.size()), 0},
                            body - sizeof(Handover));
  std::memcpy(out.data(), &framed, sizeof framed);
  std::memcpy(out.data() + sizeof framed, parts.data(), parts.size() * sizeof(Part));
}

std::vector<Part> parts_of(std::int64_t n) {
  std::vector<Part> parts;
  for (std::int64_t i = 0; i < n; ++i) parts.push_back(copy_part(static_cast<std::uint64_t>(i)));
  return parts;
}

void BM_FrameHandover(benchmark::State& state) {
  const auto parts = parts_of(state.range(0));
  std::vector<std::byte> msg;
  std::uint64_t value = 0;
  for (auto _ : state) {
    frame_handover(msg, ++value, parts);
    benchmark::DoNotOptimize(msg.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(msg.size()));
}
BENCHMARK(BM_FrameHandover)->Arg(1)->Arg(8)->Arg(64)->Arg(512);

// What a receiver does with a framed handover: check the header, decode the body.
void decode_framed(benchmark::State& state, const std::vector<std::byte>& msg, std::string& why) {
  FrameHeader h;
  std::memcpy(&h, msg.data(), sizeof h);
  if (check_header(h) != nullptr) state.SkipWithError("check_header refused the handover");
  HandoverView view;
  if (!passed(decode({msg.data() + sizeof h, h.length}, view), why)) state.SkipWithError(why.c_str());
  benchmark::DoNotOptimize(view);
}

void BM_DecodeHandover(benchmark::State& state) {
  std::vector<std::byte> msg;
  frame_handover(msg, 1, parts_of(state.range(0)));
  std::string why;
  for (auto _ : state) {
    decode_framed(state, msg, why);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(msg.size()));
}
BENCHMARK(BM_DecodeHandover)->Arg(1)->Arg(8)->Arg(64)->Arg(512);

void BM_FrameAndDecodeHandover(benchmark::State& state) {
  const auto parts = parts_of(state.range(0));
  std::vector<std::byte> msg;
  std::string why;
  std::uint64_t value = 0;
  for (auto _ : state) {
    frame_handover(msg, ++value, parts);
    decode_framed(state, msg, why);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FrameAndDecodeHandover)->Arg(1)->Arg(8)->Arg(64)->Arg(512);

void BM_CheckHeader(benchmark::State& state) {
  const FrameHeader headers[] = {
      {sizeof(Handover) + sizeof(Part), static_cast<std::uint16_t>(MsgType::kHandover), 0},
      {sizeof(Done), static_cast<std::uint16_t>(MsgType::kDone), 0},
      {sizeof(Bytes) + 64, static_cast<std::uint16_t>(MsgType::kBytes), 0},
      {sizeof(Ping), static_cast<std::uint16_t>(MsgType::kPing), 0},
  };
  for (const FrameHeader& h : headers) {
    if (check_header(h) != nullptr) state.SkipWithError("check_header refused a valid header");
  }
  std::size_t i = 0;
  for (auto _ : state) {
    FrameHeader h = headers[i++ & 3];
    benchmark::DoNotOptimize(h);
    benchmark::DoNotOptimize(check_header(h));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CheckHeader);

}  // namespace

// A round trip through the engine on a loopback TCP pair: Connection::send of one small frame,
// FrameReader on the other end, the same frame echoed back by a thread, read by the sender's
// FrameReader. For both socket backends; frames of a ping (16 bytes) and of a tiny handover
// (120 bytes: header, fixed part, one copy part).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rig/engine/connection.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/socket.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"

namespace {

using namespace rig::engine;
namespace wire = rig::wire;

struct Pair {
  int client = -1, server = -1;
};

Pair connected() {
  std::uint16_t port = 0;
  // Loopback cannot refuse a benchmark: a failure stops it, with the reason (Result's value()).
  const int lfd = *tcp_listen(Endpoint{"127.0.0.1", 0}, port);
  Pair p;
  std::thread t([&] { p.server = tcp_accept(lfd); });
  p.client = *tcp_connect(Endpoint{"127.0.0.1", port});
  t.join();
  ::close(lfd);
  return p;
}

// A valid frame of `type` with a zeroed body of `body` bytes.
std::vector<std::byte> make_frame(wire::MsgType type, std::uint32_t body) {
  std::vector<std::byte> f(sizeof(wire::FrameHeader) + body);
  const wire::FrameHeader h{body, static_cast<std::uint16_t>(type), 0};
  std::memcpy(f.data(), &h, sizeof h);
  return f;
}

// Reads one frame whole; returns false at the end of the stream or on an error.
bool read_frame(FrameReader& reader, std::span<const std::byte>& body) {
  wire::FrameHeader h{};
  if (reader.next(h).err() != 0) return false;
  return reader.body(h.length, body) == 0;
}

// Args: backend (0 io_uring, 1 plain), frame (0 a ping, 1 a tiny handover).
void BM_EngineRoundTrip(benchmark::State& state) {
  const Backend backend = state.range(0) == 0 ? Backend::kUring : Backend::kPlain;
  if (backend == Backend::kUring && !uring_available()) {
    state.SkipWithError("io_uring is not available here");
    return;
  }
  const wire::MsgType type = state.range(1) == 0 ? wire::MsgType::kPing : wire::MsgType::kHandover;
  const std::vector<std::byte> frame = make_frame(
      type, type == wire::MsgType::kPing ? sizeof(wire::Ping) : sizeof(wire::Handover) + sizeof(wire::Part));
  const Pair p = connected();
  Counters client_counters, server_counters;
  Connection client(make_socket(p.client, backend), client_counters);
  Connection server(make_socket(p.server, backend), server_counters);
  FrameReader client_reader(client.socket(), client_counters);

  std::thread echo([&] {
    FrameReader reader(server.socket(), server_counters);
    std::span<const std::byte> body;
    while (read_frame(reader, body)) {
      const wire::FrameHeader h{static_cast<std::uint32_t>(body.size()), static_cast<std::uint16_t>(type), 0};
      const iovec iov[2] = {to_iov(&h, sizeof h), to_iov(body.data(), body.size())};
      if (server.send(iov) != 0) break;
    }
  });

  const iovec out = to_iov(frame.data(), frame.size());
  std::span<const std::byte> back;
  for (auto _ : state) {
    if (client.send({&out, 1}) != 0 || !read_frame(client_reader, back)) {
      state.SkipWithError("the round trip failed");
      break;
    }
  }
  client.shutdown();
  server.shutdown();
  echo.join();
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(client.socket().backend()) + ", " + std::to_string(frame.size()) + " B frames");
}
BENCHMARK(BM_EngineRoundTrip)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"backend", "frame"})
    ->UseRealTime();

}  // namespace

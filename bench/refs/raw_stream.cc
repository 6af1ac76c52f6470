// rig-raw-stream: the raw single-TCP-stream reference for rig-bench's copies (issue 11). Two
// threads over one loopback connection (TCP_NODELAY on, as on rig's sockets): the sender makes one
// blocking sendmsg of the whole buffer, the receiver one recv(MSG_WAITALL) of the same size into
// its own buffer, repeated for --seconds. The buffers are allocated and touched once, then reused,
// like a copy's source and destination. Prints JSON on stdout: GB/s, and per GiB moved the system
// calls (counted at each call) and each thread's CPU time and context switches (getrusage
// RUSAGE_THREAD).
#include <CLI/CLI.hpp>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "counted_io.h"
#include "loopback_pair.h"
#include "thread_cost.h"
#include "together.h"

namespace {

using namespace rig::bench::refs;
using Clock = std::chrono::steady_clock;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::unique_ptr<std::byte[]> touched_buffer(std::size_t n, int fill) {
  auto buf = std::make_unique_for_overwrite<std::byte[]>(n);
  std::memset(buf.get(), fill, n);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rig-raw-stream: one TCP stream over loopback, one sendmsg per buffer into recv(MSG_WAITALL)"};
  std::uint64_t bytes = 64ull << 20;
  double seconds = 3;
  app.add_option("--bytes", bytes, "buffer size: bytes per sendmsg and per recv")->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  app.add_option("--seconds", seconds, "how long the sender sends")->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    LoopbackPair pair = loopback_pair();
    const int out = pair.client.get(), in = pair.server.get();
    auto src = touched_buffer(bytes, 0x5a);
    auto dst = touched_buffer(bytes, 0);

    Clock::time_point start, end;
    ThreadCost sender, receiver;
    std::uint64_t sends = 0, received = 0;
    run_together(
        {[&](const Ready& ready) {
           ready();
           sender = ThreadCost::of([&](std::uint64_t& calls) {
             start = Clock::now();
             const auto until = start + std::chrono::duration<double>(seconds);
             do {
               send_all(out, src.get(), bytes, calls);
               ++sends;
             } while (Clock::now() < until);
             ::shutdown(out, SHUT_WR);
             ++calls;
           });
         },
         [&](const Ready& ready) {
           ready();
           receiver = ThreadCost::of([&](std::uint64_t& calls) {
             std::uint64_t got = 0;  // of the buffer being filled
             while (const std::size_t r = recv_some(in, dst.get() + got, bytes - got, MSG_WAITALL, calls)) {
               got = (got + r) % bytes;
               received += r;
             }
             end = Clock::now();
           });
         }},
        [&] {
          ::shutdown(out, SHUT_RDWR);
          ::shutdown(in, SHUT_RDWR);
        });

    if (received != sends * bytes) {
      std::fprintf(stderr, "rig-raw-stream: received %llu bytes of %llu sent\n",
                   static_cast<unsigned long long>(received), static_cast<unsigned long long>(sends * bytes));
      return 1;
    }
    const double elapsed = std::chrono::duration<double>(end - start).count();
    const double gib = static_cast<double>(received) / kGiB;
    ThreadCost both = sender;
    both += receiver;
    const nlohmann::json doc = {
        {"tool", "rig-raw-stream"},
        {"buffer_bytes", bytes},
        {"seconds", elapsed},
        {"bytes", received},
        {"buffers", sends},
        {"gb_s", static_cast<double>(received) / elapsed / 1e9},
        {"per_gib", both.per(gib, "ms")},
        {"threads", {{"sender", sender.per(gib, "ms")}, {"receiver", receiver.per(gib, "ms")}}},
    };
    std::cout << doc.dump(2) << "\n";
    std::fprintf(stderr, "rig-raw-stream: %llu B buffers: %.3f GB/s, per GiB %.1f system calls, CPU %.1f ms (sender %.1f, receiver %.1f)\n",
                 static_cast<unsigned long long>(bytes), doc["gb_s"].get<double>(), both.syscalls / gib,
                 both.cpu_s() * 1e3 / gib, sender.cpu_s() * 1e3 / gib, receiver.cpu_s() * 1e3 / gib);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rig-raw-stream: %s\n", e.what());
    return 1;
  }
}

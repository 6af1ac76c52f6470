// rig-page-floor: the page-shaped floor that rig-bench's pipelined tiny handovers are judged
// against (issue 11). Over one loopback connection (TCP_NODELAY on both ends, as on rig's
// sockets), three threads:
//   sender    one send per message of --message-bytes (default: rig-bench's handover size),
//   answerer  the peer: each read (up to 64 KiB) answered by one send of --answer-bytes per
//             whole message in that read,
//   drainer   on the sender's side, reads the answers.
// The sender sends for --seconds, then shuts its side; the run ends when the last answer is read.
// Prints JSON on stdout: messages per second, messages (and answers) per TCP segment that
// carried data (TCP_INFO), and per message the system calls (counted at each call), the CPU time
// and the context switches of each thread (getrusage RUSAGE_THREAD) and of all three together.
#include <CLI/CLI.hpp>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "counted_io.h"
#include "loopback_pair.h"
#include "tcp_segments.h"
#include "thread_cost.h"
#include "together.h"

namespace {

using namespace rig::bench::refs;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadBytes = 64 * 1024;

// n messages over a socket's data segments out (null where not counted).
nlohmann::json per_segment(double n, const TcpSegments& s) {
  if (!s.measured || s.data_out == 0) return nullptr;
  return n / static_cast<double>(s.data_out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rig-page-floor: one TCP_NODELAY send per message, answered one send per read, answers drained"};
  std::size_t message_bytes = 120, answer_bytes = 64;
  double seconds = 3;
  app.add_option("--message-bytes", message_bytes, "bytes of each message (rig-bench --handover-bytes)")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, kReadBytes));
  app.add_option("--answer-bytes", answer_bytes, "bytes of each message's answer")->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, kReadBytes));
  app.add_option("--seconds", seconds, "how long the sender sends")->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    LoopbackPair pair = loopback_pair();
    const int client = pair.client.get(), server = pair.server.get();

    Clock::time_point start, end;
    ThreadCost sender, answerer, drainer;
    std::uint64_t sent = 0, answered = 0, drained_bytes = 0, reads = 0;
    run_together(
        {[&](const Ready& ready) {
           const std::vector<std::byte> message(message_bytes, std::byte{0x6d});
           ready();
           sender = ThreadCost::of([&](std::uint64_t& calls) {
             start = Clock::now();
             const auto until = start + std::chrono::duration<double>(seconds);
             // The clock is read once per 64 messages, not at each (a vDSO call, but still).
             while (Clock::now() < until) {
               for (int i = 0; i < 64; ++i) send_all(client, message.data(), message_bytes, calls);
               sent += 64;
             }
             ::shutdown(client, SHUT_WR);
             ++calls;
           });
         },
         [&](const Ready& ready) {
           std::vector<std::byte> in(kReadBytes);
           const std::vector<std::byte> answers((kReadBytes / message_bytes + 1) * answer_bytes, std::byte{0x61});
           ready();
           answerer = ThreadCost::of([&](std::uint64_t& calls) {
             std::size_t partial = 0;  // bytes of a message whose rest has not come yet
             while (const std::size_t r = recv_some(server, in.data(), in.size(), 0, calls)) {
               ++reads;
               const std::size_t whole = (partial + r) / message_bytes;
               partial = (partial + r) % message_bytes;
               if (whole > 0) send_all(server, answers.data(), whole * answer_bytes, calls);
               answered += whole;
             }
             ::shutdown(server, SHUT_WR);
             ++calls;
           });
         },
         [&](const Ready& ready) {
           std::vector<std::byte> in(kReadBytes);
           ready();
           drainer = ThreadCost::of([&](std::uint64_t& calls) {
             while (const std::size_t r = recv_some(client, in.data(), in.size(), 0, calls)) drained_bytes += r;
             end = Clock::now();
           });
         }},
        [&] {
          ::shutdown(client, SHUT_RDWR);
          ::shutdown(server, SHUT_RDWR);
        });

    if (answered != sent || drained_bytes != sent * answer_bytes) {
      std::fprintf(stderr, "rig-page-floor: %llu messages sent, %llu answered, %llu answer bytes read (want %llu)\n",
                   static_cast<unsigned long long>(sent), static_cast<unsigned long long>(answered),
                   static_cast<unsigned long long>(drained_bytes),
                   static_cast<unsigned long long>(sent * answer_bytes));
      return 1;
    }
    // Every answer was read, so every message's segments were sent: the counts are whole.
    const TcpSegments messages = tcp_segments(client), answers = tcp_segments(server);
    const double elapsed = std::chrono::duration<double>(end - start).count();
    const double n = static_cast<double>(sent);
    ThreadCost all = sender;
    all += answerer;
    all += drainer;
    const nlohmann::json doc = {
        {"tool", "rig-page-floor"},
        {"message_bytes", message_bytes},
        {"answer_bytes", answer_bytes},
        {"seconds", elapsed},
        {"messages", sent},
        {"rate_msg_s", n / elapsed},
        {"messages_per_answerer_read", reads ? n / static_cast<double>(reads) : 0.0},
        // How many messages (answers) the kernel put in one TCP segment that carried data.
        {"messages_per_segment", per_segment(n, messages)},
        {"answers_per_segment", per_segment(n, answers)},
        {"per_message", all.per(n, "us")},
        {"threads",
         {{"sender", sender.per(n, "us")}, {"answerer", answerer.per(n, "us")}, {"drainer", drainer.per(n, "us")}}},
    };
    std::cout << doc.dump(2) << "\n";
    std::fprintf(stderr,
                 "rig-page-floor: %zu B messages: %.0f msg/s; per message %.2f system calls, CPU %.2f us "
                 "(sender %.2f, answerer %.2f, drainer %.2f), %.3f context switches\n",
                 message_bytes, n / elapsed, all.syscalls / n, all.cpu_s() * 1e6 / n, sender.cpu_s() * 1e6 / n,
                 answerer.cpu_s() * 1e6 / n, drainer.cpu_s() * 1e6 / n, all.context_switches() / n);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rig-page-floor: %s\n", e.what());
    return 1;
  }
}

// TCP segments that carried data, as the kernel counts them per socket (TCP_INFO's
// tcpi_data_segs_out and tcpi_data_segs_in, RFC 4898): how many small sends the kernel put into
// one segment, the machine state that sets the cost of a tiny message on loopback
// (bench/RESULTS.md, "What sets the state"). Counted per socket, so other traffic on the machine
// does not enter, unlike nstat's TcpOutSegs.
#pragma once

#include <cstdint>

namespace rig::bench::refs {

struct TcpSegments {
  bool measured = false;        // false: no TCP socket, or TCP_INFO refused
  std::uint64_t data_out = 0;   // segments this end sent that carried data
  std::uint64_t data_in = 0;    // segments this end received that carried data
  std::uint64_t all_in = 0;     // every segment received, pure ACKs too (tcpi_segs_in)
  TcpSegments& operator+=(const TcpSegments& o) {
    measured = measured || o.measured;
    data_out += o.data_out;
    data_in += o.data_in;
    all_in += o.all_in;
    return *this;
  }
};

// One TCP socket's counts so far (measured false if fd is not one, or is a listener).
TcpSegments tcp_segments(int fd);
// Every connected TCP socket of this process, summed (/proc/self/fd): rig-bench's are its link's
// connection and stripes.
TcpSegments tcp_segments_of_process();
// after less before, per field (a socket closed in between makes the sum shrink: clamped at 0).
TcpSegments operator-(const TcpSegments& after, const TcpSegments& before);

}  // namespace rig::bench::refs

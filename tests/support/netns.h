// A second host for fault tests: a network namespace joined to this one by a veth pair that the
// test makes (and removes at scope exit), whose link the test can cut, mend or slow down.
// Needs root and iproute2's `ip` and `tc`; available() says why not otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rig::test {

class NetnsPair {
 public:
  // "" when a namespace can be made here, else the reason (a test skips with it).
  static std::string unavailable();

  NetnsPair();  // throws std::runtime_error naming the failed command
  ~NetnsPair();
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  // The command prefix that runs a program inside the namespace.
  std::vector<std::string> wrapper() const { return {"ip", "netns", "exec", name_}; }
  // The namespace's address, and this side's.
  const std::string& inside_address() const { return inside_ip_; }
  const std::string& outside_address() const { return outside_ip_; }

  // Gives this side `count` (1 to 250) more addresses the namespace reaches (198.18.X.1 on:
  // RFC 2544's benchmarking range, X from this process's pid), each a source of its own to the
  // agent: a flood from many hosts. Removed with the pair.
  std::vector<std::string> add_outside_sources(int count);

  // Bytes this side's end of the veth has sent into the namespace, and received from it (the
  // kernel's counters: a transfer is under way once they move).
  std::uint64_t bytes_out() const;
  std::uint64_t bytes_in() const;

  // Drops every packet both ways (a pfifo qdisc of length 0 on both ends: netem is not needed).
  void cut();
  // Drops every packet the namespace sends (a pfifo of length 0 on its end only): this side's
  // packets arrive and go unanswered, as on a path that loses them. (A drop by this side's own
  // qdisc, as cut() makes, is local congestion to this side's TCP, whose keepalive then probes
  // on and never gives up.)
  void cut_replies();
  // Removes what cut() or slow() installed: packets pass again at full speed.
  void mend();
  // Both ways at `mbit` Mbit/s (a token bucket), so a transfer is in flight long enough for a
  // test to act in the middle of it.
  void slow(int mbit);

 private:
  void qdisc_both(const std::string& spec);
  std::string name_, outside_dev_, inside_dev_, outside_ip_, inside_ip_;
};

}  // namespace rig::test

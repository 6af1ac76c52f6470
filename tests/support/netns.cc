#include "netns.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace rig::test {
namespace {

// Runs a shell command quietly; throws with the command when it fails.
void run(const std::string& command) {
  const int rc = std::system((command + " >/dev/null 2>&1").c_str());
  if (rc != 0) throw std::runtime_error("fault test setup failed (" + std::to_string(rc) + "): " + command);
}

bool succeeds(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

}  // namespace

std::string NetnsPair::unavailable() {
  if (::geteuid() != 0) return "network namespaces need root";
  if (!succeeds("command -v ip && command -v tc")) return "iproute2 (ip, tc) is not installed";
  const std::string probe = "rigp" + std::to_string(::getpid());
  if (!succeeds("ip netns add " + probe)) return "this kernel or sandbox refuses `ip netns add`";
  succeeds("ip netns delete " + probe);
  return "";
}

NetnsPair::NetnsPair() {
  const auto pid = static_cast<unsigned>(::getpid());
  name_ = "rigf" + std::to_string(pid);
  outside_dev_ = "rgo" + std::to_string(pid);
  inside_dev_ = "rgi" + std::to_string(pid);
  // A /30 of its own per test process (pids are unique among running processes).
  const std::string net = "10." + std::to_string((pid >> 14) & 255) + "." + std::to_string((pid >> 6) & 255) + ".";
  const unsigned base = (pid & 63) * 4;
  outside_ip_ = net + std::to_string(base + 1);
  inside_ip_ = net + std::to_string(base + 2);
  run("ip netns add " + name_);
  try {
    run("ip link add " + outside_dev_ + " type veth peer name " + inside_dev_);
    run("ip link set " + inside_dev_ + " netns " + name_);
    run("ip addr add " + outside_ip_ + "/30 dev " + outside_dev_);
    run("ip link set " + outside_dev_ + " up");
    run("ip netns exec " + name_ + " ip addr add " + inside_ip_ + "/30 dev " + inside_dev_);
    run("ip netns exec " + name_ + " ip link set " + inside_dev_ + " up");
    run("ip netns exec " + name_ + " ip link set lo up");
  } catch (...) {
    succeeds("ip link delete " + outside_dev_);
    succeeds("ip netns delete " + name_);
    throw;
  }
}

std::vector<std::string> NetnsPair::add_outside_sources(int count) {
  const std::string net = "198.18." + std::to_string(::getpid() & 255) + ".";
  run("ip netns exec " + name_ + " ip route replace " + net + "0/24 via " + outside_ip_);
  std::vector<std::string> sources;
  for (int i = 1; i <= count; ++i) {
    sources.push_back(net + std::to_string(i));
    run("ip addr add " + sources.back() + "/32 dev " + outside_dev_);
  }
  return sources;
}

NetnsPair::~NetnsPair() {
  succeeds("ip link delete " + outside_dev_);  // takes its peer inside with it
  succeeds("ip netns delete " + name_);
}

void NetnsPair::qdisc_both(const std::string& spec) {
  run("tc qdisc replace dev " + outside_dev_ + " root " + spec);
  run("ip netns exec " + name_ + " tc qdisc replace dev " + inside_dev_ + " root " + spec);
}

namespace {
std::uint64_t read_counter(const std::string& path) {
  std::ifstream f(path);
  std::uint64_t v = 0;
  if (!(f >> v)) throw std::runtime_error("cannot read " + path);
  return v;
}
}  // namespace

std::uint64_t NetnsPair::bytes_out() const {
  return read_counter("/sys/class/net/" + outside_dev_ + "/statistics/tx_bytes");
}
std::uint64_t NetnsPair::bytes_in() const {
  return read_counter("/sys/class/net/" + outside_dev_ + "/statistics/rx_bytes");
}

void NetnsPair::cut() { qdisc_both("pfifo limit 0"); }

void NetnsPair::cut_replies() {
  run("ip netns exec " + name_ + " tc qdisc replace dev " + inside_dev_ + " root pfifo limit 0");
}

void NetnsPair::slow(int mbit) {
  qdisc_both("tbf rate " + std::to_string(mbit) + "mbit burst 64kb latency 100ms");
}

void NetnsPair::mend() {
  succeeds("tc qdisc del dev " + outside_dev_ + " root");
  succeeds("ip netns exec " + name_ + " tc qdisc del dev " + inside_dev_ + " root");
}

}  // namespace rig::test

#include "handshake.h"

#include <algorithm>
#include <cerrno>

#include "outbox.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"
#include "stripe_registry.h"

namespace rig::agent {
namespace {

bool recv_first(int fd, void* buf, std::size_t n, const char* what, std::string& why) {
  const int rc = engine::recv_within(fd, buf, n, kHelloTimeoutMs);
  if (rc == -ETIME) why = std::string("no complete ") + what + " within " + std::to_string(kHelloTimeoutMs) + " ms";
  else if (rc != 0) why = std::string("connection closed in its ") + what;
  return rc == 0;
}

void send_failure(engine::Socket& socket, const std::string& why) {
  const FailureFrame f(why);
  const auto iov = f.iov();
  socket.send_all(iov);
}

}  // namespace

bool read_first_frame(int fd, FirstFrame& out, bool& joining, std::string& why) {
  wire::FrameHeader h{};
  if (!recv_first(fd, &h, sizeof h, "first frame (hello or join)", why)) return false;
  if (const char* bad = wire::check_header(h)) {
    why = std::string("bad hello frame: ") + bad;
    return false;
  }
  if (h.type == static_cast<std::uint16_t>(wire::MsgType::kJoin)) {
    joining = out.join = true;  // a data connection, whatever becomes of it: not a job
    alignas(8) std::byte body[sizeof(wire::Join)];
    if (h.length != sizeof body) {
      why = "join of " + std::to_string(h.length) + " bytes, not " + std::to_string(sizeof body);
      return false;
    }
    return recv_first(fd, body, sizeof body, "join", why) && wire::decode(body, out.stripe, why);
  }
  if (h.type != static_cast<std::uint16_t>(wire::MsgType::kHello) || h.length != sizeof(wire::Hello)) {
    why = std::string("expected hello, got ") + wire::type_name(h.type);
    return false;
  }
  alignas(8) std::byte body[sizeof(wire::Hello)];
  return recv_first(fd, body, sizeof body, "hello", why) && wire::decode(body, out.hello, why);
}

bool join_stripe(int fd, const wire::Join& join, engine::Backend backend, std::string& why) {
  std::unique_ptr<engine::Socket> socket = engine::make_socket(fd, backend);
  const std::string refused = StripeRegistry::instance().attach(join, socket);
  if (refused.empty()) return true;
  why = "join refused: " + refused;
  send_failure(*socket, why);
  return false;
}

bool send_welcome(engine::Connection& connection, const wire::Hello& hello,
                  const std::vector<wire::Account>& accounts, const AgentConfig& config,
                  JobStripes& stripes, std::string& why) {
  const std::uint32_t supported =
      wire::kFeaturePrograms | (config.max_stripes > 0 ? std::uint32_t{wire::kFeatureStripes} : 0u);
  const auto w = wire::frame(
      wire::MsgType::kWelcome,
      wire::Welcome{wire::kMagic, wire::kVersion, 0, hello.features & supported,
                    static_cast<std::uint32_t>(accounts.size())},
      accounts.size() * sizeof(wire::Account));
  const iovec iov[2] = {engine::to_iov(&w, sizeof w),
                        engine::to_iov(accounts.data(), accounts.size() * sizeof(wire::Account))};
  if (connection.send(iov) != 0) {
    why = "connection lost sending the welcome";
    return false;
  }
  if ((hello.features & supported & wire::kFeatureStripes) == 0) return true;
  const std::uint32_t max = std::min(config.max_stripes, wire::kMaxStripes);
  const auto g = wire::frame(wire::MsgType::kStripeGrant, wire::StripeGrant{stripes.grant(max), max, 0});
  const iovec giov = engine::to_iov(&g, sizeof g);
  if (connection.send({&giov, 1}) != 0) {
    why = "connection lost sending the stripe grant";
    return false;
  }
  return true;
}

void refuse(int fd, const std::string& why) {
  std::unique_ptr<engine::Socket> socket = engine::make_socket(fd, engine::Backend::kPlain);
  send_failure(*socket, why);
}

}  // namespace rig::agent

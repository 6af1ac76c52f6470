// Where a connection goes: an endpoint as an operator writes it ("HOST:PORT", HOST a name, an
// IPv4 address or a bracketed IPv6 address), and the socket addresses getaddrinfo resolves it to.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rig/wire/outcome.h"

namespace rig::engine {

struct Endpoint {
  std::string host;  // a name, an IPv4 address, or an IPv6 address (without brackets)
  std::uint16_t port = 0;
};

// Parses "HOST:PORT": "localhost:7300", "10.0.0.5:7300", "[::1]:7300", "gpu-3.lab:7300". Only
// the syntax: names are resolved by resolve(). Fails with -EINVAL naming the text.
wire::Result<Endpoint> parse_endpoint(const std::string& text);
// "host:port", the host in brackets when it is an IPv6 address.
std::string to_string(const Endpoint& ep);

// One resolved socket address, IPv4 or IPv6.
struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
};
// Numeric: "127.0.0.1:7300", "[::1]:7300".
std::string to_string(const Address& a);
// 127.0.0.0/8, ::1, or a v4-mapped 127.x.
bool is_loopback(const Address& a);
// The address of a socket's own end (getsockname) or its peer's (getpeername); false on error.
bool local_address(int fd, Address& out);
bool peer_address(int fd, Address& out);

enum class Use { kConnect, kListen };
// The TCP addresses of `ep`, in getaddrinfo's order (the order a client tries them in). Fails
// naming the endpoint and keeping getaddrinfo's text ("cannot resolve 'gpu-3.lab'
// (gpu-3.lab:7300): Name or service not known"), with -ENXIO for a name without a TCP address
// (address.cc maps the other EAI_* codes).
wire::Result<std::vector<Address>> resolve(const Endpoint& ep, Use use);

}  // namespace rig::engine

#include "rig/engine/address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace rig::engine {

Endpoint parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument("expected HOST:PORT (or [IPv6]:PORT), got '" + text + "'");
  }
  Endpoint ep;
  ep.host = text.substr(0, colon);
  if (ep.host.front() == '[') {
    if (ep.host.size() < 3 || ep.host.back() != ']') {
      throw std::invalid_argument("expected [IPv6]:PORT, got '" + text + "'");
    }
    ep.host = ep.host.substr(1, ep.host.size() - 2);
  } else if (ep.host.find(':') != std::string::npos) {
    throw std::invalid_argument("an IPv6 address needs brackets ([" + ep.host + "]:PORT), got '" + text + "'");
  }
  const std::string port = text.substr(colon + 1);
  unsigned long v = 0;
  for (char c : port) {
    if (c < '0' || c > '9') throw std::invalid_argument("bad port in '" + text + "'");
    v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v > 65535) throw std::invalid_argument("port out of range in '" + text + "'");
  }
  ep.port = static_cast<std::uint16_t>(v);
  return ep;
}

std::string to_string(const Endpoint& ep) {
  const bool v6 = ep.host.find(':') != std::string::npos;
  return (v6 ? "[" + ep.host + "]" : ep.host) + ":" + std::to_string(ep.port);
}

std::string to_string(const Address& a) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (a.family() == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a.storage);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
  }
  if (a.family() == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a.storage);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6.sin6_port));
  }
  return "(family " + std::to_string(a.family()) + ")";
}

bool is_loopback(const Address& a) {
  if (a.family() == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a.storage);
    return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
  }
  if (a.family() == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a.storage);
    if (IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) return in6.sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

bool local_address(int fd, Address& out) {
  out.length = sizeof out.storage;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&out.storage), &out.length) == 0;
}

bool peer_address(int fd, Address& out) {
  out.length = sizeof out.storage;
  return ::getpeername(fd, reinterpret_cast<sockaddr*>(&out.storage), &out.length) == 0;
}

std::vector<Address> resolve(const Endpoint& ep, Use use) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_NUMERICSERV | (use == Use::kListen ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const std::string port = std::to_string(ep.port);
  const int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    const std::string why = rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
    throw std::runtime_error("cannot resolve '" + ep.host + "' (" + to_string(ep) + "): " + why);
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> hold(found, ::freeaddrinfo);
  std::vector<Address> out;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    Address a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = ai->ai_addrlen;
    out.push_back(a);
  }
  if (out.empty()) throw std::runtime_error("cannot resolve '" + ep.host + "' (" + to_string(ep) + "): no TCP address");
  return out;
}

}  // namespace rig::engine

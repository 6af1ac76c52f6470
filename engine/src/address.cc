#include "rig/engine/address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace rig::engine {
namespace {

wire::Outcome not_an_endpoint(std::string why) { return wire::Outcome::failed(-EINVAL, std::move(why)); }

// getaddrinfo's EAI_* as an errno (it has none of its own): EAI_SYSTEM the errno it left; a name
// without an address (EAI_NONAME, EAI_NODATA, EAI_ADDRFAMILY) or a server that refused it
// (EAI_FAIL) -ENXIO, "no such address"; a server that did not answer yet (EAI_AGAIN) -EAGAIN;
// EAI_MEMORY -ENOMEM; the rest (flags, family, service: this call's own) -EINVAL.
int resolve_errno(int rc, int system_errno) {
  switch (rc) {
    case EAI_SYSTEM: return system_errno > 0 ? -system_errno : -EIO;  // errno left at 0: still a failure
    case EAI_NONAME:
    case EAI_NODATA:
    case EAI_ADDRFAMILY:
    case EAI_FAIL: return -ENXIO;
    case EAI_AGAIN: return -EAGAIN;
    case EAI_MEMORY: return -ENOMEM;
    default: return -EINVAL;
  }
}

}  // namespace

wire::Result<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return not_an_endpoint("expected HOST:PORT (or [IPv6]:PORT), got '" + text + "'");
  }
  Endpoint ep;
  ep.host = text.substr(0, colon);
  if (ep.host.front() == '[') {
    if (ep.host.size() < 3 || ep.host.back() != ']') {
      return not_an_endpoint("expected [IPv6]:PORT, got '" + text + "'");
    }
    ep.host = ep.host.substr(1, ep.host.size() - 2);
  } else if (ep.host.find(':') != std::string::npos) {
    return not_an_endpoint("an IPv6 address needs brackets ([" + ep.host + "]:PORT), got '" + text + "'");
  }
  const std::string port = text.substr(colon + 1);
  unsigned long v = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return not_an_endpoint("bad port in '" + text + "'");
    v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v > 65535) return not_an_endpoint("port out of range in '" + text + "'");
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

wire::Result<std::vector<Address>> resolve(const Endpoint& ep, Use use) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_NUMERICSERV | (use == Use::kListen ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const std::string port = std::to_string(ep.port);
  const int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    const int e = errno;
    const std::string why = rc == EAI_SYSTEM ? std::strerror(e) : ::gai_strerror(rc);
    return wire::Outcome::failed(resolve_errno(rc, e), "cannot resolve '" + ep.host + "' (" + to_string(ep) + "): " + why);
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
  if (out.empty()) {
    return wire::Outcome::failed(-ENXIO, "cannot resolve '" + ep.host + "' (" + to_string(ep) + "): no TCP address");
  }
  return out;
}

}  // namespace rig::engine

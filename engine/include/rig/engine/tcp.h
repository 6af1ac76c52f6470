// TCP set-up: listening, connecting, and the options every connection of a job carries.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <cstdint>
#include <string>
#include <vector>

#include "rig/engine/address.h"
#include "rig/wire/outcome.h"

namespace rig::engine {

// Dead-peer detection: keepalive probes start after this much silence, and unacknowledged data
// fails the connection after kUserTimeoutMs; a silent dead peer is found within about
// kDeadPeerBoundMs.
inline constexpr int kKeepIdleS = 5;
inline constexpr int kKeepIntervalS = 1;
inline constexpr int kKeepCount = 5;
inline constexpr int kUserTimeoutMs = 15000;
inline constexpr int kDeadPeerBoundMs = 15000;

// A listening socket bound to `a` (port 0 picks one): its fd, with `bound_port` set; or the
// failing call's -errno, naming it and the address ("bind 127.0.0.1:7300: Address already in
// use").
wire::Result<int> tcp_listen(const Address& a, std::uint16_t& bound_port);
// The same for the first of `addresses` that binds, in order (the last one's failure if none
// does; -EINVAL for none at all); `bound`, when given, receives the address bound.
wire::Result<int> tcp_listen_first(const std::vector<Address>& addresses, std::uint16_t& bound_port,
                                   Address* bound = nullptr);
// tcp_listen_first(resolve(ep, Use::kListen), ...), or resolve()'s failure.
wire::Result<int> tcp_listen(const Endpoint& ep, std::uint16_t& bound_port, Address* bound = nullptr);
// Accepts one connection; returns its fd with the job options set, or -errno.
int tcp_accept(int listen_fd);
// Connects to `a`: the fd with the job options set, or the failing call's -errno naming it
// ("connect to 127.0.0.1:7300: Connection refused").
wire::Result<int> tcp_connect(const Address& a);
// Connects to the first of `addresses` that accepts, trying them in order; sets `reached` to it.
// Fails with the last address's -errno (-EDESTADDRREQ for none), naming `name` and each
// address's cause ("connect to NAME (tried A: ...; B: ...): B's errno text").
wire::Result<int> tcp_connect_first(const std::vector<Address>& addresses, const std::string& name, Address& reached);
// Resolves `ep` and connects to the first of its addresses that accepts (`reached`, when given,
// receives it). Fails as resolve() and tcp_connect_first() do.
wire::Result<int> tcp_connect(const Endpoint& ep, Address* reached = nullptr);
// Receives exactly n bytes on a blocking socket within timeout_ms in all (a handshake's first
// frames). Returns 0, -ETIME once the time is up, -ECONNRESET at end of stream, or -errno.
int recv_within(int fd, void* buf, std::size_t n, int timeout_ms);
// Sends every byte of `iov` on a socket within timeout_ms in all (a handshake's frames, a
// refusal): 0, -ETIME once the time is up, or -errno (-EPIPE once the peer is gone).
int send_within(int fd, std::span<const iovec> iov, int timeout_ms);
// TCP_NODELAY, keepalive, user timeout.
void set_job_options(int fd);
// Data sent on `fd` that stays unacknowledged, or held back by a window the peer keeps shut, for
// `ms` milliseconds fails the connection with ETIMEDOUT: the kernel drops what it holds (so a
// zero-copy send's notification comes) and every blocked call returns (TCP_USER_TIMEOUT).
// ms <= 0: kUserTimeoutMs.
void set_send_silence_ms(int fd, int ms);
// The wait for its first byte that the next receive of a transfer may take, after one that got
// `got` (a count or -errno) of `wanted` bytes under a silence bound of bound_ms: the whole bound
// unless that receive was cut short (the bound ended it, or a signal), and then what is left of
// the bound counted from the last byte that came (TCP_INFO's tcpi_last_data_recv), at least
// 1 ms, or -1 once the peer has been silent for all of it. So a peer that stops inside a large
// payload is found within the bound of its last byte, not of the receive's start (which could
// double it). bound_ms <= 0: 0 (no bound).
int next_receive_wait_ms(int fd, int bound_ms, long got, std::size_t wanted);
// Whether TCP itself gave up on the connection (its keepalive probes or its data went
// unacknowledged: the kernel's ETIMEDOUT, not a silence bound's): the connection is closed then.
bool tcp_gave_up(int fd);
// What a failure says when tcp_gave_up.
inline constexpr const char* kTcpGaveUp =
    "TCP gave up on the connection: its keepalive probes or data went unacknowledged (packets vanish on the way, "
    "or the peer's machine is gone)";
// Whether the connected socket's peer is this machine's loopback (127.0.0.0/8, ::1, or a
// v4-mapped 127.x): the defaults
// of SEND_ZC and striping differ there (the kernel copies anyway; one core carries both ends).
bool peer_is_loopback(int fd);

}  // namespace rig::engine

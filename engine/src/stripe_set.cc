#include "rig/engine/stripe_set.h"

#include <liburing.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

#include "rig/engine/connection.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/packed_rows.h"
#include "rig/engine/syscall_count.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"
#include "rig/engine/env_settings.h"
#include "uring_ring.h"

namespace rig::engine {
namespace {

constexpr unsigned kEntries = 2 * wire::kMaxStripes;

// The calling thread's ring for striped transfers (only that thread submits and reaps it).
Ring& stripe_ring() {
  thread_local Ring ring(Ring::Use::kPerThread, kEntries);
  return ring;
}

// Why stripe i's frame is not the piece announced.
std::string mismatch(std::uint32_t i, const wire::Framed<wire::Bytes>& got, const wire::Bytes& want) {
  const bool bytes = got.header.type == static_cast<std::uint16_t>(wire::MsgType::kBytes);
  const std::string carried =
      bytes ? "bytes (device " + std::to_string(got.msg.device) + ", value " + std::to_string(got.msg.value) +
                  ", part " + std::to_string(got.msg.part) + ", offset " + std::to_string(got.msg.offset) +
                  ", length " + std::to_string(got.msg.length) + ", frame length " +
                  std::to_string(got.header.length) + ")"
            : "a frame of type " + std::to_string(got.header.type);
  return "stripe " + std::to_string(i) + " carried " + carried + " where the piece at offset " +
         std::to_string(want.offset) + " of " + std::to_string(want.length) + " bytes was announced";
}

}  // namespace

// One stripe's transfer in flight: its cursor and the window its SQE points to.
struct StripeSet::Leg {
  explicit Leg(std::span<const iovec> iov) : cursor(iov) {}
  IovCursor cursor;
  iovec window[IovCursor::kWindow]{};
  msghdr msg{};
  bool in_flight = false;
  bool zc = false;     // the SQE in flight is a zero-copy send
  bool no_zc = false;  // this transfer's leg goes by copy (memlock refused a zero-copy send)
};

std::size_t default_stripe_window_bytes() {
  return env_settings()->stripe_window_bytes;
}

void StripeSet::add(std::unique_ptr<Socket> socket) {
  if (silence_ms_ > 0) socket->set_silence_ms(silence_ms_);
  sockets_.push_back(std::move(socket));
}

void StripeSet::set_silence_ms(int ms) {
  silence_ms_ = ms;
  for (auto& s : sockets_) s->set_silence_ms(ms);
}

void StripeSet::shutdown() {
  for (auto& s : sockets_) s->shutdown();
}

int StripeSet::send(std::span<const std::span<const iovec>> legs) { return transfer(legs, true); }

int StripeSet::recv(std::span<const std::span<const iovec>> legs) { return transfer(legs, false); }

int StripeSet::plan(Scratch& sc, wire::Framed<wire::Bytes>* header_dst, const wire::Striped& s,
                     const void* base, std::uint64_t row_bytes, std::uint64_t pitch) {
  const std::uint32_t n = wire::stripe_pieces(s);
  if (n > sockets_.size()) return -EPROTO;
  try {
    sc.iov.clear();
    std::array<std::size_t, wire::kMaxStripes + 1> start{};
    for (std::uint32_t i = 0; i < n; ++i) {
      const wire::StripePiece p = wire::stripe_piece(s, i);
      sc.headers[i] = wire::encode(wire::Bytes{s.device, s.part, s.value, s.offset + p.first, p.bytes, 0});
      start[i] = sc.iov.size();
      sc.iov.push_back({header_dst + i, sizeof(wire::Framed<wire::Bytes>)});
      append_rows(sc.iov, base, row_bytes, pitch, s.offset + p.first, p.bytes);
    }
    start[n] = sc.iov.size();
    // Spans only once the vector stopped growing.
    for (std::uint32_t i = 0; i < n; ++i) {
      sc.legs[i] = std::span<const iovec>(sc.iov).subspan(start[i], start[i + 1] - start[i]);
    }
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  return 0;
}

int StripeSet::send_striped(const wire::Striped& s, const void* base, std::uint64_t row_bytes,
                            std::uint64_t pitch) {
  Scratch& sc = send_scratch_;
  if (const int rc = plan(sc, sc.headers.data(), s, base, row_bytes, pitch); rc != 0) return rc;
  const int rc = send({sc.legs.data(), wire::stripe_pieces(s)});
  if (rc == 0) bump(counters_.bytes_striped_out, s.length);
  return rc;
}

int StripeSet::send_copy(Connection& conn, std::uint32_t device, std::uint32_t part,
                         std::uint64_t value, const void* base, std::uint64_t row_bytes,
                         std::uint64_t pitch, std::uint64_t at, std::uint64_t n) {
  if (sockets_.empty()) return -EINVAL;
  const std::uint64_t stripes = sockets_.size();
  const std::uint64_t per = std::max<std::uint64_t>(64 * 1024, (kGroupBytes + stripes - 1) / stripes);
  for (std::uint64_t done = 0; done < n;) {
    const std::uint64_t len = std::min(per * stripes, n - done);
    const wire::Striped s{device, part, value, at + done, static_cast<std::uint32_t>(len),
                          static_cast<std::uint32_t>(per)};
    const auto framed = wire::encode(s);
    const iovec iov = to_iov(&framed, sizeof framed);
    if (const int rc = conn.send_holding_turn({&iov, 1}); rc != 0) return rc;
    if (const int rc = send_striped(s, base, row_bytes, pitch); rc != 0) return rc;
    done += len;
  }
  return 0;
}

wire::Outcome StripeSet::recv_striped(const wire::Striped& s, void* base, std::uint64_t row_bytes,
                                      std::uint64_t pitch) {
  Scratch& sc = recv_scratch_;
  const std::uint32_t n = wire::stripe_pieces(s);
  if (const int rc = plan(sc, received_headers_.data(), s, base, row_bytes, pitch); rc != 0) {
    return wire::Outcome::failed(rc, rc == -EPROTO ? "striped bytes in " + std::to_string(n) + " pieces over " +
                                                         std::to_string(sockets_.size()) + " stripes"
                                                   : "out of memory receiving striped bytes");
  }
  if (const int rc = recv({sc.legs.data(), n}); rc != 0) {
    return wire::Outcome::failed(rc, std::string("connection lost while receiving striped bytes: ") + std::strerror(-rc));
  }
  // The bytes landed where this side's own record says (never out of bounds); a stripe that
  // carried something else than announced fails the job.
  for (std::uint32_t i = 0; i < n; ++i) {
    if (std::memcmp(&received_headers_[i], &sc.headers[i], sizeof sc.headers[i]) != 0) {
      return wire::Outcome::failed(-EPROTO, mismatch(i, received_headers_[i], sc.headers[i].msg));
    }
  }
  bump(counters_.payload_bytes_direct, s.length);  // no byte of it was copied in user space
  bump(counters_.bytes_striped_in, s.length);
  return {};
}

// Every leg's transfer on the stripe ring, each leg's next window in flight at once (the
// kernel's workers run them in parallel), until all are done or one failed. On the stack
// (about 1 KiB a leg): no allocation per transfer.
struct StripeSet::Flight {
  Flight(Ring& r, std::span<const std::span<const iovec>> l, bool s) : ring(r), legs(l), sending(s) {}
  Ring& ring;
  std::span<const std::span<const iovec>> legs;
  bool sending;
  std::array<std::optional<Leg>, wire::kMaxStripes> state;
  std::size_t in_flight = 0;
  int first_error = 0;
};

int StripeSet::transfer(std::span<const std::span<const iovec>> legs, bool sending) {
  if (legs.size() > sockets_.size()) return -EINVAL;
  std::uint64_t bytes = 0;
  for (const auto& l : legs) bytes += iov_bytes(l);
  Ring* ring = parallel_ && stripe_ring().error() == 0 ? &stripe_ring() : nullptr;
  int first_error = 0;
  if (ring == nullptr) {
    // One stripe after the other: the peer's socket buffers hold the others meanwhile.
    for (std::size_t i = 0; i < legs.size() && first_error == 0; ++i) {
      first_error = sending ? sockets_[i]->send_all(legs[i]) : sockets_[i]->recv_all(legs[i]);
    }
  } else {
    Flight f(*ring, legs, sending);
    for (;;) {
      if (f.first_error == 0) submit_windows(f);
      // The legs' memory may go once this returns: every zero-copy send's notification first.
      if (f.in_flight == 0 && ring->zc_due() == 0) break;
      if (wait_for_completion(f)) reap(f);
    }
    first_error = f.first_error;
  }
  if (first_error != 0) {
    shutdown();
    return first_error;
  }
  if (sending) {
    bump(counters_.bytes_sent, bytes);
    bump(counters_.messages_sent, legs.size());
    bump(counters_.send_calls, 1);
  } else {
    bump(counters_.bytes_received, bytes);
    bump(counters_.messages_received, legs.size());
  }
  return 0;
}

void StripeSet::submit_windows(Flight& f) {
  for (std::size_t i = 0; i < f.legs.size(); ++i) {
    if (!f.state[i]) f.state[i].emplace(f.legs[i]);
    Leg& leg = *f.state[i];
    if (leg.in_flight || leg.cursor.done()) continue;
    io_uring_sqe* sqe = f.ring.prepare(i);  // kEntries >= legs and the ring set up: never null
    leg.msg = msghdr{};
    leg.msg.msg_iov = leg.window;
    leg.msg.msg_iovlen = trim_window(leg.window, leg.cursor.window(leg.window), window_bytes_);
    leg.zc = f.sending && !leg.no_zc && zc_bytes_ > 0 && iov_bytes({leg.window, leg.msg.msg_iovlen}) >= zc_bytes_;
    if (leg.zc) {
      io_uring_prep_sendmsg_zc(sqe, sockets_[i]->fd(), &leg.msg, MSG_NOSIGNAL | MSG_WAITALL);
      sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
    } else if (f.sending) {
      io_uring_prep_sendmsg(sqe, sockets_[i]->fd(), &leg.msg, MSG_NOSIGNAL | MSG_WAITALL);
    } else {
      io_uring_prep_recvmsg(sqe, sockets_[i]->fd(), &leg.msg, MSG_WAITALL);
    }
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    leg.in_flight = true;
    ++f.in_flight;
  }
}

bool StripeSet::wait_for_completion(Flight& f) {
  // Only a receive is bounded by the silence: a send's bound is the socket's own.
  const bool bounded = silence_ms_ > 0 && !f.sending && f.first_error == 0;
  const int rc = f.ring.wait_one(bounded ? silence_ms_ : 0);
  if (rc == -ETIME) {
    // No stripe moved for silence_ms: end every leg (they return) and fail.
    f.first_error = -ETIMEDOUT;
    shutdown();
    return false;
  }
  if (rc < 0) {
    // The ring itself failed: the SQEs already in flight still borrow the legs, so end
    // every stripe's transfer and wait for them.
    if (f.first_error == 0) f.first_error = rc;
    shutdown();
  }
  return true;
}

void StripeSet::reap(Flight& f) {
  std::uint64_t copied = 0;
  f.ring.each_result([&](std::uint64_t i, int res) { take(f, *f.state[i], res); }, copied);
  if (copied != 0) bump(counters_.zc_copied, copied);
}

void StripeSet::take(Flight& f, Leg& leg, int res) {
  leg.in_flight = false;
  --f.in_flight;
  if (leg.zc && (res == -EOPNOTSUPP || res == -EINVAL || res == -ENOMEM)) {
    // Refused: this leg again by copy; for good unless it was memlock (-ENOMEM).
    bump(counters_.zc_fallbacks, 1);
    if (res == -ENOMEM) leg.no_zc = true;
    else zc_bytes_ = 0;
    return;
  }
  if (leg.zc && res > 0) bump(counters_.zc_sends, 1);
  if (res == -EINTR || res == -EAGAIN) return;
  if (res <= 0) {
    if (f.first_error == 0) {
      f.first_error = res < 0 ? res : (f.sending ? -EPIPE : -ECONNRESET);
      shutdown();  // the other legs must not wait for a peer that will not come
    }
    return;
  }
  leg.cursor.advance(static_cast<std::size_t>(res));
}

}  // namespace rig::engine

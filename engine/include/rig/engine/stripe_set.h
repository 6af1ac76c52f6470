// The data connections a link stripes large payloads over, besides the job's own connection.
// Each stripe carries only kBytes messages, in the order the job's connection announces them
// (wire/PROTOCOL.md, kStriped); nothing else reads or writes them.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/export.h"
#include "rig/engine/socket.h"
#include "rig/wire/codec.h"
#include "rig/wire/limits.h"

namespace rig::engine {

class Connection;

// RIG_STRIPE_WINDOW_BYTES as a count of bytes (read once), else 0 (StripeSet::set_window_bytes).
RIG_API std::size_t default_stripe_window_bytes();

class StripeSet {
 public:
  // parallel: move the stripes' bytes with io_uring, every stripe's transfer in flight at once
  // and punted to the kernel's workers (IOSQE_ASYNC), so several cores copy; otherwise one
  // stripe after the other through the Socket interface (the plain backend, fault injection).
  // zc_bytes: in the parallel path, a stripe's send of at least this many bytes goes zero-copy
  // (SENDMSG_ZC; the transfer then returns only after every notification); 0: never. Resolve it
  // as the job's connection does (resolve_send_zc_bytes: off towards loopback).
  StripeSet(bool parallel, Counters& counters, std::size_t zc_bytes = 0)
      : parallel_(parallel), counters_(counters), zc_bytes_(zc_bytes) {}

  void add(std::unique_ptr<Socket> socket);
  // In the parallel path, a receive in which no stripe completes a window for this long fails
  // with -ETIMEDOUT (and shuts the set down); in the one-by-one path, each socket's receive
  // bound. Sends: bytes unacknowledged (or held back by a shut window) for this long fail the
  // stripe's connection (Socket::set_silence_ms). 0: no bound on receives, TCP's on sends.
  void set_silence_ms(int ms);
  // In the parallel path, at most this many bytes of a stripe go in one SQE (0: a window of up
  // to IovCursor::kWindow iovecs, whatever their bytes: a contiguous copy's piece of a group is
  // one SQE of 1 MiB on 4 stripes, a strided one's several of 64 rows). The default comes from
  // RIG_STRIPE_WINDOW_BYTES (else 0), so a bench run can compare both shapes on one build
  // (docs/TUNING.md, "Striping"). Set before the first transfer.
  void set_window_bytes(std::size_t n) { window_bytes_ = n; }
  std::size_t size() const { return sockets_.size(); }
  // The stripe threshold: a copy's part of at least `bytes` goes striped (both ends learn it in
  // the joins, from the client's LinkOptions::stripe_min_bytes). Until it is set, none does.
  void set_min_bytes(std::uint64_t bytes) { min_bytes_ = bytes; }
  bool takes(std::uint64_t whole) const { return whole >= min_bytes_; }
  Socket& at(std::size_t i) { return *sockets_[i]; }

  // Sends legs[i] on stripe i for every i < legs.size() (<= size()). Returns 0 once the kernel
  // took every byte of every leg, or the first -errno; on an error the set is shut down (the
  // job fails: no stripe may be left mid-message). Borrows the legs' iovecs and the memory
  // they point to until it returns. Called only by the holder of the job connection's turn.
  int send(std::span<const std::span<const iovec>> legs);
  // Fills legs[i] from stripe i. Returns 0, -ECONNRESET at an end of stream, or -errno; on an
  // error the set is shut down. Called only by the one reader of the stripes.
  int recv(std::span<const std::span<const iovec>> legs);

  // The pieces of one kStriped message (announced on the job's connection just before), each
  // a kBytes message on its stripe, from or into a copy's memory: packed byte k lies at
  // base + (k / row_bytes) * pitch + k % row_bytes (pitch == row_bytes: end to end).
  // send_striped: the sender's side (the turn holder); same loan and result as send().
  int send_striped(const wire::Striped& s, const void* base, std::uint64_t row_bytes,
                   std::uint64_t pitch);
  // recv_striped: the reader's side. The payload lands straight in place; then every piece's
  // header must be the one `s` announced, or it fails with -EPROTO naming the difference (the
  // set is left open: the caller fails the job with that reason first, which closes it). Other
  // failures: -ENOMEM, or a stripe's -errno (-ETIMEDOUT: the caller names its silence bound).
  wire::Outcome recv_striped(const wire::Striped& s, void* base, std::uint64_t row_bytes, std::uint64_t pitch);

  // Sends packed bytes [at, at + n) of a copy part (memory as for send_striped) the striped
  // way: in groups of kGroupBytes, each announced by a kStriped message on `conn` (whose turn
  // the caller holds) and then cut into one piece per stripe of max(64 KiB, group / stripes)
  // bytes (NCCL's rule). Borrows the memory until it returns; 0 or -errno.
  static constexpr std::uint64_t kGroupBytes = wire::kChunkBytes;  // a group is a chunk
  int send_copy(Connection& conn, std::uint32_t device, std::uint32_t part, std::uint64_t value,
                const void* base, std::uint64_t row_bytes, std::uint64_t pitch, std::uint64_t at,
                std::uint64_t n);

  // Every call blocked on a stripe returns; later ones fail.
  void shutdown();

 private:
  int transfer(std::span<const std::span<const iovec>> legs, bool sending);
  // A parallel transfer's steps (stripe_set.cc): every idle leg's next window prepared on the
  // ring; one submit-and-wait (false once the silence bound passed); every completion taken,
  // each leg's result by take().
  struct Flight;
  struct Leg;
  void submit_windows(Flight& f);
  bool wait_for_completion(Flight& f);
  void reap(Flight& f);
  void take(Flight& f, Leg& leg, int res);
  // The headers and iovecs of one striped message; one for the sending side (ordered by the
  // job connection's turn) and one for the reading side (one thread), so they never mix.
  struct Scratch {
    std::array<wire::Framed<wire::Bytes>, wire::kMaxStripes> headers{};
    std::vector<iovec> iov;
    std::array<std::span<const iovec>, wire::kMaxStripes> legs{};
  };
  // Fills `sc` for `s`: headers as announced (to send, or as expected) and the legs' iovecs.
  // -EPROTO when s has more pieces than this set has stripes; -ENOMEM if the iovecs do not fit.
  int plan(Scratch& sc, wire::Framed<wire::Bytes>* header_dst, const wire::Striped& s,
           const void* base, std::uint64_t row_bytes, std::uint64_t pitch);
  Scratch send_scratch_, recv_scratch_;
  std::array<wire::Framed<wire::Bytes>, wire::kMaxStripes> received_headers_{};
  bool parallel_;
  std::uint64_t min_bytes_ = UINT64_MAX;  // set_min_bytes
  Counters& counters_;
  // Written only by the sending side (the turn holder): a kernel that refuses zero-copy sets 0.
  std::size_t zc_bytes_;
  int silence_ms_ = 0;  // set before the first transfer
  std::size_t window_bytes_ = default_stripe_window_bytes();  // set before the first transfer
  std::vector<std::unique_ptr<Socket>> sockets_;
};

}  // namespace rig::engine

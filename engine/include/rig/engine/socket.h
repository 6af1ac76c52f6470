// A connected stream socket behind a small interface, so that the transport can run on io_uring
// or on plain blocking calls, and tests can inject short writes, delays and loss.
//
// Who may call what: the send calls (send_all, send_fixed, register_send_buffers) are made by
// one thread at a time, and successive callers are ordered by a happens-before edge (on a
// Connection: the holder of its send turn, whose release/acquire orders one holder after the
// previous). The io_uring backend relies on it: its sends go through one ring per socket.
// The receive calls are made by one thread at a time likewise (the connection's only reader).
// shutdown() and fd() may be called by any thread at any time.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rig/engine/backend.h"
#include "rig/export.h"

namespace rig::engine {

struct Counters;

class Socket {
 public:
  virtual ~Socket() = default;

  // Sends every byte of `iov`, looping on partial sends. Returns 0 once the local kernel has
  // taken all of them, or -errno (-EPIPE/-ECONNRESET once the peer or a shutdown closed it).
  // Borrows the iov's memory until it returns. A zero-copy send (io_uring, at or above the
  // socket's threshold) returns only after the kernel's notification that it no longer reads
  // the memory, so the loan also ends at the return.
  virtual int send_all(std::span<const iovec> iov) = 0;

  // Registers `bufs` as the fixed buffers of this socket's sends (buffer i = bufs[i]). Returns
  // 0, or -errno (-EOPNOTSUPP: this backend has no registered buffers; -ENOMEM: over
  // RLIMIT_MEMLOCK). At most once per socket. The memory must outlive the socket.
  virtual int register_send_buffers(std::span<const iovec> bufs);
  // Sends `head`, then the `n` bytes at `p`, which lie inside registered buffer `index`, in
  // order as one message. Same result and loan as send_all (the loan of [p, p + n) ends with
  // the zero-copy notification when the send went zero-copy). The default sends both with
  // send_all.
  virtual int send_fixed(std::span<const iovec> head, const void* p, std::size_t n, unsigned index);

  // Posts `iov` to be sent by the calling thread's next receive (recv_ready, recv_some,
  // recv_all) in the same call into the kernel (io_uring: the send's SQE rides on the
  // receive's io_uring_enter), or by finish_send(). The poster must call finish_send() before
  // its next send of any kind on this socket: until then `iov` and its memory stay borrowed.
  // One posted send at a time. Returns 0 or -errno. The default (plain backend, a send at or
  // above the zero-copy threshold) sends at once and keeps the result for finish_send().
  virtual int post_send(std::span<const iovec> iov);
  // Waits until the posted send took every byte (sending what a short send left) and returns
  // its result: 0 or -errno. 0 when nothing is posted. Called by the thread that posted.
  virtual int finish_send();
  // Puts a posted send into the kernel now, without waiting for it (io_uring: submits its SQE),
  // for a poster that is about to wait by other means than a receive of this socket (a
  // gathering read's readiness wait, FrameReader::set_gather): the send then goes out while it
  // waits. finish_send() still ends it. Returns 0 or -errno. The default does nothing: its
  // post_send sent at once.
  virtual int push_posted();

  // Sends what the kernel takes now of `iov`, without waiting: the count (possibly less than
  // the whole), -EAGAIN when it takes nothing, or -errno. For small control frames (a ping, a
  // close) from a thread that must not block: a caller that got a part must send the rest
  // with send_all, so that no half frame is left on the stream.
  virtual long send_ready(std::span<const iovec> iov) = 0;

  // Receives at least one and at most `n` bytes into `buf`. Returns the count, 0 at end of
  // stream, or -errno.
  virtual long recv_some(void* buf, std::size_t n) = 0;

  // Receives what is there now, without waiting: the count (at most n), 0 at end of stream,
  // -EAGAIN when nothing is there, or -errno. A reader that would otherwise first wait for
  // readiness tries this first: on a busy stream it saves that wait's system call.
  virtual long recv_ready(void* buf, std::size_t n) = 0;

  // Fills every byte of `iov`. Returns 0, -ECONNRESET at end of stream, or -errno.
  virtual int recv_all(std::span<const iovec> iov) = 0;

  // Blocks until the socket has bytes to read, its end of stream, or an error, for at most
  // timeout_ms (negative: no bound). Returns 0, -ETIME once the time is up, or -errno.
  virtual int wait_readable(int timeout_ms) = 0;

  // Bounds the wait of every receive that blocks (recv_some, recv_all): one that sees no byte
  // for `ms` milliseconds returns -ETIMEDOUT, so a peer that stops inside a frame is found
  // (the wait restarts with every byte that comes: a slow peer is no silent one). 0: no bound.
  // Set it before the socket is used.
  virtual void set_recv_silence_ms(int ms) = 0;
  // Both directions: set_recv_silence_ms(ms), and a send whose bytes stay unacknowledged (the
  // peer or the path is gone) or that the peer's shut window holds back for `ms` fails the
  // connection with -ETIMEDOUT (set_send_silence_ms), so a sender blocked on a silent peer
  // returns within the same bound. 0: no bound on receives, TCP's default bound on sends.
  void set_silence_ms(int ms);

  // Shuts both directions down: every call blocked on this socket returns.
  virtual void shutdown() = 0;

  virtual int fd() const = 0;
  virtual const char* backend() const = 0;

 private:
  int posted_rc_ = 0;  // the default post_send's result, for finish_send (the poster's thread)
};

// Backend, default_backend, backend_name, default_poll_us and kSendZcAuto: rig/engine/backend.h.
// Whether io_uring rings can be set up here (probed once).
bool uring_available();
// Whether the io_uring backend's rings poll their submission queues from one kernel thread
// shared by every ring of the process (IORING_SETUP_SQPOLL with ATTACH_WQ; "iou-sqp-PID" in
// /proc), so that a submission costs no system call while that thread polls: RIG_SQPOLL=1|on or
// 0|off if set, else on from 8 usable CPUs (below, the thread's spinning core is missed more
// than the calls it saves). A ring that cannot be set up so runs without. Decided once.
RIG_API bool sq_polling();

struct SendOptions {
  // A send_all of at least this many bytes goes out zero-copy (io_uring SEND_ZC; the plain
  // backend ignores it). 0: never. kSendZcAuto: the process default (set_send_zc_default, else
  // RIG_SEND_ZC_BYTES if set, else off when the peer is loopback, 127.0.0.0/8 or ::1, where the
  // kernel copies anyway, and 1 MiB otherwise).
  std::size_t zc_bytes = kSendZcAuto;
  // Where zero-copy sends are counted (zc_sends, zc_copied); null: nowhere. Must outlive the
  // socket.
  Counters* counters = nullptr;
};

// The process default for kSendZcAuto (a launcher's --send-zc-bytes); kSendZcAuto clears it.
// Call it before connections are made.
void set_send_zc_default(std::size_t bytes);
// What kSendZcAuto (or any other request) means for the connected socket `fd`.
std::size_t resolve_send_zc_bytes(int fd, std::size_t requested);

// Takes ownership of the connected socket `fd`.
std::unique_ptr<Socket> make_socket(int fd, Backend backend, SendOptions send = {});

}  // namespace rig::engine

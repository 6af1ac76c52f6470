// What a job's session sends its client on the job's connection: done reports, answers, pings
// and small payloads batched (sent together in one system call before the session's next read
// of the socket, or once kBatchBytes wait), large payloads sent at once after what is batched,
// striped over the job's data connections when the client asked for it, and the failure that
// ends the job. Order is kept: a value's bytes go out before its done report.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "job/job_stripes.h"
#include "job/objects.h"
#include "rig/engine/connection.h"
#include "rig/engine/copy_bytes.h"
#include "rig/wire/codec.h"
#include "rig/wire/limits.h"

namespace rig::agent {

class Outbox final : public Reports {
 public:
  static constexpr std::size_t kBatchBytes = 64 * 1024;
  static constexpr std::uint64_t kInlineBytes = 4096;     // payloads up to this are batched

  Outbox(engine::Connection& connection, JobStripes& stripes) : connection_(connection), stripes_(stripes) {}
  // Ends a posted send (its memory is this object's).
  ~Outbox() { end_posted(); }
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Sends a frame now, after whatever is batched.
  bool send_frame(std::span<const iovec> iov);
  // Batches a small frame (after the pending done report, if any).
  bool queue_frame(std::span<const iovec> iov);
  // Sends what is batched, and waits until the kernel took it.
  bool flush();
  // Before the session's next read: posts what is batched to leave with that read, in the same
  // call into the kernel (engine::Connection::post_send); the send before it is ended first.
  // Every other send ends the posted one first (flush, send_frame).
  bool post();
  // Ends the posted send, if any (it holds the connection's turn until then): false when it
  // failed. The session ends it before it works on a message, so that the heartbeat may ping.
  bool end_posted();

  // The answer to request `id` (0: a prepare, which nobody waits for: nothing is sent).
  bool answer(std::uint64_t id, const Answer& a);
  bool echo(const wire::Ping& ping);
  // The job's failure, its reason cut to wire::kMaxText (after what is batched; best effort).
  void failure(const std::string& why);

  // Done reports of one device with nothing between them but small bytes frames of that
  // device go out as one, of the highest value (kDone means "every value up to this one is done": PROTOCOL.md
  // 5.8): the report waits in pending_done_ until a frame of another kind or a report of
  // another device is batched, or the batch is posted or sent; so a value's bytes still go out
  // before its report, and reports of different devices and answers keep their order.
  wire::Outcome done(std::uint32_t device, std::uint64_t value) override;
  wire::Outcome bytes(std::uint32_t device, std::uint64_t value, std::uint32_t part, const PartBytes& b) override;

 private:
  engine::Connection& connection_;
  JobStripes& stripes_;
  // Batches a frame as it is (queue_frame without the pending done report first).
  bool append(std::span<const iovec> iov);
  // Batches the pending done report, if any.
  bool queue_pending_done();

  struct PendingDone {
    std::uint32_t device = 0;
    std::uint64_t value = 0;
    bool set = false;
  };
  PendingDone pending_done_;

  std::vector<std::byte> out_;     // batched small frames
  std::vector<std::byte> posted_;  // frames posted to leave with the next read, until end_posted()
  bool posting_ = false;
  engine::CopyBytes copy_bytes_;  // frames the bytes of copies to the client
};

// A kFailure frame's two pieces (header, reason) for `text`, already cut to wire::kMaxText.
struct FailureFrame {
  explicit FailureFrame(const std::string& text);
  std::string text;
  wire::Framed<wire::Failure> frame;
  std::array<iovec, 2> iov() const;
};

}  // namespace rig::agent

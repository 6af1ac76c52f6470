// One job's connection to this agent: the handshake, then a loop that answers requests and
// runs each device's handovers in order, inline on the receiving thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "objects.h"
#include "rig/engine/connection.h"
#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/socket.h"
#include "rig/engine/stripe_set.h"
#include "rig/wire/codec.h"

namespace rig::agent {

struct AgentConfig {
  std::uint32_t devices = 2;                       // simulated devices besides the host
  std::uint64_t device_budget = 1ull << 30;        // bytes a job may hold on each
  std::uint64_t host_budget = 1ull << 30;
  std::uint64_t instruction_budget = 1ull << 32;   // per launch of a words part
  std::uint32_t isolated = 0;                      // >0: this simulated device reaches no other
  engine::Backend backend = engine::default_backend();
  std::uint32_t max_stripes = 8;                   // data connections a job may join (0: none)
};

// The accounts this agent opens, id 0 the machine's host.
std::vector<wire::Account> make_accounts(const AgentConfig& config);

class Session {
 public:
  Session(int fd, const AgentConfig& config, std::string peer);
  ~Session();
  // Runs the job until it closes or fails; then everything the job held is freed. Returns
  // false when the connection was not a job's (a stripe joining one, or refused as such).
  bool run();
  const engine::Counters& counters() const { return counters_; }

 private:
  struct Side {
    bool client = false;
    std::shared_ptr<Memory> memory;  // an object's memory
    std::uint64_t offset = 0;
  };
  struct PendingPart {
    wire::Part part{};
    Side src, dst;
    // The bytes of a copy from the client's memory: received into staging (staged, of
    // staged_capacity bytes, from the session's pool) or, when nothing earlier can touch the
    // destination, straight into it (landed).
    std::unique_ptr<std::byte[]> staged;
    std::uint64_t staged_capacity = 0;
    bool landed = false;
    std::shared_ptr<ImageObject> image;
    std::shared_ptr<EntryState> entry;
    std::uint32_t first_word = 0;
  };
  struct PendingHandover {
    std::uint64_t value = 0;
    std::vector<wire::Wait> waits;
    std::vector<PendingPart> parts;
    std::vector<std::uint32_t> words;
  };
  struct DeviceState {
    DeviceState() = default;
    DeviceState(DeviceState&&) = default;  // no copy: vector growth moves
    DeviceState(const DeviceState&) = delete;
    wire::Account account{};
    std::shared_ptr<Budget> budget;
    std::uint64_t done = 0;        // last value run
    std::uint64_t received = 0;    // last value handed over
    std::deque<PendingHandover> queue;
  };

  bool handshake(std::string& why);
  // Reads n bytes of the connection's first frame, all within kHelloTimeoutMs.
  bool recv_first_frame(void* buf, std::size_t n, const char* what, std::string& why);
  // The first frame was a kJoin: attach this connection to its job as a stripe.
  bool join(const wire::FrameHeader& h, std::string& why);
  // Whether the job's stripes have all joined (then stripes_ is set; checked once they are).
  bool stripes_ready();
  // The next bytes from the client that a copy part of a handover expects: what a kBytes or a
  // kStriped must continue exactly (else `why` names both).
  struct Expected {
    std::uint32_t device;
    std::uint64_t value;
    std::uint32_t part;
    std::uint64_t got;    // packed bytes received so far
    std::uint64_t total;  // packed bytes of the part
    bool continued_by(const char* what, std::uint32_t d, std::uint64_t v, std::uint32_t pt,
                      std::uint64_t offset, std::uint64_t length, std::string& why) const;
  };
  // Where a part's packed bytes land: packed byte k at base + (k / row_bytes) * pitch + k % row_bytes.
  struct Rows {
    std::byte* base;
    std::uint64_t row_bytes;
    std::uint64_t pitch;
  };
  // Receives a kStriped announcement (its header read) and its pieces into `into`.
  bool receive_striped(const wire::FrameHeader& fh, const Expected& next, const Rows& into,
                       std::uint64_t& length, std::string& why);
  bool on_request(std::span<const std::byte> body, std::string& why);
  bool on_release(std::span<const std::byte> body, std::string& why);
  bool on_handover(std::span<const std::byte> body, std::string& why);
  bool receive_client_bytes(const wire::HandoverView& h, PendingHandover& ho, std::string& why);
  bool resolve_side(const wire::Side& side, const wire::CopyPart& c, std::uint64_t pitch,
                    Side& out, std::string& why);
  bool run_ready(std::string& why);
  bool run_handover(std::uint32_t device, PendingHandover& ho, std::string& why);
  bool run_copy(std::uint32_t device, std::uint64_t value, std::uint32_t index, PendingPart& p,
                std::string& why);
  bool run_words(PendingHandover& ho, PendingPart& p, std::string& why);
  bool answer(std::uint64_t id, wire::AnswerStatus status, std::uint64_t value,
              std::string_view text);
  // Sends a frame now, after whatever is batched (order is kept).
  bool send_frame(std::span<const iovec> iov);
  // Batches a small frame (a done report, an answer, a small payload): sent with the others in
  // one system call before the next read of the socket, or once kBatchBytes are waiting.
  bool queue_frame(std::span<const iovec> iov);
  bool flush();
  static constexpr std::size_t kBatchBytes = 64 * 1024;
  static constexpr std::uint64_t kInlineBytes = 4096;  // payloads up to this are batched
  void send_failure(const std::string& why);
  std::shared_ptr<EntryState> make_entry(ImageObject& image, std::uint32_t function,
                                         wire::AnswerStatus& status, std::uint64_t& value,
                                         std::string& text);

  AgentConfig config_;
  std::string peer_;
  int fd_;
  engine::Counters counters_;
  std::unique_ptr<engine::Connection> connection_;
  std::unique_ptr<engine::FrameReader> reader_;
  bool joined_ = false;               // this connection was a stripe: no job runs on it
  bool is_join_ = false;              // its first frame was a kJoin (joined or refused)
  std::uint64_t stripe_token_ = 0;    // the job's token in the StripeRegistry (0: no striping)
  std::unique_ptr<engine::StripeSet> stripes_;
  std::uint64_t stripe_min_bytes_ = 0;  // the client's threshold for striped copies into it
  std::vector<DeviceState> devices_;
  std::unordered_map<std::uint64_t, Object> objects_;
  std::unordered_map<std::uint32_t, std::uint64_t> objects_by_word_;  // low 32 bits of ids
  std::unordered_map<std::uint64_t, std::shared_ptr<ImageObject>> images_;
  std::vector<std::byte> out_;   // batched small frames
  std::vector<iovec> iov_;       // scratch for sends of strided rows
  std::vector<iovec> recv_iov_;  // scratch for receives into strided rows
  // Staging buffers kept for reuse (first-touch page faults and unmapping of large buffers
  // cost more than the copy itself): at most kSpareBytes in all.
  static constexpr std::uint64_t kSpareBytes = 256ull << 20;
  std::vector<std::pair<std::unique_ptr<std::byte[]>, std::uint64_t>> spare_;
  std::uint64_t spare_bytes_ = 0;
  std::unique_ptr<std::byte[]> take_staging(std::uint64_t bytes, std::uint64_t& capacity);
  void give_staging(std::unique_ptr<std::byte[]> buffer, std::uint64_t capacity);
};

}  // namespace rig::agent

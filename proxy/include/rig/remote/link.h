// A link: this process's end of its connection to one machine's agent (the page's Link.t).
// It owns the receiving thread, the only reader of the connection, which completes requests,
// lands the bytes of copies into this process's memory, and publishes done reports into the
// proxies' timeline words.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rig/export.h"

namespace rig::remote {

class Job;

/// The socket backend of a link's connections.
enum class Backend {
  kDefault,  ///< RIG_SOCKET_BACKEND=plain|uring if set, else io_uring where the kernel allows it
  kUring,    ///< io_uring
  kPlain,    ///< plain blocking system calls
};

/// The account the agent gave for a device it opened (its welcome; the page's Wire.account).
struct Account {
  /// What the device is.
  enum class Kind : std::uint32_t {
    kHost = 0,    ///< the machine's host (id 0)
    kDevice = 1,  ///< a device of the machine: simulated, or a GPU
  };
  std::uint32_t id = 0;           ///< the agent's device id; 0 is the machine's host
  Kind kind = Kind::kHost;        ///< the host or a device
  std::uint64_t budget = 0;       ///< the bytes the job may hold on it
  std::uint64_t cache_bytes = 0;  ///< its cache's size in bytes (0 where unknown)
  std::uint64_t reaches = 0;      ///< bit i: this device reaches the own memory of device i
  std::string name;               ///< "host", "sim1", "gpu1"
  std::string arch;               ///< "x86_64", "sim", "sm_90"
};

/// What a link counted over its connection and its stripes since it was made (Link::counters):
/// figures for benchmarks and tests, each read on its own (relaxed), so they order nothing.
struct LinkCounters {
  std::uint64_t bytes_sent = 0;         ///< bytes of the sends that succeeded, frame headers included
  std::uint64_t messages_sent = 0;      ///< messages sent (a striped transfer: one per stripe it used)
  std::uint64_t send_calls = 0;         ///< sends (each one or more system calls or SQEs)
  std::uint64_t bytes_staged = 0;       ///< bytes packed into staging before a send
  std::uint64_t bytes_striped_out = 0;  ///< payload bytes sent on the stripes
  std::uint64_t zc_sends = 0;           ///< sends that went out zero-copy (SEND_ZC)
  std::uint64_t zc_copied = 0;          ///< of those, the ones the kernel copied anyway
  std::uint64_t zc_fallbacks = 0;       ///< zero-copy refused (memlock, unsupported): sent by copy
  std::uint64_t staging_chunks_allocated = 0;  ///< staging pool chunks ever allocated
  std::uint64_t staging_registered_bytes = 0;  ///< of them, bytes registered as fixed buffers
  std::uint64_t bytes_received = 0;     ///< bytes received, frame headers included
  std::uint64_t messages_received = 0;  ///< frames received (a striped transfer: one per stripe it used)
  std::uint64_t reads = 0;              ///< reads of the socket into the frame buffer
  std::uint64_t payload_bytes_copied = 0;  ///< payload bytes copied out of the header buffer
  std::uint64_t payload_bytes_direct = 0;  ///< payload bytes received straight into place
  std::uint64_t bytes_striped_in = 0;      ///< payload bytes received on the stripes
  std::uint64_t spin_reads = 0;  ///< polling mode: tries that found no byte (each a system call)
  /// Raises of a timeline word by the receiving thread: one per run of done reports of one
  /// device that came one right after another, so done reports / word_publishes is their batch.
  std::uint64_t word_publishes = 0;
};

/// Where submit gets the memory it packs strided rows into (the connection's staging pool by
/// default). A test or an embedder may supply its own, used per submit instead of the pool;
/// returning null makes submit answer "out of memory for a hand-over".
struct StagingAllocator {
  void* (*allocate)(std::size_t bytes) = nullptr;  ///< `bytes` bytes for one submit, or null
  void (*release)(void* p) = nullptr;              ///< gives back what allocate gave, once sent
};

/// How Job::connect makes a link: every field has a default a runtime may keep.
struct LinkOptions {
  /// The socket backend of the link's connections (kDefault: RIG_SOCKET_BACKEND, else io_uring
  /// where the kernel allows it).
  Backend backend = Backend::kDefault;
  /// Keepalive: after keepalive_ms without a byte from the agent, the link pings it (the agent
  /// echoes); after silence_ms without a byte, the job fails with "the agent sent nothing for
  /// N ms". This finds a hung or unreachable agent within silence_ms + keepalive_ms. An agent
  /// busy with one message for long (a launch) pings on its own every 250 ms: keep silence_ms
  /// well above 500 ms.
  int keepalive_ms = 1000;
  int silence_ms = 30000;  ///< see keepalive_ms
  /// Polling mode: the receiving thread asks for bytes without waiting for up to poll_us
  /// microseconds before it sleeps: lower latency for a core's worth of CPU while it spins.
  /// kAuto: RIG_POLL_US, else 0 (off). See docs/TUNING.md.
  int poll_us = kAuto;
  /// Where submit packs strided rows: unset, the connection's staging pool (reused chunks,
  /// registered as fixed buffers within RLIMIT_MEMLOCK); set, this allocator, per submit.
  StagingAllocator staging{};
  /// Sends of at least this many bytes go zero-copy (io_uring SEND_ZC, returning after the
  /// kernel's notification). kSendZcAuto: RIG_SEND_ZC_BYTES if set, else off when the agent is
  /// on loopback and 1 MiB otherwise; 0: never. See docs/TUNING.md. Striped pieces follow it
  /// too (io_uring backend).
  std::size_t send_zc_bytes = kSendZcAuto;
  /// send_zc_bytes' "decide from the peer" value.
  static constexpr std::size_t kSendZcAuto = SIZE_MAX;
  /// Striping: copies of at least stripe_min_bytes bytes from or into this process's memory
  /// cross over `stripes` extra data connections (wire kStriped), cut in pieces of
  /// max(64 KiB, 4 MiB / stripes) bytes, every stripe's transfer in flight at once. kAuto: none
  /// when the agent is on loopback (one machine's cores carry both ends: nothing to gain),
  /// kDefaultStripes otherwise; the environment's RIG_STRIPES=N overrides kAuto. The agent may
  /// grant fewer (its --max-stripes). docs/TUNING.md says how to choose both on a real NIC.
  static constexpr int kAuto = -1;
  static constexpr int kDefaultStripes = 4;  ///< the stripes kAuto asks for off loopback
  int stripes = kAuto;                        ///< extra data connections asked for (see above)
  std::uint64_t stripe_min_bytes = 1u << 20;  ///< copies of fewer bytes stay on the job's connection
  /// The secret this job and its agent prove to each other that they share (wire/PROTOCOL.md 6.1):
  /// the file that holds it (readable by its owner only, at least 32 bytes); empty: the
  /// environment's RIG_SECRET_FILE, else RIG_SECRET. With none, only an agent that runs open
  /// (on loopback, without a secret) is accepted; with one, only an agent that proves it.
  std::string secret_file;
  /// Pins the agent's name (rig-agent --name; its host's name by default): set, the job is
  /// refused unless the agent's challenge gives this name. Both proofs cover the name either
  /// way; pin it where agents share a secret, so that no one can send the job to another of
  /// them (wire/PROTOCOL.md 6.1). Empty: any name.
  std::string agent_name;
};

/// A link: made by Job::connect, it lives as long as its job. Its calls here are what a
/// runtime reads of it; the proxies drive it through the library's internals (the receiving
/// thread, the requests, the proxies' registry: proxy/src/link_core.h).
class RIG_API Link {
 public:
  virtual ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  /// The job the link belongs to.
  Job& job() const { return job_; }
  /// The endpoint given to Job::connect ("HOST:PORT", "[V6]:PORT").
  const std::string& endpoint() const { return endpoint_; }
  /// The address the job's connection reached, numeric ("127.0.0.1:7300", "[::1]:7300"): the
  /// first of the endpoint's addresses that accepted. Its stripes connect to it too.
  const std::string& address() const { return address_; }
  /// The agent's name, as its challenge gave it and its proof confirmed (LinkOptions::agent_name).
  const std::string& agent_name() const { return agent_name_; }
  /// Where each stripe's connection went (its peer's address), in stripe order.
  const std::vector<std::string>& stripe_addresses() const { return stripe_addresses_; }
  /// The accounts of the devices the agent opened, as its welcome gave them: the host first
  /// (id 0), then each device by id.
  const std::vector<Account>& accounts() const { return accounts_; }
  /// The account of the agent's device `id`, or null if the agent opened none with that id.
  const Account* account(std::uint32_t id) const;
  /// The link's traffic counters now (messages and bytes each way, zero-copy sends, staging
  /// use): the sending threads and the receiving thread count as they go, and any thread may
  /// take this copy at any time; each figure is read on its own (relaxed).
  LinkCounters counters() const;
  /// The socket backend of the job's connection: "io_uring" or "plain".
  const char* backend() const;
  /// The data connections granted (0: no striping).
  std::size_t stripes() const;
  /// The allocator submit packs strided rows into (LinkOptions::staging; unset: the pool's).
  const StagingAllocator& staging() const { return staging_; }

  /// Whether the agent answers status queries (it accepted the status feature in its welcome;
  /// an agent older than the query does not, and is never sent one).
  bool agent_status_supported() const;
  /// Asks the agent for its own figures (wire kStatusQuery, answered in order with the job's
  /// other messages) and returns its JSON text: version, uptime, jobs, bytes in and out, this
  /// job's connection counters, and every agent thread's CPU time, context switches and system
  /// calls (wire/PROTOCOL.md 5.18). Throws std::runtime_error when the agent does not answer
  /// status queries (nothing is sent then), edge::Fault once the job is over; an answer that
  /// breaks the protocol (too long, another id) fails the job with the reason.
  std::string agent_status();

  /// A new id of the job, naming an agent object (the page's Link.fresh). Ids carry the link's
  /// number in their top 16 bits, so owns() tells without a lookup whether an id is this link's.
  std::uint64_t fresh();
  /// Whether `id` was made by this link's fresh().
  bool owns(std::uint64_t id) const { return (id >> 48) == tag_; }

  /// @cond INTERNAL
 private:
  friend class LinkCore;  // the one class that derives: its constructor is private, so no other can
  /// Takes a link tag (given back by the destructor).
  Link(Job& job, std::string endpoint, const StagingAllocator& staging);

  Job& job_;
  const std::uint64_t tag_;  ///< taken in the constructor, given back in the destructor
  std::string endpoint_;
  std::string address_;
  std::string agent_name_;
  std::vector<std::string> stripe_addresses_;
  StagingAllocator staging_;
  std::vector<Account> accounts_;
  std::uint32_t features_ = 0;  ///< accepted by the agent's welcome; set before the receiving thread starts
  /// fresh ids: relaxed, only uniqueness matters.
  alignas(64) std::atomic<std::uint64_t> next_id_{1};
  /// @endcond
};

}  // namespace rig::remote

// A job: this process and one agent per remote machine. It fails as a whole, with one root
// cause, and closes as a whole.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rig/export.h"
#include "rig/remote/link.h"

namespace rig::remote {

/// A job (the page's Link section): this process and the agents it connected to. It fails as a
/// whole with one root cause, and closes as a whole; its links live as long as it does.
class RIG_API Job : public std::enable_shared_from_this<Job> {
 public:
  /// A new job, with no link yet.
  static std::shared_ptr<Job> create();
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  /// Connects to the agent at "HOST:PORT", does the handshake and learns the accounts of the
  /// devices it opened. The link lives as long as the job. Throws std::system_error (connect),
  /// std::runtime_error (handshake), std::invalid_argument (endpoint, or a RIG_* variable with a
  /// value it does not take, named: docs/ENVIRONMENT.md), edge::Fault (job over).
  Link& connect(const std::string& endpoint, const LinkOptions& options = {});

  /// Begins the close (the page's Link.close): calls that ask an agent raise
  /// Fault("the job is closed"), submit fails with that text, each agent is told to close and
  /// frees what the job held, and the receiving threads end. Idempotent.
  void close();

  /// Fails the job with `why` as its root cause, unless it failed already or its close began:
  /// the first cause wins. Shuts every link's connections down and wakes every blocked call.
  /// Once it returns, the job has failed or its close began, so fault_text() is not "" (also
  /// for a caller whose cause lost to another thread's, written meanwhile).
  void fail(const std::string& why);
  /// fail() with the root cause joined from `pieces`, for paths that must not throw (an
  /// exception barrier): with no memory for the text, the root cause is "out of memory". Only
  /// the call that wins builds the text.
  void fail_noexcept(std::initializer_list<std::string_view> pieces) noexcept;

  /// Whether the job has failed (fault_text() is then its root cause).
  bool failed() const { return (state_.load(std::memory_order_acquire) & kFailed) != 0; }
  /// Whether the job's close has begun.
  bool closing() const { return (state_.load(std::memory_order_acquire) & kClosing) != 0; }
  /// Whether calls must stop: failed or closing.
  bool over() const { return state_.load(std::memory_order_acquire) != 0; }
  /// The job's root cause if it failed, else "the job is closed" if its close began, else "".
  std::string fault_text() const;
  /// Throws edge::Fault(fault_text()) if the job is over.
  void check() const;

  /// The job's links, in the order connect made them.
  const std::vector<std::unique_ptr<Link>>& links() const { return links_; }

  /// @cond INTERNAL
 private:
  friend class LinkCore;  // its connect adds the links (proxy/src/link_core.h)
  Job() = default;
  static constexpr std::uint32_t kFailed = 1;
  static constexpr std::uint32_t kClosing = 2;

  /// kFailed | kClosing. The release that sets kFailed publishes root_cause_ (written before it
  /// by the one thread that won claimed_); readers acquire-load state_ before reading it.
  std::atomic<std::uint32_t> state_{0};
  std::atomic<bool> claimed_{false};  ///< the first fail() wins the right to write root_cause_
  std::string root_cause_;

  std::mutex links_mu_;  ///< cold path only: connect, close, fail
  std::vector<std::unique_ptr<Link>> links_;
  /// @endcond
};

}  // namespace rig::remote

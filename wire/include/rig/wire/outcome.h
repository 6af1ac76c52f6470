// The internal error model: a call's outcome is ok, or an errno and a reason.
//
// The errno (negative, as the kernel's and io_uring's) classifies the failure: -EPROTO a peer
// that broke the protocol, kPeerEnded a peer that ended the job itself and said why, -ENOMEM no
// memory, any other a connection lost or a bound passed. The reason is the failure's own words;
// the context ("link to agent A: ", "protocol violation by the agent: ") is added once, by the
// caller that classifies the outcome. Exceptions only at the C++ API's edge, codes at the C edge.
// It lives in wire, the layer every other one builds on, so that the decoders use it too.
#pragma once

#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace rig::wire {

// The errno of an outcome whose peer ended the job with its own reason (a kFailure message).
inline constexpr int kPeerEnded = -ECONNABORTED;
// The errno of a stream that the peer ended cleanly, between frames.
inline constexpr int kStreamEnded = -ENODATA;

class [[nodiscard]] Outcome {
 public:
  Outcome() = default;  // ok (allocates nothing)
  static Outcome failed(int err, std::string why) {
    assert(err < 0 && "an outcome's errno is negative");
    Outcome o;
    o.err_ = err < 0 ? err : -EIO;  // a failure, whatever number it was given
    o.why_ = std::move(why);
    return o;
  }
  bool ok() const { return err_ == 0; }
  int err() const { return err_; }
  const std::string& why() const { return why_; }

 private:
  int err_ = 0;
  std::string why_;
};

// A value, or the outcome that kept it from being made (absl's StatusOr): what a call that
// returns something gives instead of throwing. ok() when it holds the value.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: a value converts, as StatusOr's
  Result(Outcome failure) : outcome_(std::move(failure)) {  // NOLINT: RIG_RETURN_IF_FAILED's
    assert(!outcome_.ok() && "a result without its value is a failed outcome");
    if (outcome_.ok()) outcome_ = Outcome::failed(-EIO, "a result was made of an ok outcome, without its value");
  }
  bool ok() const { return outcome_.ok(); }
  const Outcome& outcome() const { return outcome_; }
  // The value. Reading it from a failure is a bug: it stops the process with the failure's
  // reason (as absl's value() without exceptions), never reads what was not made.
  T& value() & { return checked(), *value_; }
  const T& value() const& { return checked(), *value_; }
  T&& value() && { return checked(), std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void checked() const {
    if (outcome_.ok() && value_.has_value()) return;
    std::fprintf(stderr, "rig: a failed result's value was read (%d): %s\n", outcome_.err(), outcome_.why().c_str());
    std::abort();
  }
  Outcome outcome_;
  std::optional<T> value_;
};

// A peer that broke the protocol: -EPROTO and what it did; the caller that classifies the
// outcome names the peer.
inline Outcome violation(std::string why) { return Outcome::failed(-EPROTO, std::move(why)); }

// For a caller that keeps the reason as a string (the tests, the benches): true when ok, else
// false with `why` set to the reason.
inline bool passed(const Outcome& o, std::string& why) {
  if (!o.ok()) why = o.why();
  return o.ok();
}

}  // namespace rig::wire

// Returns `expr`'s outcome from the enclosing function when it failed (absl's RETURN_IF_ERROR);
// `expr` is an Outcome or a Result's outcome().
#define RIG_RETURN_IF_FAILED(expr)                                  \
  do {                                                              \
    if (::rig::wire::Outcome rig_failed_ = (expr); !rig_failed_.ok()) \
      return rig_failed_;                                           \
  } while (0)

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
    o.err_ = err;
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

// Returns `expr`'s outcome from the enclosing function when it failed (absl's RETURN_IF_ERROR).
#define RIG_RETURN_IF_FAILED(expr)                                  \
  do {                                                              \
    if (::rig::wire::Outcome rig_failed_ = (expr); !rig_failed_.ok()) \
      return rig_failed_;                                           \
  } while (0)

// A device the agent opened, as one job uses it: the seam between the executor, which runs each
// device's handovers in order, and what the device is (the machine's host, a simulated device,
// a GPU). One instance per job and device: it holds that job's budget on the device. (A backend:
// rig::remote::Device and abi::Device are the client's names for a device.)
//
// The executor calls a device from the job's session thread only, in the handover's order:
// copies are *issued* in order and may run asynchronously (a GPU's stream), and finish(v) closes
// the work of value v. A synchronous device has done its work when a call returns and reports
// every value done at once; an asynchronous one reports kLater and names the value in a later
// poll(), which the executor calls from its loop without blocking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devices/memory.h"
#include "devices/wake.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"
#include "rig/wire/outcome.h"

namespace rig::agent {

class GivenUpWork;

// Rows of a copy on one side: row r starts at byte offset + r * pitch of memory.
struct Place {
  Memory* memory = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t pitch = 0;  // == row_bytes for rows end to end
};

// rows rows of row_bytes bytes; packed, they lie end to end (rows * row_bytes bytes).
struct Shape {
  std::uint64_t rows = 1;
  std::uint64_t row_bytes = 0;
};

// A device's failure in its own words: -EIO (the executor names the device: device_fault).
inline wire::Outcome device_error(std::string why) { return wire::Outcome::failed(-EIO, std::move(why)); }

enum class Completion {
  kDone,   // the value's work is done: report it now
  kLater,  // a later poll() names the value once its work is done
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Facts: the account the agent announces for this device (id, kind, name, arch, budget,
  // cache bytes, which devices' memory it reaches).
  const wire::Account& account() const { return account_; }
  std::uint32_t id() const { return account_.id; }
  // Whether words parts (rig.program code) run here: only on the machine's host.
  bool runs_words() const { return account_.kind == static_cast<std::uint32_t>(wire::AccountKind::kHost); }

  // Memory. allocate: `bytes` (> 0) of this device's memory charged to the job's budget, or
  // nullptr when the budget or the device has no room (the page's None). map_peer: this
  // device's view of `memory` (an allocation of a device of this agent that the accounts say
  // this device reaches), or nullptr if the device refuses.
  virtual std::shared_ptr<Memory> allocate(std::uint64_t bytes) = 0;
  virtual std::shared_ptr<Memory> map_peer(const std::shared_ptr<Memory>& memory) = 0;
  // What the job may still allocate here.
  virtual std::uint64_t budget_left() const = 0;
  // Why the last allocate(bytes) answered nullptr, for the alloc's answer. The default: the
  // budget's room.
  virtual std::string no_room(std::uint64_t bytes) const {
    (void)bytes;
    return "no room: " + std::to_string(budget_left()) + " bytes left of the budget";
  }

  // Copies, issued in the handover's order; -EIO with the device's own words if it faulted,
  // which fails the job (the executor names the device: device_fault). Every place lies within its memory (the executor checked).
  // copy_in: packed bytes at host address `packed` (received from the client, in staging) into
  // the rows at dst. copy_out: the rows at src, packed, to host address `packed` (to be sent to
  // the client once the device is idle()). copy: rows to rows between memories of this agent's
  // devices, this device's own or a peer's it maps.
  virtual wire::Outcome copy_in(const Place& dst, const std::byte* packed, Shape shape) = 0;
  virtual wire::Outcome copy_out(std::byte* packed, const Place& src, Shape shape) = 0;
  virtual wire::Outcome copy(const Place& dst, const Place& src, Shape shape) = 0;

  // Completion. finish(v): everything issued since the last finish is value v's work. idle():
  // no issued work is still running (host steps, such as sending a copy's bytes or running
  // words, wait for it). poll(): appends, in order, the values whose work completed since the
  // last poll (those finish answered kLater); -EIO if the device faulted.
  virtual Completion finish(std::uint64_t value) = 0;
  virtual bool idle() const = 0;
  virtual wire::Outcome poll(std::vector<std::uint64_t>& done) = 0;
  // Waits until no issued work runs: the job ended, and the memory and staging that work uses
  // are about to be freed. The only call that may block.
  virtual void quiesce() = 0;
  // After quiesce(): whether it gave up issued work rather than wait for it (a GPU whose stream
  // waits on a lost GPU's work, which may never end): that work may still run until the
  // device's context goes, so the pending handovers, with the staging and memory they name,
  // are handed to keep(), which holds them until then. The default: never.
  virtual bool gave_up() const { return false; }
  virtual void keep(std::shared_ptr<GivenUpWork> work) { (void)work; }
  // Called before the session waits for the client while values of this device are not done:
  // a device whose work completes in the background (a GPU's stream) signals `wake` once the
  // work issued so far has completed, so the session's next poll() sees it without waiting
  // for the idle watch's tick. Never blocks; asking twice for the same work may signal once. A
  // failure is poll()'s to report. The default, for devices whose poll() sees completed work
  // at once: nothing.
  virtual void arm_wake(const std::shared_ptr<Wake>& wake) { (void)wake; }

  // Marks, so that a large copy out goes range by range (each range sent once its copy out
  // completed, while the next ones are copied). marks(): whether the device keeps them (the
  // default: no; its copies out are sent once it is idle()). mark(token): a mark behind the work
  // issued so far; -EIO if the device faulted. passed(token): that work completed
  // (a failure is poll()'s to report: until then, false). A device that keeps marks signals the
  // wake armed by arm_wake at each mark not passed, as well as behind its work.
  virtual bool marks() const { return false; }
  virtual wire::Outcome mark(std::uint64_t& token) {
    (void)token;
    return device_error("this device keeps no marks");
  }
  virtual bool passed(std::uint64_t token) {
    (void)token;
    return idle();
  }

  // Waits between devices. waits_on(other): whether this device can order the work it issues
  // next after a value that `other` (another device of the job) finished but has not reported
  // done, on its own, without the executor holding the handover until that report. wait_on:
  // does so for `value` (finished on `other`, not yet reported); after it, idle() is false until
  // that value's work completed too. A failure is poll()'s to report. The default: no such
  // waits (the executor holds the handover).
  virtual bool waits_on(const DeviceBackend& other) const {
    (void)other;
    return false;
  }
  virtual void wait_on(DeviceBackend& other, std::uint64_t value) {
    (void)other;
    (void)value;
  }

 protected:
  explicit DeviceBackend(const wire::Account& account) : account_(account) {}

 private:
  wire::Account account_;
};

// How a device's failure names it in the job's fault, once: "device N (name) faulted: " before
// the device's words, its errno kept; an ok outcome as it is.
wire::Outcome device_fault(const DeviceBackend& d, const wire::Outcome& o);

}  // namespace rig::agent

// One GPU as a job's device (written against the CUDA driver API; not yet run on a GPU). Its
// copies are issued on a stream of its own as asynchronous copies (2D for strided rows) and a
// value is done when an event recorded after its work has completed, which poll() learns from
// the executor's loop with cuEventQuery: nothing here blocks the session's thread but
// quiesce(), which gives up a stream that waits on the work of another GPU that is lost (and
// loses its own GPU with it). A failed call fails the job with the driver's error name and message; a sticky
// one loses the GPU for every job that uses it. A job uses the GPU from its first call that
// reaches the driver (an alloc, a copy, a value finished or waited on here): only then does it
// hold the GPU's context and make its streams, so a job that never did is not failed when the
// GPU is lost, and does not keep a lost GPU from reopening. (A value finished with nothing ever
// issued here is done at once, without taking the GPU.)
#pragma once

#include <cuda.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "devices/cuda/cuda_gpus.h"
#include "devices/device.h"

namespace rig::agent {

class CudaMemory;

class CudaDevice final : public DeviceBackend {
 public:
  // GPU `ordinal` of `gpus` as device `id` for one job: its budget min(free memory now, cap);
  // `reaches` as the accounts announce it. A GPU that cannot be opened (lost, a stream refused)
  // still opens, and fails the job at its first use of it, saying why.
  static std::unique_ptr<CudaDevice> open(const CudaGpus& gpus, int ordinal, std::uint32_t id,
                                          std::uint64_t cap, std::uint64_t reaches);
  ~CudaDevice() override;

  std::shared_ptr<Memory> allocate(std::uint64_t bytes) override;
  std::shared_ptr<Memory> map_peer(const std::shared_ptr<Memory>& memory) override;
  std::uint64_t budget_left() const override { return budget_->left; }

  wire::Outcome copy_in(const Place& dst, const std::byte* packed, Shape shape) override;
  wire::Outcome copy_out(std::byte* packed, const Place& src, Shape shape) override;
  wire::Outcome copy(const Place& dst, const Place& src, Shape shape) override;

  Completion finish(std::uint64_t value) override;
  bool idle() const override;
  wire::Outcome poll(std::vector<std::uint64_t>& done) override;
  void quiesce() override;
  bool gave_up() const override { return given_up_; }
  // Holds the work until this GPU's context is destroyed (CudaGpus::keep_until_destroyed), less
  // what goes with that context (GivenUpWork::leave_to).
  void keep(std::shared_ptr<GivenUpWork> work) override;
  // A host function queued (on a stream of its own) behind the work issued so far signals the
  // wake; it makes no CUDA call, as the driver requires. Nothing when no work was issued since
  // the last one.
  void arm_wake(const std::shared_ptr<Wake>& wake) override;
  // Another GPU's finished value: the stream waits on that value's event (cuStreamWaitEvent;
  // the event may be another context's), and tail_ is recorded after the wait, so idle() covers
  // it. A RAM device's finished work is done already: nothing to wait for.
  bool waits_on(const DeviceBackend& other) const override;
  void wait_on(DeviceBackend& other, std::uint64_t value) override;
  // A mark is an event recorded on the copy stream (cuEventQuery says when it passed); arm_wake
  // queues a host function behind each mark not yet armed, so the session wakes as each range
  // of a copy out completes.
  bool marks() const override { return true; }
  wire::Outcome mark(std::uint64_t& token) override;
  bool passed(std::uint64_t token) override;

 private:
  CudaDevice(const wire::Account& account, const CudaGpus& gpus, int ordinal);
  // The job's first use of the GPU: holds its context and makes the streams and events (when
  // that fails, its failure, and the job failed from then on).
  wire::Outcome take();
  // Destroys the streams and events and lets go of the GPU (the destructor, a failed take).
  void let_go();
  // One side of a copy: a host address (RAM the GPU reaches by DMA) or a unified address of a
  // GPU's memory, with its pitch.
  struct End {
    bool host = false;
    std::uintptr_t address = 0;
    std::uint64_t pitch = 0;
    const CudaMemory* memory = nullptr;  // a GPU's memory: the allocation (its zeroing event)
  };
  wire::Outcome end_of(const Place& p, End& e) const;
  // Issues shape's rows from src to dst on the stream and records tail_ after them.
  wire::Outcome issue(const End& dst, const End& src, Shape shape);
  // Makes the GPU's context current on this thread, taking the GPU at the job's first use;
  // fails if the GPU is lost or a failure was seen earlier where it could not be reported.
  wire::Outcome usable();
  // The same for a GPU already taken (idle() and the like, which never take it).
  wire::Outcome current() const;
  // The call's error (-EIO, the driver's words) unless rc is CUDA_SUCCESS; a sticky error loses
  // the GPU.
  wire::Outcome check(const char* call, CUresult rc) const;
  // Where a failure cannot be reported (finish, idle, arm_wake, wait_on): keeps it for the next
  // poll(), which fails the job; whether `o` was ok.
  bool keep_fault(const wire::Outcome& o) const;
  // An event (a spare one, or new) recorded on the stream behind the work issued so far.
  wire::Outcome record_event(CUevent& e);
  // The event recorded after `value`'s work, or nullptr once its completion was polled.
  CUevent event_of(std::uint64_t value) const;
  // Orders the stream after the zeroing of an end in another GPU's memory (its own stream
  // zeroed it, unordered with this one).
  wire::Outcome wait_zeroed(const End& e);
  // Issues shape's rows one copy each (pitches a 2D copy does not take).
  wire::Outcome issue_rows(const End& dst, const End& src, Shape shape);

  const CudaDriver& driver_;
  const CudaGpus& gpus_;
  const int ordinal_;
  std::shared_ptr<CudaGpus::Hold> gpu_;  // from the job's first use (take) on
  std::shared_ptr<Budget> budget_;
  CUstream stream_ = nullptr;
  CUevent tail_ = nullptr;  // recorded after every issued copy: idle() queries it
  struct Pending {
    std::uint64_t value;
    CUevent event;  // recorded after the value's work
  };
  std::deque<Pending> pending_;
  struct Mark {
    std::uint64_t token;
    CUevent event;       // recorded after the work issued before the mark
    bool armed = false;  // a host function that signals the wake waits on it
  };
  std::deque<Mark> marks_;  // not yet seen passed, in the stream's order
  std::uint64_t last_mark_ = 0;
  std::vector<CUevent> spare_events_;
  // A failure seen where it could not be reported (finish, idle): the next poll() reports it.
  mutable wire::Outcome fault_;
  // Why the GPU could not say its free memory at open: the job's first use fails with it.
  wire::Outcome open_fault_;
  bool issued_since_arm_ = false;  // stream work queued after the last host function that wakes
  CUstream wake_stream_ = nullptr;  // where the host functions wait, off the copy stream
  CUevent wake_event_ = nullptr;    // recorded on the copy stream for wake_stream_ to wait on
  std::shared_ptr<Wake> wake_;      // the last armed wake: its host functions point to it
  std::uint64_t waited_gpus_ = 0;   // bit j: the stream waited on GPU j's work (wait_on, wait_zeroed)
  bool given_up_ = false;           // quiesce() gave the streams up (give_up)

  // The other GPUs the stream waited on (an event of another GPU's value or zeroing, directly
  // or through that GPU's own waits): quiesce() waits for the streams by polling them
  // (wait_unless_lost), and gives them up once one of these was lost for the grace.
  std::uint64_t other_waited_gpus() const noexcept;
  // quiesce() gave the stream up: this GPU is lost too (its memory goes with the context, which
  // drops the stream's work), and the last armed wake is kept until the context is destroyed,
  // since a host function queued behind the stream may run until then.
  void give_up(int lost) noexcept;
};

}  // namespace rig::agent

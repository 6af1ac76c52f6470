// CudaDevice's completion side: events recorded behind a value's work, what poll and arm_wake
// report as done, marks, and the order between devices (wait_on). The device itself, its memory
// and its copies: device_cuda.cc.
#include <cassert>
#include <string>
#include <utility>

#include "devices/cuda/device_cuda.h"
#include "devices/ram_device.h"

namespace rig::agent {
namespace {

// Runs on a driver thread once the work it was queued behind completed: signals the job's wake
// (which the device holds until its streams are synchronised). No CUDA call, no exception.
void CUDA_CB signal_wake(void* data) { static_cast<const Wake*>(data)->signal(); }

}  // namespace

wire::Outcome CudaDevice::record_event(CUevent& e) {
  if (!spare_events_.empty()) {
    e = spare_events_.back();
    spare_events_.pop_back();
  } else {
    RIG_RETURN_IF_FAILED(check("cuEventCreate", driver_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING)));
  }
  const wire::Outcome recorded = check("cuEventRecord", driver_.cuEventRecord(e, stream_));
  if (!recorded.ok()) spare_events_.push_back(std::exchange(e, nullptr));
  return recorded;
}

Completion CudaDevice::finish(std::uint64_t value) {
  // Never used and nothing wrong: nothing was issued, so the value is done (and the job does
  // not hold the GPU for it).
  if (gpu_ == nullptr && fault_.ok() && open_fault_.ok()) return Completion::kDone;
  // Otherwise always later: a failure here is reported by the next poll(), which fails the job
  // (the value never completes).
  CUevent e = nullptr;
  if (!keep_fault(usable()) || !keep_fault(record_event(e))) return Completion::kLater;
  pending_.push_back({value, e});
  issued_since_arm_ = true;
  return Completion::kLater;
}

bool CudaDevice::idle() const {
  if (gpu_ == nullptr) return fault_.ok();  // not in use: no work (or failed: poll() says why)
  if (!keep_fault(current())) return false;  // poll() reports the failure, which fails the job
  const CUresult rc = driver_.cuEventQuery(tail_);
  if (rc == CUDA_SUCCESS) return true;
  if (rc != CUDA_ERROR_NOT_READY) keep_fault(check("cuEventQuery", rc));
  return false;
}

wire::Outcome CudaDevice::poll(std::vector<std::uint64_t>& done) {
  // Nothing issued and nothing wrong: no driver call. A GPU that another job lost is reported
  // here too (to a job that used it), or a handover blocked on idle() would wait for it forever.
  if (pending_.empty() && fault_.ok()) return gpu_ == nullptr ? wire::Outcome() : gpu_->health();
  RIG_RETURN_IF_FAILED(usable());
  while (!pending_.empty()) {
    const CUresult rc = driver_.cuEventQuery(pending_.front().event);
    if (rc == CUDA_ERROR_NOT_READY) break;
    RIG_RETURN_IF_FAILED(check("cuEventQuery", rc));
    done.push_back(pending_.front().value);
    spare_events_.push_back(pending_.front().event);
    pending_.pop_front();
  }
  return {};
}

void CudaDevice::arm_wake(const std::shared_ptr<Wake>& wake) {
  if (!issued_since_arm_) return;
  if (!keep_fault(usable())) return;  // the next poll() reports it
  // The host function waits on a stream of its own for what the copy stream issued so far, so
  // the copy stream's later work does not wait for it (a host function blocks the work queued
  // after it on its stream). The device holds the wake until quiesce() synchronised both
  // streams: the function's pointer stays good, and after an error in the context, when the
  // driver never calls it, nothing leaks.
  wake_ = wake;
  void* const signal_to = const_cast<Wake*>(wake_.get());
  // A host function queued on the wake stream behind `e` signals the wake.
  const auto wake_after = [&](CUevent e) {
    return keep_fault(check("cuStreamWaitEvent", driver_.cuStreamWaitEvent(wake_stream_, e, 0))) &&
           keep_fault(check("cuLaunchHostFunc", driver_.cuLaunchHostFunc(wake_stream_, signal_wake, signal_to)));
  };
  for (Mark& m : marks_) {
    if (m.armed) continue;
    if (!wake_after(m.event)) return;
    m.armed = true;
  }
  if (!keep_fault(check("cuEventRecord", driver_.cuEventRecord(wake_event_, stream_))) || !wake_after(wake_event_)) {
    return;
  }
  issued_since_arm_ = false;
}

wire::Outcome CudaDevice::mark(std::uint64_t& token) {
  RIG_RETURN_IF_FAILED(usable());
  CUevent e = nullptr;
  RIG_RETURN_IF_FAILED(record_event(e));
  marks_.push_back({++last_mark_, e});
  issued_since_arm_ = true;  // a wake armed before it would not wake for it
  token = last_mark_;
  return {};
}

bool CudaDevice::passed(std::uint64_t token) {
  assert(token <= last_mark_);
  while (!marks_.empty() && marks_.front().token <= token) {
    if (!keep_fault(current())) return false;  // poll() reports the failure, which fails the job
    const CUresult rc = driver_.cuEventQuery(marks_.front().event);
    if (rc == CUDA_ERROR_NOT_READY) return false;
    if (!keep_fault(check("cuEventQuery", rc))) return false;
    spare_events_.push_back(marks_.front().event);
    marks_.pop_front();
  }
  return true;
}

bool CudaDevice::waits_on(const DeviceBackend& other) const {
  return dynamic_cast<const CudaDevice*>(&other) != nullptr || dynamic_cast<const RamDevice*>(&other) != nullptr;
}

CUevent CudaDevice::event_of(std::uint64_t value) const {
  for (const Pending& p : pending_) {
    if (p.value == value) return p.event;
  }
  return nullptr;
}

void CudaDevice::wait_on(DeviceBackend& other, std::uint64_t value) {
  assert(waits_on(other));
  const auto* gpu = dynamic_cast<const CudaDevice*>(&other);
  if (gpu != nullptr && !gpu->fault_.ok()) {
    // Its finish may have failed before recording the value's event: nothing to wait on, and
    // work issued here must not pass it. The next poll() fails the job.
    fault_ = gpu->fault_;
    return;
  }
  const CUevent e = gpu != nullptr ? gpu->event_of(value) : nullptr;
  if (e == nullptr) return;  // RAM's work, or a value whose completion was polled: done
  // A failure: the next poll() reports it, which fails the job.
  if (!keep_fault(usable()) || !keep_fault(check("cuStreamWaitEvent", driver_.cuStreamWaitEvent(stream_, e, 0))) ||
      !keep_fault(check("cuEventRecord", driver_.cuEventRecord(tail_, stream_)))) {
    return;
  }
  // quiesce() gives the stream up if that GPU, or one it waited on in turn, is lost.
  waited_gpus_ |= 1ull << gpu->ordinal_ | gpu->waited_gpus_;
  issued_since_arm_ = true;  // tail_ moved: a wake armed before it would come too early
}

std::uint64_t CudaDevice::other_waited_gpus() const noexcept {
  // Not this GPU's own loss: a broken context fails the query itself, and one lost by another
  // job's give-up may still run this stream's work to its end.
  return waited_gpus_ & ~(1ull << ordinal_);
}

}  // namespace rig::agent

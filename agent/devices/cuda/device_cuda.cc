#include "devices/cuda/device_cuda.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

#include "devices/cuda/cuda_memory.h"
#include "devices/cuda/cuda_wait.h"
#include "exec/given_up_work.h"

namespace rig::agent {
namespace {

// The widest pitch a 2D copy takes (CUDA_MEMCPY2D's pitches are checked against the device's
// maximum pitch, 2^31 - 1 bytes or more on every GPU of CUDA 12): wider rows go one by one.
constexpr std::uint64_t kMaxPitch = std::numeric_limits<std::int32_t>::max();

wire::Account facts(const CudaGpus::Gpu& g, std::uint32_t id, std::uint64_t budget, std::uint64_t reaches) {
  wire::Account a{};
  a.id = id;
  a.kind = static_cast<std::uint32_t>(wire::AccountKind::kDevice);
  a.budget = budget;
  a.cache_bytes = g.cache_bytes;
  a.reaches = reaches;
  wire::set_fixed_string(a.name, g.name);
  wire::set_fixed_string(a.arch, g.arch);
  return a;
}

}  // namespace

std::unique_ptr<CudaDevice> CudaDevice::open(const CudaGpus& gpus, int ordinal, std::uint32_t id,
                                             std::uint64_t cap, std::uint64_t reaches) {
  // The free memory, read through a hold that ends here: the job holds the GPU only from its
  // first use (take).
  std::size_t free = 0, total = 0;
  CUresult info = CUDA_ERROR_INVALID_CONTEXT;
  const char* call = "cuCtxSetCurrent";
  std::string lost;
  {
    const CudaGpus::Hold probe(gpus, ordinal);
    if (const wire::Outcome health = probe.health(); !health.ok()) lost = health.why();
    if (lost.empty() && probe.context() != nullptr &&
        (info = gpus.driver().cuCtxSetCurrent(probe.context())) == CUDA_SUCCESS) {
      call = "cuMemGetInfo";
      info = gpus.driver().cuMemGetInfo(&free, &total);
    }
    // A sticky error found here loses the GPU, as one in any job's call does (check): with the
    // probe the last holder, the GPU opens afresh at the next hold.
    if (lost.empty() && info != CUDA_SUCCESS && cuda_error_is_sticky(info)) {
      lost = gpus.driver().error(call, info);
      probe.lose(lost);
    }
  }
  if (info != CUDA_SUCCESS) free = 0;  // a GPU that cannot say has no room for this job
  const std::uint64_t budget = std::min<std::uint64_t>(free, cap);
  auto device = std::unique_ptr<CudaDevice>(new CudaDevice(facts(gpus.gpus()[ordinal], id, budget, reaches), gpus, ordinal));
  // A GPU that could not say its free memory fails the job at its first use, saying why, rather
  // than answer every alloc "no room".
  if (info != CUDA_SUCCESS) device->open_fault_ = device_error(!lost.empty() ? lost : gpus.driver().error(call, info));
  return device;
}

CudaDevice::CudaDevice(const wire::Account& account, const CudaGpus& gpus, int ordinal)
    : DeviceBackend(account),
      driver_(gpus.driver()),
      gpus_(gpus),
      ordinal_(ordinal),
      budget_(std::make_shared<Budget>(Budget{account.budget})) {}

wire::Outcome CudaDevice::take() {
  if (!open_fault_.ok()) return fault_ = open_fault_;
  gpu_ = std::make_shared<CudaGpus::Hold>(gpus_, ordinal_);
  wire::Outcome made = current();
  if (made.ok()) made = check("cuStreamCreate", driver_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  if (made.ok()) made = check("cuEventCreate", driver_.cuEventCreate(&tail_, CU_EVENT_DISABLE_TIMING));
  if (made.ok()) made = check("cuStreamCreate", driver_.cuStreamCreate(&wake_stream_, CU_STREAM_NON_BLOCKING));
  if (made.ok()) made = check("cuEventCreate", driver_.cuEventCreate(&wake_event_, CU_EVENT_DISABLE_TIMING));
  if (made.ok()) return made;
  // The job fails (its next poll); meanwhile it does not hold a GPU it could not use.
  fault_ = made;
  let_go();
  return made;
}

CudaDevice::~CudaDevice() {
  quiesce();
  let_go();
}

void CudaDevice::let_go() {
  if (gpu_ == nullptr) return;
  if (gpu_->context() != nullptr && driver_.cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) {
    for (const Pending& p : pending_) driver_.cuEventDestroy(p.event);
    for (const Mark& m : marks_) driver_.cuEventDestroy(m.event);
    for (CUevent e : spare_events_) driver_.cuEventDestroy(e);
    if (tail_ != nullptr) driver_.cuEventDestroy(tail_);
    if (wake_event_ != nullptr) driver_.cuEventDestroy(wake_event_);
    if (wake_stream_ != nullptr) driver_.cuStreamDestroy(wake_stream_);
    if (stream_ != nullptr) driver_.cuStreamDestroy(stream_);
  }
  pending_.clear();
  marks_.clear();
  spare_events_.clear();
  tail_ = wake_event_ = nullptr;
  stream_ = wake_stream_ = nullptr;
  gpu_.reset();
}

wire::Outcome CudaDevice::usable() {
  if (gpu_ != nullptr) return current();
  if (!fault_.ok()) return fault_;  // a failed take, or a failure reported before any use
  return take();
}

wire::Outcome CudaDevice::current() const {
  assert(gpu_ != nullptr);
  if (!fault_.ok()) return fault_;
  RIG_RETURN_IF_FAILED(gpu_->health());
  return check("cuCtxSetCurrent", gpu_->context() != nullptr ? driver_.cuCtxSetCurrent(gpu_->context())
                                                               : CUDA_ERROR_INVALID_CONTEXT);
}

wire::Outcome CudaDevice::check(const char* call, CUresult rc) const {
  if (rc == CUDA_SUCCESS) return {};
  std::string why = driver_.error(call, rc);
  if (cuda_error_is_sticky(rc)) {
    gpu_->lose(why);
    why = "GPU " + std::to_string(gpu_->gpu().ordinal) + " lost: " + why;
  }
  return device_error(std::move(why));
}

std::shared_ptr<Memory> CudaDevice::allocate(std::uint64_t bytes) {
  if (!usable().ok()) return nullptr;  // lost or failed before: the next poll() says why
  CUresult rc = CUDA_SUCCESS;
  auto memory = CudaMemory::allocate(gpu_, id(), bytes, budget_, rc);
  if (!memory) {
    // No room (past the budget, CUDA_ERROR_OUT_OF_MEMORY) or a size the driver refuses: the
    // page's None. Anything else is the GPU failing: the job fails (a sticky error loses it).
    if (rc != CUDA_ERROR_OUT_OF_MEMORY && rc != CUDA_ERROR_INVALID_VALUE) keep_fault(check("cuMemAlloc", rc));
    return nullptr;
  }
  // Zeroed, as every device's fresh memory is: ordered before any copy this stream runs later,
  // and, through the event, before another GPU's copies of it (wait_zeroed).
  CUevent zeroed = nullptr;
  wire::Outcome zeroing = check("cuMemsetD8Async", driver_.cuMemsetD8Async(memory->address(), 0, bytes, stream_));
  if (zeroing.ok()) zeroing = check("cuEventCreate", driver_.cuEventCreate(&zeroed, CU_EVENT_DISABLE_TIMING));
  if (zeroing.ok()) {
    memory->set_zeroed(zeroed, other_waited_gpus());
    zeroing = check("cuEventRecord", driver_.cuEventRecord(zeroed, stream_));
  }
  if (!keep_fault(zeroing)) return nullptr;
  return memory;
}

std::shared_ptr<Memory> CudaDevice::map_peer(const std::shared_ptr<Memory>& memory) {
  if (memory->host() != nullptr) return memory;  // RAM: the GPU reaches it by DMA
  const auto* other = dynamic_cast<const CudaMemory*>(memory.get());
  if (other == nullptr) return nullptr;
  if (other->device() == id()) return memory;
  if (!usable().ok()) return nullptr;  // lost or failed before: the next poll() says why
  // The peer's context (primary, shared by the process) is found by its allocation's address.
  CUcontext peer = nullptr;
  if (!keep_fault(check("cuPointerGetAttribute",
                        driver_.cuPointerGetAttribute(&peer, CU_POINTER_ATTRIBUTE_CONTEXT, other->address())))) {
    return nullptr;
  }
  const CUresult rc = driver_.cuCtxEnablePeerAccess(peer, 0);
  if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    return memory;  // one unified address space: the same address reaches it from here
  }
  // The driver's refusals are map_peer's None; any other failure is the GPU failing (the job
  // fails; a sticky error loses the GPU).
  if (rc != CUDA_ERROR_PEER_ACCESS_UNSUPPORTED && rc != CUDA_ERROR_TOO_MANY_PEERS && rc != CUDA_ERROR_INVALID_DEVICE) {
    keep_fault(check("cuCtxEnablePeerAccess", rc));
  }
  return nullptr;
}

wire::Outcome CudaDevice::end_of(const Place& p, End& e) const {
  e.pitch = p.pitch;
  if (p.memory->host() != nullptr) {
    e.host = true;
    e.address = reinterpret_cast<std::uintptr_t>(p.memory->host() + p.offset);
    return {};
  }
  const auto* m = dynamic_cast<const CudaMemory*>(p.memory);
  if (m == nullptr) {
    return device_error("memory of device " + std::to_string(p.memory->device()) + " is neither RAM nor a GPU's");
  }
  e.address = m->address() + p.offset;
  e.memory = m;
  return {};
}

wire::Outcome CudaDevice::wait_zeroed(const End& e) {
  if (e.memory == nullptr || e.memory->device() == id() || e.memory->zeroed() == nullptr) return {};
  RIG_RETURN_IF_FAILED(check("cuStreamWaitEvent", driver_.cuStreamWaitEvent(stream_, e.memory->zeroed(), 0)));
  waited_gpus_ |= 1ull << e.memory->ordinal();  // quiesce() gives the stream up if that GPU is lost
  return {};
}

wire::Outcome CudaDevice::issue_rows(const End& dst, const End& src, Shape shape) {
  for (std::uint64_t r = 0; r < shape.rows; ++r) {
    RIG_RETURN_IF_FAILED(check("cuMemcpyAsync", driver_.cuMemcpyAsync(dst.address + r * dst.pitch,
                                                                      src.address + r * src.pitch, shape.row_bytes, stream_)));
  }
  return {};
}

wire::Outcome CudaDevice::issue(const End& dst, const End& src, Shape shape) {
  RIG_RETURN_IF_FAILED(usable());
  RIG_RETURN_IF_FAILED(wait_zeroed(dst));
  RIG_RETURN_IF_FAILED(wait_zeroed(src));
  const bool packed = shape.rows == 1 || (dst.pitch == shape.row_bytes && src.pitch == shape.row_bytes);
  if (packed) {
    const std::uint64_t bytes = shape.rows * shape.row_bytes;
    RIG_RETURN_IF_FAILED(check("cuMemcpyAsync", driver_.cuMemcpyAsync(dst.address, src.address, bytes, stream_)));
  } else if (dst.pitch > kMaxPitch || src.pitch > kMaxPitch) {
    RIG_RETURN_IF_FAILED(issue_rows(dst, src, shape));  // past what a 2D copy takes
  } else {
    CUDA_MEMCPY2D m{};
    m.srcMemoryType = src.host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
    m.srcHost = reinterpret_cast<const void*>(src.address);
    m.srcDevice = src.address;
    m.srcPitch = src.pitch;
    m.dstMemoryType = dst.host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
    m.dstHost = reinterpret_cast<void*>(dst.address);
    m.dstDevice = dst.address;
    m.dstPitch = dst.pitch;
    m.WidthInBytes = shape.row_bytes;
    m.Height = shape.rows;
    const CUresult rc = driver_.cuMemcpy2DAsync(&m, stream_);
    // cuda.h: within one device, a 2D copy "may fail for pitches not computed by
    // cuMemAllocPitch()": such rows go one by one.
    const bool within_device = !src.host && !dst.host && src.memory != nullptr && dst.memory != nullptr &&
                               src.memory->device() == dst.memory->device();
    RIG_RETURN_IF_FAILED(rc == CUDA_ERROR_INVALID_VALUE && within_device ? issue_rows(dst, src, shape)
                                                                         : check("cuMemcpy2DAsync", rc));
  }
  issued_since_arm_ = true;
  return check("cuEventRecord", driver_.cuEventRecord(tail_, stream_));
}

wire::Outcome CudaDevice::copy_in(const Place& dst, const std::byte* packed, Shape shape) {
  End d, s{true, reinterpret_cast<std::uintptr_t>(packed), shape.row_bytes};
  RIG_RETURN_IF_FAILED(end_of(dst, d));
  return issue(d, s, shape);
}

wire::Outcome CudaDevice::copy_out(std::byte* packed, const Place& src, Shape shape) {
  End d{true, reinterpret_cast<std::uintptr_t>(packed), shape.row_bytes}, s;
  RIG_RETURN_IF_FAILED(end_of(src, s));
  return issue(d, s, shape);
}

wire::Outcome CudaDevice::copy(const Place& dst, const Place& src, Shape shape) {
  End d, s;
  RIG_RETURN_IF_FAILED(end_of(dst, d));
  RIG_RETURN_IF_FAILED(end_of(src, s));
  return issue(d, s, shape);
}

bool CudaDevice::keep_fault(const wire::Outcome& o) const {
  if (!o.ok()) fault_ = o;
  return o.ok();
}

void CudaDevice::give_up(int lost) noexcept {
  given_up_ = true;
  try {
    std::string why = "a GPU it waited on was lost";
    if (lost >= 0) {
      if (const wire::Outcome health = gpus_.health(lost); !health.ok()) why = health.why();
    }
    const std::string reason = "its stream waits on work that will not complete: " + why;
    gpu_->lose(reason);
    spdlog::warn("device {} at the job's end: GPU {} given up, and lost for every job using it: {}", id(), ordinal_,
                 reason);
  } catch (...) {  // no memory for the words: the GPU is lost without them
    gpu_->lose_without_words();
  }
  if (wake_ != nullptr) gpus_.keep_until_destroyed(ordinal_, wake_);
}

void CudaDevice::keep(std::shared_ptr<GivenUpWork> work) {
  assert(given_up_ && gpu_ != nullptr);
  work->leave_to(id(), ordinal_);
  gpus_.keep_until_destroyed(ordinal_, std::move(work));
}

void CudaDevice::quiesce() {
  if (gpu_ == nullptr || stream_ == nullptr || gpu_->context() == nullptr || given_up_) return;
  if (driver_.cuCtxSetCurrent(gpu_->context()) != CUDA_SUCCESS) return;
  // The job is ending, so a failure fails nothing more; a sticky one still loses the GPU for
  // the jobs that share it (check). The first is logged (a sticky error fails both streams),
  // unless the GPU was lost before: the job's failure said so already.
  bool logged = gpus_.lost(ordinal_);
  std::chrono::steady_clock::time_point stuck_since{};
  for (CUstream s : {stream_, wake_stream_}) {
    if (s == nullptr) continue;
    const CUresult rc = wait_unless_lost(
        gpus_, other_waited_gpus(),
        [&] {
          driver_.cuCtxSetCurrent(gpu_->context());  // lost_among leaves none current
          return driver_.cuStreamQuery(s);
        },
        stuck_since);
    if (rc == CUDA_ERROR_NOT_READY) {
      // The wake stream waits behind the copy stream: both are given up.
      give_up(gpus_.lost_among(other_waited_gpus()));
      return;
    }
    if (rc == CUDA_SUCCESS || std::exchange(logged, true)) continue;
    try {
      spdlog::warn("device {} at the job's end: {}", id(), check("cuStreamQuery", rc).why());
    } catch (...) {  // out of memory for the words: quiesce runs in destructors and never throws
    }
  }
}

}  // namespace rig::agent

#include "devices/cuda/cuda_gpus.h"

#include <algorithm>
#include <cassert>
#include <new>

namespace rig::agent {

bool cuda_error_is_sticky(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
#if CUDA_VERSION >= 12080
    // cuda.h: "leaves the process in an inconsistent state" (Hopper's error containment).
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
#endif
      return true;
    default:
      return false;
  }
}

wire::Outcome CudaGpus::probe(const CudaGpus*& gpus) {
  static std::once_flag once;
  static const CudaGpus* probed = nullptr;
  static wire::Outcome outcome;
  std::call_once(once, [] {
    const CudaDriver* driver = nullptr;
    if (outcome = CudaDriver::load(driver); !outcome.ok()) return;
    auto g = std::unique_ptr<CudaGpus>(new CudaGpus(*driver));
    if (outcome = g->read_facts(); !outcome.ok()) return;
    probed = g.release();
  });
  gpus = probed;
  return outcome;
}

wire::Outcome CudaGpus::read_facts() {
  const CudaDriver& d = *driver_;
  int count = 0;
  if (const CUresult rc = d.cuDeviceGetCount(&count); rc != CUDA_SUCCESS) {
    return wire::Outcome::failed(-ENODEV, "no usable GPU: " + d.error("cuDeviceGetCount", rc));
  }
  if (count == 0) {
    return wire::Outcome::failed(-ENODEV, "no GPU: the CUDA driver sees none (CUDA_VISIBLE_DEVICES may hide them)");
  }
  count = std::min(count, static_cast<int>(wire::kMaxDevices) - 1);  // id 0 is the host
  for (int i = 0; i < count; ++i) {
    Gpu g;
    g.ordinal = i;
    char name[256] = {};
    int major = 0, minor = 0, l2 = 0;
    CUresult rc = d.cuDeviceGet(&g.device, i);
    if (rc == CUDA_SUCCESS) rc = d.cuDeviceGetName(name, sizeof name - 1, g.device);
    if (rc == CUDA_SUCCESS) rc = d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g.device);
    if (rc == CUDA_SUCCESS) rc = d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g.device);
    if (rc == CUDA_SUCCESS) rc = d.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, g.device);
    if (rc != CUDA_SUCCESS) {
      return wire::Outcome::failed(-ENODEV, "GPU " + std::to_string(i) + ": " + d.error("reading its attributes", rc));
    }
    g.name = name;
    g.arch = "sm_" + std::to_string(major) + std::to_string(minor);
    g.cache_bytes = static_cast<std::uint64_t>(l2);
    g.peers = 1ull << i;
    gpus_.push_back(std::move(g));
  }
  for (Gpu& g : gpus_) {
    for (const Gpu& peer : gpus_) {
      int can = 0;
      if (peer.ordinal != g.ordinal && d.cuDeviceCanAccessPeer(&can, g.device, peer.device) == CUDA_SUCCESS && can)
        g.peers |= 1ull << peer.ordinal;
    }
  }
  states_ = std::make_unique<State[]>(gpus_.size());
  return {};
}

CudaGpus::Hold::Hold(const CudaGpus& gpus, int ordinal) : gpus_(gpus), ordinal_(ordinal) {
  State& s = gpus_.states_[ordinal];
  std::lock_guard lock(s.mutex);
  // Lost and held by no job: its primary context was released by the last one, so the GPU is
  // opened afresh.
  if (s.holds == 0 && s.lost.load(std::memory_order_relaxed)) {
    s.lost.store(false, std::memory_order_release);
    s.lost_why.clear();
  }
  const CudaDriver& d = gpus_.driver();
  const CUdevice device = gpus_.gpus_[ordinal].device;
  const CUresult rc = d.cuDevicePrimaryCtxRetain(&context_, device);
  if (rc != CUDA_SUCCESS) {
    context_ = nullptr;
    s.lost_why = d.error("cuDevicePrimaryCtxRetain", rc);
    s.lost.store(true, std::memory_order_release);
  } else if (!s.kept) {
    // The process's reference: the context outlives this job (a failure only costs the next
    // job a fresh context).
    CUcontext same = nullptr;
    s.kept = d.cuDevicePrimaryCtxRetain(&same, device) == CUDA_SUCCESS;
    if (s.kept) s.context = same;
  }
  ++s.holds;
}

CudaGpus::Hold::~Hold() {
  State& s = gpus_.states_[ordinal_];
  std::vector<std::shared_ptr<const void>> destroyed_with;  // released after the lock
  {
    std::lock_guard lock(s.mutex);
    const CudaDriver& d = gpus_.driver();
    const CUdevice device = gpus_.gpus_[ordinal_].device;
    if (context_ != nullptr) d.cuDevicePrimaryCtxRelease(device);
    // The last hold of a lost GPU: the process lets go of its context too, which destroys it
    // (and the work queued there), so the next job opens the GPU afresh (the constructor).
    if (--s.holds == 0 && s.lost.load(std::memory_order_relaxed)) {
      if (s.kept) d.cuDevicePrimaryCtxRelease(device);
      s.kept = false;
      s.context = nullptr;
      destroyed_with.swap(s.until_destroyed);
    }
  }
  release(destroyed_with);
}

void CudaGpus::release(std::vector<std::shared_ptr<const void>>& kept) noexcept {
  if (kept.empty()) return;
  // One release at a time, process-wide: the kept work of two GPUs a job gave up shares the
  // job's pinning and budgets, which only its session thread touched while it ran, and two
  // GPUs' last holds may go on two threads. Recursive: a release may drop another GPU's last
  // hold, whose kept work is released then, on this thread.
  static std::recursive_mutex one_at_a_time;
  const std::lock_guard lock(one_at_a_time);
  kept.clear();
}

bool CudaGpus::lost(int ordinal) const noexcept {
  return states_[ordinal].lost.load(std::memory_order_acquire);  // pairs with lose()'s release
}

void CudaGpus::find_sticky(int ordinal) const noexcept {
  if (lost(ordinal)) return;
  State& s = states_[ordinal];
  CUresult rc = CUDA_SUCCESS;
  {
    // Under the mutex: the context stays while the process keeps it.
    std::lock_guard lock(s.mutex);
    if (s.context == nullptr) return;
    std::size_t free = 0, total = 0;
    rc = driver_->cuCtxSetCurrent(s.context);
    if (rc == CUDA_SUCCESS) rc = driver_->cuMemGetInfo(&free, &total);
    driver_->cuCtxSetCurrent(nullptr);
    if (rc == CUDA_SUCCESS || !cuda_error_is_sticky(rc)) return;
  }
  try {
    lose(ordinal, driver_->error("cuMemGetInfo", rc));
  } catch (...) {  // no memory for the words: the next look finds it again
  }
}

int CudaGpus::lost_among(std::uint64_t mask) const noexcept {
  for (int j = 0; j < static_cast<int>(gpus_.size()); ++j) {
    if ((mask >> j & 1) == 0) continue;
    find_sticky(j);  // a failure no call of the job saw yet
    if (lost(j)) return j;
  }
  return -1;
}

void CudaGpus::keep_until_destroyed(int ordinal, std::shared_ptr<const void> what) const noexcept {
  State& s = states_[ordinal];
  std::lock_guard lock(s.mutex);
  assert(s.holds > 0 && s.lost.load(std::memory_order_relaxed));  // a given-up GPU, still held
  try {
    s.until_destroyed.push_back(std::move(what));
  } catch (const std::bad_alloc&) {  // kept by a plain leak: freeing it could not be safe
    static_cast<void>(new (std::nothrow) std::shared_ptr<const void>(std::move(what)));
  }
}

wire::Outcome CudaGpus::health(int ordinal) const {
  if (!lost(ordinal)) return {};
  State& s = states_[ordinal];
  std::lock_guard lock(s.mutex);
  return wire::Outcome::failed(-EIO, "GPU " + std::to_string(ordinal) + " (" + gpus_[ordinal].name + ") is lost: " +
                                         s.lost_why);
}

void CudaGpus::Hold::lose(const std::string& why) const { gpus_.lose(ordinal_, why); }

void CudaGpus::Hold::lose_without_words() const noexcept { gpus_.lose_without_words(ordinal_); }

void CudaGpus::lose_without_words(int ordinal) const noexcept {
  State& s = states_[ordinal];
  std::lock_guard lock(s.mutex);
  if (s.lost.load(std::memory_order_relaxed)) return;
  try {
    s.lost_why = "out of memory saying why";
  } catch (...) {  // the reason stays empty
  }
  s.lost.store(true, std::memory_order_release);  // pairs with lost()'s acquire
}

void CudaGpus::lose(int ordinal, const std::string& why) const {
  State& s = states_[ordinal];
  std::lock_guard lock(s.mutex);
  if (s.lost.load(std::memory_order_relaxed)) return;  // the first reason stays
  s.lost_why = why;
  s.lost.store(true, std::memory_order_release);  // pairs with lost()'s acquire
}

}  // namespace rig::agent

// The machine's GPUs as this agent sees them (in the driver's order, so CUDA_VISIBLE_DEVICES
// applies): probed once, with the facts every job's account of them repeats, and the state
// that all jobs using one GPU share: whether a sticky error lost it. A lost GPU fails every job
// that uses it and is opened afresh (a new primary context) only once no job holds it.
// Otherwise the process keeps each GPU's primary context from the first job that opens it, so a
// job does not make one afresh (cuDevicePrimaryCtxRelease destroys the context with its last
// reference, and making one costs a GPU tenths of a second).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "devices/cuda/cuda_driver.h"
#include "rig/wire/messages.h"
#include "rig/wire/outcome.h"

namespace rig::agent {

class CudaGpus {
 public:
  struct Gpu {
    int ordinal = 0;
    CUdevice device = 0;
    std::string name;
    std::string arch;              // "sm_90" from the compute capability
    std::uint64_t cache_bytes = 0;  // the L2 cache
    std::uint64_t peers = 0;       // bit j: this GPU can access GPU j's memory (the driver's answer)
  };

  // The process's GPUs in `gpus`, probed once; -ENODEV (the same every call, `gpus` null) when
  // there is no driver or no GPU.
  static wire::Outcome probe(const CudaGpus*& gpus);

  const CudaDriver& driver() const { return *driver_; }
  const std::vector<Gpu>& gpus() const { return gpus_; }

  // Ok while GPU `ordinal` is not lost; else -EIO with the reason ("GPU i (name) is lost: ...").
  wire::Outcome health(int ordinal) const;
  // Whether it is lost, without the reason (allocates nothing: for destructors).
  bool lost(int ordinal) const noexcept;
  // Asks GPU `ordinal`'s context whether a sticky error broke it (a call that fails in a broken
  // context), and loses the GPU if so: for a wait on its work that no call of a job has seen
  // fail. Leaves no context current. Never throws.
  void find_sticky(int ordinal) const noexcept;
  // The first GPU in `mask` (bit j: GPU j) that is lost, asking each whether a sticky error
  // broke it that no call saw yet (find_sticky); -1 if none is. Leaves no context current.
  int lost_among(std::uint64_t mask) const noexcept;
  // Holds `what` until GPU `ordinal`'s context is destroyed (the last hold of the lost GPU
  // gone), then lets go of it outside any lock: what work queued in that context names, once a
  // job's end gave that work up (DeviceBackend::gave_up) and the GPU was lost. What it holds must not
  // hold this GPU. Never throws: with no memory to note it, `what` is kept for the process's
  // life, and with none for that either, let go of at once.
  void keep_until_destroyed(int ordinal, std::shared_ptr<const void> what) const noexcept;

  // One job's hold on a GPU: its primary context, retained while the hold lives.
  class Hold {
   public:
    Hold(const CudaGpus& gpus, int ordinal);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    // The context (nullptr when it could not be had: why() says why).
    CUcontext context() const { return context_; }
    int ordinal() const { return ordinal_; }
    const CudaDriver& driver() const { return gpus_.driver(); }
    const CudaGpus& gpus() const { return gpus_; }
    const Gpu& gpu() const { return gpus_.gpus_[ordinal_]; }
    // Ok unless the GPU is lost (a sticky error in any job using it): then the reason.
    wire::Outcome health() const { return gpus_.health(ordinal_); }
    // The same without the reason (allocates nothing: for destructors).
    bool lost() const noexcept { return gpus_.lost(ordinal_); }
    // A sticky error: every job using the GPU fails from now on.
    void lose(const std::string& why) const;
    // The same with no memory for the words: lost, with whatever reason fits.
    void lose_without_words() const noexcept;

   private:
    const CudaGpus& gpus_;
    int ordinal_;
    CUcontext context_ = nullptr;
  };

 private:
  explicit CudaGpus(const CudaDriver& driver) : driver_(&driver) {}
  // A sticky error on GPU `ordinal`: every job using it fails from now on (the first reason stays).
  void lose(int ordinal, const std::string& why) const;
  void lose_without_words(int ordinal) const noexcept;
  // Lets go of what keep_until_destroyed held, one GPU's at a time (no State lock held).
  static void release(std::vector<std::shared_ptr<const void>>& kept) noexcept;
  wire::Outcome read_facts();
  // Shared by every job's hold on one GPU.
  struct State {
    std::mutex mutex;
    std::uint32_t holds = 0;      // guarded by mutex
    bool kept = false;            // the process's own reference to the context; guarded by mutex
    std::string lost_why;         // guarded by mutex
    CUcontext context = nullptr;  // the primary context while kept; guarded by mutex
    // keep_until_destroyed's: let go of when the context is destroyed; guarded by mutex.
    std::vector<std::shared_ptr<const void>> until_destroyed;
    // Set by lose() (release) and read by every call of every job (acquire): the pair that lets
    // a job see another job's sticky error without the mutex.
    std::atomic<bool> lost{false};
  };

  const CudaDriver* driver_;
  std::vector<Gpu> gpus_;
  std::unique_ptr<State[]> states_;
};

// Whether a failed call's result is sticky: the context is unusable for the process's life.
bool cuda_error_is_sticky(CUresult rc);

}  // namespace rig::agent

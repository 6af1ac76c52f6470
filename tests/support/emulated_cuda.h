// The emulated CUDA driver (emulated_cuda.cc, built as a libcuda.so.1 of its own): what a test
// calls to steer it, and how a test finds it. The emulator is loaded instead of the machine's
// driver only where a test's environment puts its folder first on LD_LIBRARY_PATH (the
// *_emulated_cuda tests of tests/CMakeLists.txt); it is a check of the agent's use of the driver
// API on machines without a GPU, never a stand-in for the GPU run (scripts/gpu-check).
//
// Its environment, read at cuInit:
//   RIG_EMULATED_CUDA_GPUS      GPUs it shows (default 2; 0 shows none)
//   RIG_EMULATED_CUDA_MEMORY    bytes of memory per GPU (default 256 MiB)
//   RIG_EMULATED_CUDA_DELAY_US  microseconds each fill, and each copy with a host side, waits
//                               before it runs on its stream (default 0); copies between GPUs
//                               run at once, so work ordered wrongly after them shows
//   RIG_EMULATED_CUDA_FAIL      "call:n:result[:run]": the n-th call of `call` after cuInit fails
//                               with CUresult `result`, or with ":run", succeeds and its stream
//                               work fails when it runs (a sticky result breaks the context)
#pragma once

#include <dlfcn.h>

#include <cstdint>

extern "C" {
// The n-th call (1 = the next) of entry point `call` fails with `result`; with `when_run`, the
// call succeeds and the stream work it queued fails as it runs.
void rig_emulated_cuda_fail(const char* call, unsigned n, int result, int when_run);
// While on, fills and copies with a host side wait on their streams (everything else runs).
void rig_emulated_cuda_hold(int on);
// Holds as rig_emulated_cuda_hold(1) does once the next n fills and copies with a host side (of
// any stream, in the order they start) started: a test sees what completed and what did not.
// One that fails as it runs (injected, or in a broken context) uses a pass too; copies on the
// pageable path are neither held nor counted.
void rig_emulated_cuda_hold_after(unsigned n);
// Returns once no stream runs anything or has anything it may run (all empty or blocked).
void rig_emulated_cuda_settle();
// Counters since cuInit: copies between pageable host memory and a GPU (the driver's slow,
// synchronous path), and host ranges registered right now.
std::uint64_t rig_emulated_cuda_pageable_copies();
std::uint64_t rig_emulated_cuda_registered_ranges();
}

namespace rig::test {

// The emulator's control entry points, when the libcuda.so.1 the process loads is the emulator
// (loaded here if the agent's CudaDriver has not loaded it yet: no cuInit); all nullptr
// otherwise (a real driver, or none).
struct EmulatedCuda {
  decltype(&rig_emulated_cuda_fail) fail = nullptr;
  decltype(&rig_emulated_cuda_pageable_copies) pageable_copies = nullptr;
  decltype(&rig_emulated_cuda_registered_ranges) registered_ranges = nullptr;
  decltype(&rig_emulated_cuda_hold) hold = nullptr;
  decltype(&rig_emulated_cuda_settle) settle = nullptr;
  decltype(&rig_emulated_cuda_hold_after) hold_after = nullptr;
  explicit operator bool() const { return fail != nullptr; }
};

inline EmulatedCuda emulated_cuda() {
  EmulatedCuda e;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return e;
  e.fail = reinterpret_cast<decltype(e.fail)>(dlsym(lib, "rig_emulated_cuda_fail"));
  e.pageable_copies = reinterpret_cast<decltype(e.pageable_copies)>(dlsym(lib, "rig_emulated_cuda_pageable_copies"));
  e.registered_ranges = reinterpret_cast<decltype(e.registered_ranges)>(dlsym(lib, "rig_emulated_cuda_registered_ranges"));
  e.hold = reinterpret_cast<decltype(e.hold)>(dlsym(lib, "rig_emulated_cuda_hold"));
  e.settle = reinterpret_cast<decltype(e.settle)>(dlsym(lib, "rig_emulated_cuda_settle"));
  e.hold_after = reinterpret_cast<decltype(e.hold_after)>(dlsym(lib, "rig_emulated_cuda_hold_after"));
  if (!e.pageable_copies || !e.registered_ranges || !e.hold || !e.settle || !e.hold_after) e.fail = nullptr;
  if (!e.fail) dlclose(lib);  // the emulator stays loaded: its entry points are kept
  return e;
}

}  // namespace rig::test

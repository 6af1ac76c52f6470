// The CUDA driver, loaded at run time: libcuda.so.1 by dlopen and every entry point through
// cuGetProcAddress at the toolkit's CUDA_VERSION, or at the driver's own where it is older (a
// driver refuses a version past its own; the entry points used keep the ABI this build was
// compiled against from CUDA 12.0 on: cuMemAlloc is cuMemAlloc_v2, and so on). Nothing links libcuda, so the one
// rig-agent binary runs on machines without a GPU or a driver; there load() says why not.
#pragma once

#include <cuda.h>

#include <string>

#include "rig/wire/outcome.h"

namespace rig::agent {

// The entry points the CUDA device backend calls (names as cuda.h spells them).
#define RIG_CUDA_ENTRY_POINTS(X)                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)       \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceCanAccessPeer)               \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)                      \
  X(cuCtxEnablePeerAccess) X(cuPointerGetAttribute) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8Async)           \
  X(cuMemcpyAsync) X(cuMemcpy2DAsync) X(cuMemHostRegister) X(cuMemHostUnregister) X(cuStreamCreate)                 \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)    \
  X(cuEventQuery) X(cuStreamWaitEvent) X(cuLaunchHostFunc)

class CudaDriver {
 public:
  // The oldest driver this build takes: cuGetProcAddress with a symbol status (CUDA 12.0).
  static constexpr int kMinimumVersion = 12000;

  // The process's driver in `driver`, loaded and initialised (cuInit) once; -ENODEV (the same
  // on every call, `driver` null) when there is none: no libcuda.so.1, a driver older than
  // kMinimumVersion, an entry point missing, or cuInit failing (no GPU, a driver/kernel module
  // mismatch).
  static wire::Outcome load(const CudaDriver*& driver);

  // "call: CUDA_ERROR_NAME (the driver's message)" for a failed call's result.
  std::string error(const char* call, CUresult rc) const;
  // The driver's version, as cuDriverGetVersion says it (12080 for 12.8).
  int version() const { return version_; }

#define RIG_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  RIG_CUDA_ENTRY_POINTS(RIG_CUDA_MEMBER)
#undef RIG_CUDA_MEMBER

 private:
  CudaDriver() = default;
  // Resolves every entry point through `get_proc` (cuGetProcAddress_v2) at CUDA version `at`.
  wire::Outcome resolve(void* get_proc, int at);

  int version_ = 0;
};

// "M.m" of a driver version number (12080 -> "12.8").
std::string cuda_version_string(int version);

}  // namespace rig::agent

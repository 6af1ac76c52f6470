#include "devices/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace rig::agent {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// Why the driver library itself is missing: dlerror's words, naming the file.
std::string open_failure() {
  const char* e = dlerror();
  return std::string("no CUDA driver: ") + (e != nullptr ? e : "libcuda.so.1 could not be loaded");
}

// No driver this build takes: -ENODEV and why not.
wire::Outcome no_driver(std::string why) { return wire::Outcome::failed(-ENODEV, std::move(why)); }

// Whether the library is a driver this build takes: it answers cuDriverGetVersion with
// kMinimumVersion or newer and has cuGetProcAddress_v2; else why not.
wire::Outcome check_version(void* lib, void* get_proc, int& version) {
  auto get_version = reinterpret_cast<CUresult (*)(int*)>(dlsym(lib, "cuDriverGetVersion"));
  auto get_name = reinterpret_cast<CUresult (*)(CUresult, const char**)>(dlsym(lib, "cuGetErrorName"));
  const CUresult rc = get_version != nullptr ? get_version(&version) : CUDA_ERROR_NOT_FOUND;
  if (get_version != nullptr && rc != CUDA_SUCCESS) {
    const char* name = nullptr;
    if (get_name == nullptr || get_name(rc, &name) != CUDA_SUCCESS) name = nullptr;
    return no_driver("no usable CUDA driver: libcuda.so.1 answers cuDriverGetVersion with " +
                     (name != nullptr ? std::string(name) : "CUresult " + std::to_string(rc)) +
                     (rc == CUDA_ERROR_STUB_LIBRARY ? " (the toolkit's stub library, not a driver)" : ""));
  }
  if (get_proc == nullptr || get_version == nullptr || version < CudaDriver::kMinimumVersion) {
    return no_driver("the CUDA driver (libcuda.so.1) supports CUDA " +
                     (version > 0 ? cuda_version_string(version) : std::string("older than 12.0")) +
                     "; this rig-agent needs a driver for CUDA " + cuda_version_string(CudaDriver::kMinimumVersion) +
                     " or newer (built with CUDA " + cuda_version_string(CUDA_VERSION) + ")");
  }
  return {};
}

}  // namespace

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string CudaDriver::error(const char* call, CUresult rc) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(rc, &text) != CUDA_SUCCESS) text = nullptr;
  return std::string(call) + ": " + (name != nullptr ? name : "CUresult " + std::to_string(rc)) + " (" +
         (text != nullptr ? text : "no message from the driver") + ")";
}

wire::Outcome CudaDriver::resolve(void* get_proc, int at) {
  auto get = reinterpret_cast<GetProcAddress>(get_proc);
  CUdriverProcAddressQueryResult status{};
  CUresult rc = CUDA_SUCCESS;
#define RIG_CUDA_RESOLVE(name)                                                                            \
  rc = get(#name, reinterpret_cast<void**>(&name), at, CU_GET_PROC_ADDRESS_DEFAULT, &status);             \
  if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || name == nullptr) {                   \
    return no_driver(std::string("the CUDA driver has no entry point " #name " for CUDA ") +             \
                     cuda_version_string(at) + " (cuGetProcAddress: result " + std::to_string(rc) +      \
                     ", status " + std::to_string(status) + ")");                                          \
  }
  RIG_CUDA_ENTRY_POINTS(RIG_CUDA_RESOLVE)
#undef RIG_CUDA_RESOLVE
  return {};
}

wire::Outcome CudaDriver::load(const CudaDriver*& driver) {
  static std::once_flag once;
  static const CudaDriver* loaded = nullptr;
  static wire::Outcome outcome;
  std::call_once(once, [] {
    // Never closed: the driver stays for the process's life (its threads run inside it).
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      outcome = no_driver(open_failure());
      return;
    }
    void* get_proc = dlsym(lib, "cuGetProcAddress_v2");
    int version = 0;
    if (outcome = check_version(lib, get_proc, version); !outcome.ok()) return;
    auto d = std::unique_ptr<CudaDriver>(new CudaDriver());
    d->version_ = version;
    // A driver refuses a version past its own (CUDA_ERROR_INVALID_VALUE): ask at the older.
    if (outcome = d->resolve(get_proc, std::min(version, CUDA_VERSION)); !outcome.ok()) return;
    if (const CUresult rc = d->cuInit(0); rc != CUDA_SUCCESS) {
      outcome = no_driver("no usable GPU: " + d->error("cuInit", rc));
      return;
    }
    loaded = d.release();
  });
  driver = loaded;
  return outcome;
}

}  // namespace rig::agent

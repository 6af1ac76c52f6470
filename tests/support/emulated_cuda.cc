// An emulated CUDA driver: the entry points rig-agent's CUDA backend calls (agent/devices/
// cuda/cuda_driver.h), served from host memory by a thread per stream, built as a libcuda.so.1 that
// tests load in place of the machine's driver (emulated_cuda.h says how, and what steers it).
//
// It keeps the driver's contract where the backend relies on it, and is stricter where a real
// GPU would hide a mistake:
// - stream work runs asynchronously and in order on the stream's thread (fills, and copies with a
//   host side, after a configured delay, while copies between GPUs run at once, so a copy
//   ordered wrongly after a fill or a copy from the host reads the bytes from before it); events complete when
//   the work recorded before them did; a stream waits on another's event (one of a context that
//   broke before it completed, never: the stream waits until its own context breaks or goes,
//   as the driver's documentation does not promise otherwise); host functions run on
//   the stream's thread and may call no entry point (CUDA_ERROR_NOT_PERMITTED);
// - a GPU's memory lives at addresses the process cannot touch (a reservation with no access):
//   a host access through a device pointer faults; fresh memory is filled with 0xA5, not zero;
// - a copy with host memory that is not registered takes the pageable path: it waits for the
//   stream's earlier work and runs inside the call, with no delay and not held (counted);
// - freeing memory or unregistering host memory that queued work still uses, and calls into a
//   destroyed or foreign context, end the process with a message: the backend broke the contract;
// - a sticky failure (injected) breaks the context: its work is dropped and every call in it
//   fails with that result until the last primary-context reference is released.
#include <cuda.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emulated_cuda.h"

struct CUctx_st;
struct CUstream_st;
struct CUevent_st;

namespace {

constexpr std::uint64_t kDefaultMemory = 256ull << 20;
constexpr std::uint64_t kSpan = 16ull << 30;  // the device address space reserved (no access)
constexpr std::uint64_t kAlign = 512;

[[noreturn]] void violation(const char* what) {
  std::fprintf(stderr, "emulated CUDA driver: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

struct Allocation {
  CUctx_st* ctx;
  std::uint64_t address;
  std::uint64_t bytes;
  std::byte* backing;
  unsigned in_use = 0;  // queued stream work that reads or writes it
};

struct Registration {
  std::uint64_t bytes;
  CUctx_st* ctx;  // dropped with it
  unsigned in_use = 0;
};

struct Op {
  enum Kind { kCopy, kSet, kRecord, kWait, kHost } kind = kCopy;
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  std::uint64_t width = 0, rows = 1, dst_pitch = 0, src_pitch = 0;
  unsigned char value = 0;
  bool slow = false;  // a fill, or a copy with a host side: waits the configured delay first
  CUevent_st* event = nullptr;
  std::uint64_t generation = 0;
  CUhostFn fn = nullptr;
  void* data = nullptr;
  std::vector<Allocation*> allocations;      // in_use held by this op
  std::vector<Registration*> registrations;  // in_use held by this op
  CUresult fail = CUDA_SUCCESS;              // injected: the op fails as it runs
};

}  // namespace

struct CUctx_st {
  int device;
  unsigned references = 0;  // primary-context retains
  bool destroyed = false;
  CUresult sticky = CUDA_SUCCESS;
  std::vector<CUctx_st*> peers;
};

struct CUstream_st {
  CUctx_st* ctx;
  std::deque<Op> queue;  // the front runs while `running`
  bool running = false;
  bool destroyed = false;
};

struct CUevent_st {
  CUctx_st* ctx;
  std::uint64_t recorded = 0, completed = 0;
  bool destroyed = false;
};

namespace {

struct Fault {
  std::string call;
  unsigned countdown = 0;
  CUresult result = CUDA_SUCCESS;
  bool when_run = false;
};

struct Driver {
  std::mutex mu;
  std::condition_variable changed;
  bool initialised = false;
  int gpus = 2;
  std::uint64_t memory = kDefaultMemory;
  std::chrono::microseconds delay{0};
  std::vector<CUctx_st*> primary;        // per GPU: its primary context, or nullptr
  std::vector<std::uint64_t> allocated;  // per GPU: bytes allocated
  std::byte* span = nullptr;             // the reserved device address space
  std::uint64_t next = 0;                // where the next allocation goes in span (place())
  std::map<std::uint64_t, Allocation> allocations;        // by address
  std::map<std::uintptr_t, Registration> registrations;  // by host address
  std::vector<std::unique_ptr<CUctx_st>> contexts;        // every one ever made (handles stay valid)
  std::vector<std::unique_ptr<CUstream_st>> streams;
  std::vector<std::unique_ptr<CUevent_st>> events;
  Fault fault;
  bool held = false;        // slow work waits (rig_emulated_cuda_hold)
  std::uint64_t passes = 0;  // while held, slow ops that may still start (rig_emulated_cuda_hold_after)
  std::atomic<std::uint64_t> pageable{0};
};

// Never destroyed: stream threads may outlive main.
Driver& g() {
  static Driver* d = new Driver();
  return *d;
}

// Per thread, in pthread keys rather than thread_local: a dlopened library's thread_local lives
// in dynamically allocated TLS, whose free at a thread's exit ThreadSanitizer reports as a race.
struct ThreadKeys {
  pthread_key_t current;  // the thread's current context (cuCtxSetCurrent)
  pthread_key_t in_host;  // non-null while the thread runs a host function
  ThreadKeys() {
    if (pthread_key_create(&current, nullptr) != 0 || pthread_key_create(&in_host, nullptr) != 0)
      violation("no pthread key left");
  }
};
const ThreadKeys& keys() {
  static const ThreadKeys* k = new ThreadKeys();
  return *k;
}
CUctx_st* current() { return static_cast<CUctx_st*>(pthread_getspecific(keys().current)); }
bool in_host_fn() { return pthread_getspecific(keys().in_host) != nullptr; }

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// An injected failure of `call` now: its result (and whether it strikes when the work runs).
CUresult injected(const char* call, bool& when_run) {
  Fault& f = g().fault;
  when_run = false;
  if (f.countdown == 0 || f.call != call || --f.countdown != 0) return CUDA_SUCCESS;
  when_run = f.when_run;
  return f.result;
}

bool is_sticky(CUresult rc) {
  return rc == CUDA_ERROR_ILLEGAL_ADDRESS || rc == CUDA_ERROR_LAUNCH_FAILED || rc == CUDA_ERROR_ECC_UNCORRECTABLE ||
         rc == CUDA_ERROR_UNKNOWN;
}

void release_uses(Op& op) {
  for (Allocation* a : op.allocations) --a->in_use;
  for (Registration* r : op.registrations) --r->in_use;
  op.allocations.clear();
  op.registrations.clear();
}

// A sticky failure: the context's work is dropped, and every call in it fails from now on.
void break_context(CUctx_st* c, CUresult rc) {
  if (c->sticky != CUDA_SUCCESS) return;
  c->sticky = rc;
  for (auto& s : g().streams) {
    if (s->ctx != c) continue;
    // The running front finishes by itself (its thread holds it); the rest never runs.
    const std::size_t keep = s->running ? 1 : 0;
    while (s->queue.size() > keep) {
      release_uses(s->queue.back());
      s->queue.pop_back();
    }
  }
  g().changed.notify_all();
}

CUresult usable(const CUctx_st* c) {
  if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (c->destroyed) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return c->sticky;
}

// A call's entry: no entry point from a host function; the injected failure, if it is this one.
#define ENTER(call)                                                   \
  std::unique_lock lock(g().mu);                                      \
  if (in_host_fn()) return CUDA_ERROR_NOT_PERMITTED;                   \
  if (!g().initialised) return CUDA_ERROR_NOT_INITIALIZED;            \
  bool fail_when_run = false;                                         \
  const CUresult injected_rc = injected(call, fail_when_run);         \
  if (injected_rc != CUDA_SUCCESS && !fail_when_run) {                \
    if (is_sticky(injected_rc) && current() != nullptr)               \
      break_context(current(), injected_rc);                          \
    return injected_rc;                                               \
  }

bool event_done(const CUevent_st* e, std::uint64_t generation) {
  return e->completed >= generation || e->ctx->sticky != CUDA_SUCCESS || e->ctx->destroyed;
}

// Whether a stream's front op may run now: a wait once its event completed (a broken or
// destroyed context's event that had not never does: cuEventSynchronize learns the error, a
// waiting stream learns nothing), slow work unless the test holds it (rig_emulated_cuda_hold;
// with passes left, rig_emulated_cuda_hold_after, it may start), anything else at once.
bool runnable(const Op& op) {
  if (op.kind == Op::kWait) return op.event->completed >= op.generation;
  return !(op.slow && g().held && g().passes == 0);
}

void run_op(Op& op) {
  switch (op.kind) {
    case Op::kCopy:
      for (std::uint64_t r = 0; r < op.rows; ++r) std::memcpy(op.dst + r * op.dst_pitch, op.src + r * op.src_pitch, op.width);
      break;
    case Op::kSet:
      std::memset(op.dst, op.value, op.width);
      break;
    case Op::kHost:
      pthread_setspecific(keys().in_host, &op);
      op.fn(op.data);
      pthread_setspecific(keys().in_host, nullptr);
      break;
    default:
      break;
  }
}

// A stream's thread: runs the queue's front outside the lock, in order, until the stream is
// destroyed and its queue empty.
void stream_thread(CUstream_st* s) {
  Driver& d = g();
  std::unique_lock lock(d.mu);
  for (;;) {
    d.changed.wait(lock, [&] { return s->queue.empty() ? s->destroyed : runnable(s->queue.front()); });
    if (s->queue.empty()) return;
    s->running = true;
    Op& op = s->queue.front();
    if (op.slow && d.held) --d.passes;  // runnable() let it start on one of the passes left
    const bool delayed = op.slow && d.delay.count() > 0;
    if (s->ctx->sticky == CUDA_SUCCESS && op.fail == CUDA_SUCCESS) {
      lock.unlock();
      if (delayed) std::this_thread::sleep_for(d.delay);
      run_op(op);
      lock.lock();
    }
    // Stream work's failures are sticky in CUDA; an injected one that is not fails nothing.
    if (is_sticky(op.fail)) break_context(s->ctx, op.fail);
    if (op.kind == Op::kRecord) op.event->completed = std::max(op.event->completed, op.generation);
    release_uses(op);
    s->queue.pop_front();
    s->running = false;
    d.changed.notify_all();
  }
}

// One side of a copy: a GPU's memory (an allocation) or host memory (registered or not).
struct Side {
  std::byte* p = nullptr;
  Allocation* allocation = nullptr;
  Registration* registration = nullptr;
};

CUresult resolve(std::uint64_t address, std::uint64_t extent, bool host_only, Side& side) {
  Driver& d = g();
  const auto base = reinterpret_cast<std::uint64_t>(d.span);
  if (address >= base && address < base + kSpan) {
    if (host_only) return CUDA_ERROR_INVALID_VALUE;
    auto it = d.allocations.upper_bound(address);
    if (it == d.allocations.begin()) return CUDA_ERROR_INVALID_VALUE;
    Allocation& a = (--it)->second;
    if (address + extent > a.address + a.bytes) return CUDA_ERROR_INVALID_VALUE;
    side.p = a.backing + (address - a.address);
    side.allocation = &a;
    return CUDA_SUCCESS;
  }
  side.p = reinterpret_cast<std::byte*>(address);
  auto it = d.registrations.upper_bound(address);
  if (it != d.registrations.begin()) {
    --it;
    if (address + extent <= it->first + it->second.bytes) side.registration = &it->second;
  }
  return CUDA_SUCCESS;
}

void hold(Op& op, const Side& side) {
  if (side.allocation != nullptr) {
    ++side.allocation->in_use;
    op.allocations.push_back(side.allocation);
  }
  if (side.registration != nullptr) {
    ++side.registration->in_use;
    op.registrations.push_back(side.registration);
  }
}

CUresult stream_ok(CUstream_st* s) {
  if (s == nullptr) violation("work queued on the legacy default stream (the backend uses streams of its own)");
  if (s->destroyed) violation("work queued on a destroyed stream");
  return usable(s->ctx);
}

// Puts `op` at the back of the stream's queue and wakes its thread.
CUresult enqueue(CUstream_st* s, Op op) {
  s->queue.push_back(std::move(op));
  g().changed.notify_all();
  return CUDA_SUCCESS;
}

// Queues a copy of `rows` rows between two sides; with pageable host memory it runs here, once
// the stream's earlier work is done (the driver's pageable path).
CUresult copy(std::unique_lock<std::mutex>& lock, CUstream_st* s, Side dst, Side src, std::uint64_t width,
              std::uint64_t rows, std::uint64_t dst_pitch, std::uint64_t src_pitch, CUresult fail) {
  Op op;
  op.kind = Op::kCopy;
  op.dst = dst.p;
  op.src = src.p;
  op.width = width;
  op.rows = rows;
  op.dst_pitch = dst_pitch;
  op.src_pitch = src_pitch;
  op.fail = fail;
  op.slow = dst.allocation == nullptr || src.allocation == nullptr;
  const bool pageable = (dst.allocation == nullptr && dst.registration == nullptr) ||
                        (src.allocation == nullptr && src.registration == nullptr);
  const bool with_gpu = dst.allocation != nullptr || src.allocation != nullptr;
  hold(op, dst);  // held until the copy ran (also while a pageable call waits: a free meanwhile
  hold(op, src);  // is a violation)
  if (pageable && with_gpu && fail == CUDA_SUCCESS) {
    ++g().pageable;
    g().changed.wait(lock, [&] { return s->queue.empty() || usable(s->ctx) != CUDA_SUCCESS; });
    const CUresult rc = usable(s->ctx);
    if (rc == CUDA_SUCCESS) run_op(op);  // under the lock: runs at once, inside the call
    release_uses(op);
    return rc;
  }
  return enqueue(s, std::move(op));
}

// ---- the entry points ----

CUresult emu_cuInit(unsigned flags) {
  std::lock_guard lock(g().mu);
  Driver& d = g();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (d.initialised) return CUDA_SUCCESS;
  d.gpus = static_cast<int>(std::min<std::uint64_t>(env_number("RIG_EMULATED_CUDA_GPUS", 2), 16));
  d.memory = env_number("RIG_EMULATED_CUDA_MEMORY", kDefaultMemory);
  d.delay = std::chrono::microseconds(env_number("RIG_EMULATED_CUDA_DELAY_US", 0));
  if (d.gpus == 0) return CUDA_ERROR_NO_DEVICE;
  void* span = mmap(nullptr, kSpan, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (span == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  d.span = static_cast<std::byte*>(span);
  d.primary.assign(d.gpus, nullptr);
  d.allocated.assign(d.gpus, 0);
  if (const char* f = std::getenv("RIG_EMULATED_CUDA_FAIL"); f != nullptr && *f != '\0') {
    const std::string s(f);
    const auto a = s.find(':'), b = s.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) violation("RIG_EMULATED_CUDA_FAIL is call:n:result[:run]");
    d.fault = {s.substr(0, a), static_cast<unsigned>(std::stoul(s.substr(a + 1, b - a - 1))),
               static_cast<CUresult>(std::stoi(s.substr(b + 1))), s.find(":run", b) != std::string::npos};
  }
  d.initialised = true;
  return CUDA_SUCCESS;
}

CUresult emu_cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

struct ErrorText {
  CUresult rc;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult emu_cuGetErrorName(CUresult rc, const char** name) {
  for (const ErrorText& e : kErrors) {
    if (e.rc == rc) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult emu_cuGetErrorString(CUresult rc, const char** text) {
  for (const ErrorText& e : kErrors) {
    if (e.rc == rc) {
      *text = e.text;
      return CUDA_SUCCESS;
    }
  }
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult emu_cuDeviceGetCount(int* count) {
  ENTER("cuDeviceGetCount");
  *count = g().gpus;
  return CUDA_SUCCESS;
}

CUresult emu_cuDeviceGet(CUdevice* device, int ordinal) {
  ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= g().gpus) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult emu_cuDeviceGetName(char* name, int len, CUdevice device) {
  ENTER("cuDeviceGetName");
  if (device < 0 || device >= g().gpus) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<std::size_t>(len), "Emulated GPU %d", device);
  return CUDA_SUCCESS;
}

CUresult emu_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  ENTER("cuDeviceGetAttribute");
  if (device < 0 || device >= g().gpus) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 50 << 20; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult emu_cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  ENTER("cuDeviceCanAccessPeer");
  if (device < 0 || device >= g().gpus || peer < 0 || peer >= g().gpus) return CUDA_ERROR_INVALID_DEVICE;
  *can = device != peer ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult emu_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  ENTER("cuDevicePrimaryCtxRetain");
  Driver& d = g();
  if (device < 0 || device >= d.gpus) return CUDA_ERROR_INVALID_DEVICE;
  if (d.primary[device] == nullptr) {
    d.contexts.push_back(std::make_unique<CUctx_st>(CUctx_st{device}));
    d.primary[device] = d.contexts.back().get();
  }
  ++d.primary[device]->references;
  *ctx = d.primary[device];
  return CUDA_SUCCESS;
}

// The context's last reference went: its work is dropped, its memory freed, its handles dead.
void destroy_context(CUctx_st* c) {
  Driver& d = g();
  c->destroyed = true;
  for (auto& s : d.streams) {
    if (s->ctx != c) continue;
    while (s->queue.size() > (s->running ? 1u : 0u)) {
      release_uses(s->queue.back());
      s->queue.pop_back();
    }
    s->destroyed = true;
  }
  for (auto it = d.allocations.begin(); it != d.allocations.end();) {
    if (it->second.ctx == c && it->second.in_use != 0)
      violation("a context destroyed while another context's queued work uses its memory");
    if (it->second.ctx == c) {
      std::free(it->second.backing);
      d.allocated[c->device] -= it->second.bytes;
      it = d.allocations.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = d.registrations.begin(); it != d.registrations.end();) {
    if (it->second.ctx == c && it->second.in_use != 0)
      violation("a context destroyed while queued work uses host memory registered in it");
    it = it->second.ctx == c ? d.registrations.erase(it) : std::next(it);
  }
  d.primary[c->device] = nullptr;
  d.changed.notify_all();
}

CUresult emu_cuDevicePrimaryCtxRelease(CUdevice device) {
  ENTER("cuDevicePrimaryCtxRelease");
  Driver& d = g();
  if (device < 0 || device >= d.gpus) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* c = d.primary[device];
  if (c == nullptr || c->references == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--c->references == 0) {
    // The driver waits for the context's running work before it tears the context down.
    d.changed.wait(lock, [&] {
      for (auto& s : d.streams) {
        if (s->ctx == c && s->running) return false;
      }
      return true;
    });
    if (c->references == 0) destroy_context(c);  // unless retained again meanwhile
  }
  return CUDA_SUCCESS;
}

CUresult emu_cuCtxSetCurrent(CUcontext ctx) {
  ENTER("cuCtxSetCurrent");
  if (ctx != nullptr && ctx->destroyed) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  pthread_setspecific(keys().current, ctx);
  return CUDA_SUCCESS;
}

CUresult emu_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  ENTER("cuCtxEnablePeerAccess");
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  if (flags != 0 || peer == nullptr || peer->destroyed) return CUDA_ERROR_INVALID_VALUE;
  if (peer == current()) return CUDA_ERROR_INVALID_DEVICE;
  auto& peers = current()->peers;
  if (std::find(peers.begin(), peers.end(), peer) != peers.end()) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  peers.push_back(peer);
  return CUDA_SUCCESS;
}

CUresult emu_cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  ENTER("cuPointerGetAttribute");
  if (attribute != CU_POINTER_ATTRIBUTE_CONTEXT) return CUDA_ERROR_INVALID_VALUE;
  Side side;
  if (resolve(ptr, 1, false, side) != CUDA_SUCCESS || side.allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<CUcontext*>(data) = side.allocation->ctx;
  return CUDA_SUCCESS;
}

CUresult emu_cuMemGetInfo(std::size_t* free, std::size_t* total) {
  ENTER("cuMemGetInfo");
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  *total = g().memory;
  *free = g().memory - g().allocated[current()->device];
  return CUDA_SUCCESS;
}

// Where in the span an allocation of `bytes` goes: past the last one made while there is room
// (so a stale pointer to freed memory faults for as long as possible), else the first gap.
bool place(std::uint64_t bytes, std::uint64_t& offset) {
  Driver& d = g();
  if (d.next + bytes <= kSpan) {
    offset = d.next;
    return true;
  }
  const auto base = reinterpret_cast<std::uint64_t>(d.span);
  std::uint64_t at = 0;
  for (const auto& [address, a] : d.allocations) {
    if (address - base >= at + bytes) break;
    at = address - base + (a.bytes + kAlign - 1) / kAlign * kAlign;
  }
  if (at + bytes > kSpan) return false;
  offset = at;
  return true;
}

CUresult emu_cuMemAlloc(CUdeviceptr* address, std::size_t bytes) {
  ENTER("cuMemAlloc");
  Driver& d = g();
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > d.memory - d.allocated[current()->device]) return CUDA_ERROR_OUT_OF_MEMORY;
  const std::uint64_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  std::uint64_t offset = 0;
  if (!place(rounded, offset)) return CUDA_ERROR_OUT_OF_MEMORY;
  auto* backing = static_cast<std::byte*>(std::malloc(bytes));
  if (backing == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(backing, 0xA5, bytes);  // a GPU's fresh memory holds whatever was there
  const std::uint64_t at = reinterpret_cast<std::uint64_t>(d.span) + offset;
  d.next = std::max(d.next, offset + rounded);
  d.allocations.emplace(at, Allocation{current(), at, bytes, backing});
  d.allocated[current()->device] += bytes;
  *address = at;
  return CUDA_SUCCESS;
}

CUresult emu_cuMemFree(CUdeviceptr address) {
  ENTER("cuMemFree");
  Driver& d = g();
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  auto it = d.allocations.find(address);
  if (it == d.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.in_use != 0) violation("cuMemFree of memory that queued stream work still uses");
  std::free(it->second.backing);
  d.allocated[it->second.ctx->device] -= it->second.bytes;
  d.allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult emu_cuMemsetD8Async(CUdeviceptr address, unsigned char value, std::size_t n, CUstream s) {
  ENTER("cuMemsetD8Async");
  if (const CUresult rc = stream_ok(s); rc != CUDA_SUCCESS) return rc;
  Side side;
  if (resolve(address, n, false, side) != CUDA_SUCCESS || side.allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Op op;
  op.kind = Op::kSet;
  op.dst = side.p;
  op.width = n;
  op.value = value;
  op.slow = true;
  op.fail = fail_when_run ? injected_rc : CUDA_SUCCESS;
  hold(op, side);
  return enqueue(s, std::move(op));
}

CUresult emu_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, std::size_t n, CUstream s) {
  ENTER("cuMemcpyAsync");
  if (const CUresult rc = stream_ok(s); rc != CUDA_SUCCESS) return rc;
  Side d, from;
  if (resolve(dst, n, false, d) != CUDA_SUCCESS || resolve(src, n, false, from) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  return copy(lock, s, d, from, n, 1, n, n, fail_when_run ? injected_rc : CUDA_SUCCESS);
}

// One side of a 2D copy, as CUDA_MEMCPY2D describes it.
CUresult side_2d(CUmemorytype type, const void* host, CUdeviceptr device, std::uint64_t extent, Side& side) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: return resolve(reinterpret_cast<std::uint64_t>(host), extent, true, side);
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: return resolve(device, extent, false, side);
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult emu_cuMemcpy2DAsync(const CUDA_MEMCPY2D* m, CUstream s) {
  ENTER("cuMemcpy2DAsync");
  if (const CUresult rc = stream_ok(s); rc != CUDA_SUCCESS) return rc;
  if (m->srcXInBytes != 0 || m->srcY != 0 || m->dstXInBytes != 0 || m->dstY != 0) return CUDA_ERROR_INVALID_VALUE;
  if (m->Height == 0 || m->WidthInBytes > m->srcPitch || m->WidthInBytes > m->dstPitch ||
      m->srcPitch > INT32_MAX || m->dstPitch > INT32_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t src_extent = (m->Height - 1) * m->srcPitch + m->WidthInBytes;
  const std::uint64_t dst_extent = (m->Height - 1) * m->dstPitch + m->WidthInBytes;
  Side d, from;
  if (side_2d(m->dstMemoryType, m->dstHost, m->dstDevice, dst_extent, d) != CUDA_SUCCESS ||
      side_2d(m->srcMemoryType, m->srcHost, m->srcDevice, src_extent, from) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_VALUE;
  return copy(lock, s, d, from, m->WidthInBytes, m->Height, m->dstPitch, m->srcPitch,
              fail_when_run ? injected_rc : CUDA_SUCCESS);
}

CUresult emu_cuMemHostRegister(void* p, std::size_t bytes, unsigned flags) {
  ENTER("cuMemHostRegister");
  Driver& d = g();
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  (void)flags;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  auto it = d.registrations.lower_bound(at);
  if (it != d.registrations.end() && it->first < at + bytes) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (it != d.registrations.begin() && std::prev(it)->first + std::prev(it)->second.bytes > at)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  d.registrations.emplace(at, Registration{bytes, current()});
  return CUDA_SUCCESS;
}

CUresult emu_cuMemHostUnregister(void* p) {
  ENTER("cuMemHostUnregister");
  Driver& d = g();
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  auto it = d.registrations.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == d.registrations.end()) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  if (it->second.in_use != 0) violation("cuMemHostUnregister of host memory that queued stream work still uses");
  d.registrations.erase(it);
  return CUDA_SUCCESS;
}

CUresult emu_cuStreamCreate(CUstream* s, unsigned flags) {
  ENTER("cuStreamCreate");
  Driver& d = g();
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  (void)flags;
  d.streams.push_back(std::make_unique<CUstream_st>(CUstream_st{current()}));
  CUstream_st* stream = d.streams.back().get();
  std::thread(stream_thread, stream).detach();
  *s = stream;
  return CUDA_SUCCESS;
}

CUresult emu_cuStreamDestroy(CUstream s) {
  ENTER("cuStreamDestroy");
  if (s == nullptr || s->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  if (const CUresult rc = usable(s->ctx); rc == CUDA_ERROR_CONTEXT_IS_DESTROYED) return rc;
  s->destroyed = true;  // its queued work still runs, then its thread ends
  g().changed.notify_all();
  return CUDA_SUCCESS;
}

CUresult emu_cuStreamSynchronize(CUstream s) {
  ENTER("cuStreamSynchronize");
  if (s == nullptr || s->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  // A broken context's running op still ends first (its copy engines stop; no later access).
  g().changed.wait(lock, [&] { return s->queue.empty() || (usable(s->ctx) != CUDA_SUCCESS && !s->running); });
  return usable(s->ctx);
}

CUresult emu_cuStreamQuery(CUstream s) {
  ENTER("cuStreamQuery");
  if (s == nullptr || s->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  // As cuStreamSynchronize: a broken context's running op still ends first (its copy engines
  // stop; no later access), so the caller may free what it used once this says so.
  if (s->running) return CUDA_ERROR_NOT_READY;
  if (const CUresult rc = usable(s->ctx); rc != CUDA_SUCCESS) return rc;
  return s->queue.empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult emu_cuEventCreate(CUevent* e, unsigned flags) {
  ENTER("cuEventCreate");
  Driver& d = g();
  if (const CUresult rc = usable(current()); rc != CUDA_SUCCESS) return rc;
  (void)flags;
  d.events.push_back(std::make_unique<CUevent_st>(CUevent_st{current()}));
  *e = d.events.back().get();
  return CUDA_SUCCESS;
}

CUresult emu_cuEventDestroy(CUevent e) {
  ENTER("cuEventDestroy");
  if (e == nullptr || e->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  e->destroyed = true;  // a stream waiting on it still sees its last record complete
  return CUDA_SUCCESS;
}

CUresult emu_cuEventRecord(CUevent e, CUstream s) {
  ENTER("cuEventRecord");
  if (e == nullptr || e->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  if (const CUresult rc = stream_ok(s); rc != CUDA_SUCCESS) return rc;
  if (e->ctx != s->ctx) return CUDA_ERROR_INVALID_HANDLE;  // cuda.h: the same context
  Op op;
  op.kind = Op::kRecord;
  op.event = e;
  op.generation = ++e->recorded;
  op.fail = fail_when_run ? injected_rc : CUDA_SUCCESS;
  return enqueue(s, std::move(op));
}

CUresult emu_cuEventQuery(CUevent e) {
  ENTER("cuEventQuery");
  if (e == nullptr || e->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  if (const CUresult rc = usable(e->ctx); rc != CUDA_SUCCESS) return rc;
  return e->completed >= e->recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult emu_cuEventSynchronize(CUevent e) {
  ENTER("cuEventSynchronize");
  if (e == nullptr || e->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  const std::uint64_t generation = e->recorded;
  g().changed.wait(lock, [&] { return event_done(e, generation); });
  return usable(e->ctx);
}

CUresult emu_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  ENTER("cuStreamWaitEvent");
  if (e == nullptr || e->destroyed || flags != 0) return CUDA_ERROR_INVALID_HANDLE;
  if (const CUresult rc = stream_ok(s); rc != CUDA_SUCCESS) return rc;
  if (e->recorded == 0) return CUDA_SUCCESS;  // never recorded: nothing to wait for
  Op op;
  op.kind = Op::kWait;
  op.event = e;
  op.generation = e->recorded;
  op.fail = fail_when_run ? injected_rc : CUDA_SUCCESS;
  return enqueue(s, std::move(op));
}

CUresult emu_cuLaunchHostFunc(CUstream s, CUhostFn fn, void* data) {
  ENTER("cuLaunchHostFunc");
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = stream_ok(s); rc != CUDA_SUCCESS) return rc;
  Op op;
  op.kind = Op::kHost;
  op.fn = fn;
  op.data = data;
  op.fail = fail_when_run ? injected_rc : CUDA_SUCCESS;
  return enqueue(s, std::move(op));
}

struct Entry {
  const char* name;
  void* fn;
};

#define EMU_ENTRY(name) {#name, reinterpret_cast<void*>(static_cast<decltype(&::name)>(&emu_##name))},
const Entry kEntries[] = {
    EMU_ENTRY(cuInit) EMU_ENTRY(cuDriverGetVersion) EMU_ENTRY(cuGetErrorName) EMU_ENTRY(cuGetErrorString)
    EMU_ENTRY(cuDeviceGetCount) EMU_ENTRY(cuDeviceGet) EMU_ENTRY(cuDeviceGetName) EMU_ENTRY(cuDeviceGetAttribute)
    EMU_ENTRY(cuDeviceCanAccessPeer) EMU_ENTRY(cuDevicePrimaryCtxRetain) EMU_ENTRY(cuDevicePrimaryCtxRelease)
    EMU_ENTRY(cuCtxSetCurrent) EMU_ENTRY(cuCtxEnablePeerAccess) EMU_ENTRY(cuPointerGetAttribute)
    EMU_ENTRY(cuMemGetInfo) EMU_ENTRY(cuMemAlloc) EMU_ENTRY(cuMemFree) EMU_ENTRY(cuMemsetD8Async)
    EMU_ENTRY(cuMemcpyAsync) EMU_ENTRY(cuMemcpy2DAsync) EMU_ENTRY(cuMemHostRegister) EMU_ENTRY(cuMemHostUnregister)
    EMU_ENTRY(cuStreamCreate) EMU_ENTRY(cuStreamDestroy) EMU_ENTRY(cuStreamSynchronize) EMU_ENTRY(cuStreamQuery)
    EMU_ENTRY(cuEventCreate)
    EMU_ENTRY(cuEventDestroy) EMU_ENTRY(cuEventRecord) EMU_ENTRY(cuEventQuery) EMU_ENTRY(cuEventSynchronize)
    EMU_ENTRY(cuStreamWaitEvent) EMU_ENTRY(cuLaunchHostFunc)};
#undef EMU_ENTRY

}  // namespace

// The driver library's own exports: what CudaDriver::load finds by dlsym.
extern "C" {

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  return emu_cuDriverGetVersion(version);
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult rc, const char** name) {
  return emu_cuGetErrorName(rc, name);
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version,
                                                                    cuuint64_t flags,
                                                                    CUdriverProcAddressQueryResult* status) {
  (void)flags;
  if (symbol == nullptr || fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (version > CUDA_VERSION) return CUDA_ERROR_INVALID_VALUE;
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, symbol) == 0) {
      *fn = e.fn;
      if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *fn = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) void rig_emulated_cuda_fail(const char* call, unsigned n, int result,
                                                                   int when_run) {
  std::lock_guard lock(g().mu);
  g().fault = {call, n, static_cast<CUresult>(result), when_run != 0};
}

__attribute__((visibility("default"))) void rig_emulated_cuda_hold(int on) {
  std::lock_guard lock(g().mu);
  g().held = on != 0;
  g().passes = 0;
  g().changed.notify_all();
}

__attribute__((visibility("default"))) void rig_emulated_cuda_hold_after(unsigned n) {
  std::lock_guard lock(g().mu);
  g().held = true;
  g().passes = n;
  g().changed.notify_all();
}

__attribute__((visibility("default"))) void rig_emulated_cuda_settle() {
  Driver& d = g();
  std::unique_lock lock(d.mu);
  d.changed.wait(lock, [&] {
    for (const auto& s : d.streams) {
      if (s->running || (!s->queue.empty() && runnable(s->queue.front()))) return false;
    }
    return true;
  });
}

__attribute__((visibility("default"))) std::uint64_t rig_emulated_cuda_pageable_copies() {
  return g().pageable.load(std::memory_order_relaxed);  // a counter: no other memory rides on it
}

__attribute__((visibility("default"))) std::uint64_t rig_emulated_cuda_registered_ranges() {
  std::lock_guard lock(g().mu);
  return g().registrations.size();
}

}  // extern "C"

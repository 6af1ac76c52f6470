// rig-gpu-landing: the landing figures of a GPU (issue 10), what rig-bench's figures with the
// agent's devices on CUDA are judged against, measured with the same driver loader as rig-agent
// (agent/devices/cuda/cuda_driver.h: libcuda.so.1 by dlopen) on GPU 0, each copy on one stream and timed
// to its cuStreamSynchronize:
//   host -> device and device -> host of --bytes (64 MiB): from pinned (cuMemHostRegister'ed)
//   and from pageable host memory;
//   device -> device of --d2d-bytes (1 GiB) within the GPU (cuMemcpyAsync of device memory);
//   a 64-byte host -> device copy and its synchronisation: p50 and p99 over --count;
//   the same copy learned done the two ways rig-agent learns a GPU's completion: an event
//   recorded behind it and polled with cuEventQuery until ready (what the agent's polling mode
//   does), and a host function queued behind it that writes an eventfd the thread sleeps on
//   (cuLaunchHostFunc: the agent's wake while it waits for its client); p50 and p99 of each;
//   registering --bytes of host memory (cuMemHostRegister, then unregister);
//   a loopback TCP stream landed in the GPU's memory --bytes at a time, the ways the agent could
//   land a copy's payload (stream_landing.h: the stream alone, received whole then copied,
//   copied --chunk by --chunk as it comes, through a bounce buffer, from pageable memory).
// Prints JSON on stdout and a summary on stderr. Without a usable GPU: "skipped: no GPU (why)"
// on stderr and exit 77.
#include <CLI/CLI.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../timing.h"
#include "devices/cuda/cuda_gpus.h"
#include "stream_landing.h"

namespace {

using rig::agent::CudaDriver;
using rig::agent::CudaGpus;
using Clock = std::chrono::steady_clock;

// Throws with the driver's name and message of a failed call.
void ok(const CudaDriver& d, const char* call, CUresult rc) {
  if (rc != CUDA_SUCCESS) throw std::runtime_error(d.error(call, rc));
}

// A host function: writes 1 to the eventfd its argument is (the fd by value, as the agent's
// wake does).
void CUDA_CB post_eventfd(void* fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(static_cast<int>(reinterpret_cast<std::intptr_t>(fd)), &one, sizeof one);
}

// An eventfd, closed when it goes.
struct EventFd {
  EventFd() : fd(::eventfd(0, EFD_CLOEXEC)) {
    if (fd < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  ~EventFd() { ::close(fd); }
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  int fd;
};

// Page-aligned host memory, touched (so that the pageable copies do not time page faults).
struct HostBuffer {
  explicit HostBuffer(std::size_t n) : bytes(n), data(static_cast<std::byte*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    if (data == nullptr) throw std::runtime_error("out of host memory for " + std::to_string(n) + " bytes");
    std::memset(data, 0x5a, n);
  }
  ~HostBuffer() { std::free(data); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  std::size_t bytes;
  std::byte* data;
};

// One GPU's context, stream and two device buffers for the run.
class Gpu {
 public:
  Gpu(const CudaGpus& gpus, std::size_t device_bytes) : d_(gpus.driver()), hold_(gpus, 0) {
    if (hold_.context() == nullptr) throw std::runtime_error("GPU 0: " + hold_.health().why());
    ok(d_, "cuCtxSetCurrent", d_.cuCtxSetCurrent(hold_.context()));
    ok(d_, "cuStreamCreate", d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    ok(d_, "cuMemAlloc", d_.cuMemAlloc(&a_, device_bytes));
    ok(d_, "cuMemAlloc", d_.cuMemAlloc(&b_, device_bytes));
    ok(d_, "cuMemsetD8Async", d_.cuMemsetD8Async(a_, 1, device_bytes, stream_));
    ok(d_, "cuStreamSynchronize", d_.cuStreamSynchronize(stream_));
  }
  ~Gpu() {
    d_.cuStreamSynchronize(stream_);
    d_.cuMemFree(a_);
    d_.cuMemFree(b_);
    d_.cuStreamDestroy(stream_);
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  // How a timed copy is learned done: its synchronisation, an event polled, a host function.
  enum class Done { kSynchronised, kEventPolled, kHostFunction };
  // Seconds of one copy of `n` bytes until it is learned done as `done` says. kEventPolled
  // records `event` behind it and polls it; kHostFunction queues a host function behind it that
  // writes `event_fd`, which this thread reads (sleeping until it is written).
  double time_copy(CUdeviceptr dst, CUdeviceptr src, std::size_t n, Done done = Done::kSynchronised,
                   CUevent event = nullptr, int event_fd = -1) {
    const auto t0 = Clock::now();
    ok(d_, "cuMemcpyAsync", d_.cuMemcpyAsync(dst, src, n, stream_));
    switch (done) {
      case Done::kSynchronised:
        ok(d_, "cuStreamSynchronize", d_.cuStreamSynchronize(stream_));
        break;
      case Done::kEventPolled: {
        ok(d_, "cuEventRecord", d_.cuEventRecord(event, stream_));
        CUresult rc;
        while ((rc = d_.cuEventQuery(event)) == CUDA_ERROR_NOT_READY) {
        }
        ok(d_, "cuEventQuery", rc);
        break;
      }
      case Done::kHostFunction: {
        void* fd = reinterpret_cast<void*>(static_cast<std::intptr_t>(event_fd));
        ok(d_, "cuLaunchHostFunc", d_.cuLaunchHostFunc(stream_, post_eventfd, fd));
        std::uint64_t count = 0;
        if (::read(event_fd, &count, sizeof count) != static_cast<ssize_t>(sizeof count)) {
          throw std::runtime_error("read of the host function's eventfd failed");
        }
        break;
      }
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }
  // GB/s of the median of `reps` copies (after one not timed).
  double rate(CUdeviceptr dst, CUdeviceptr src, std::size_t n, int reps) {
    time_copy(dst, src, n);
    std::vector<double> s;
    for (int i = 0; i < reps; ++i) s.push_back(time_copy(dst, src, n));
    return static_cast<double>(n) / rig::bench::percentile(s, 50) / 1e9;
  }

  const CudaDriver& driver() const { return d_; }
  CUstream stream() const { return stream_; }
  CUdeviceptr a() const { return a_; }
  CUdeviceptr b() const { return b_; }

 private:
  const CudaDriver& d_;
  CudaGpus::Hold hold_;
  CUstream stream_ = nullptr;
  CUdeviceptr a_ = 0, b_ = 0;
};

CUdeviceptr host_ptr(const HostBuffer& h) { return reinterpret_cast<CUdeviceptr>(h.data); }

// Microseconds of `count` tiny copies timed by `once` (after 100 not counted): p50 and p99 into
// j[key + "_p50_us"] and j[key + "_p99_us"].
template <class Once>
void tiny_figure(nlohmann::json& j, const std::string& key, int count, Once once) {
  std::vector<double> us;
  for (int i = 0; i < count + 100; ++i) {
    const double s = once();
    if (i >= 100) us.push_back(s * 1e6);
  }
  j[key + "_p50_us"] = rig::bench::percentile(us, 50);
  j[key + "_p99_us"] = rig::bench::percentile(us, 99);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rig-gpu-landing: a GPU's landing figures (copies to, from and within it, from pinned and pageable memory)"};
  std::size_t bytes = 64u << 20, d2d_bytes = std::size_t{1} << 30;
  std::size_t chunk = 4u << 20;
  int reps = 10, count = 2000;
  app.add_option("--bytes", bytes, "bytes of the host <-> device copies and of the registration")
      ->capture_default_str()->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 36));
  app.add_option("--d2d-bytes", d2d_bytes, "bytes of the device -> device copy")
      ->capture_default_str()->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 36));
  app.add_option("--chunk", chunk, "bytes of each chunk the TCP stream's landing copies to the GPU as it comes "
                 "(at most --bytes, which it must divide)")
      ->capture_default_str()->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 32));
  app.add_option("--reps", reps, "copies timed per figure (the median counts)")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--count", count, "64-byte copies timed for p50 and p99")->capture_default_str()
      ->check(CLI::Range(10, 1'000'000));
  CLI11_PARSE(app, argc, argv);

  chunk = std::min(chunk, bytes);
  if (bytes % chunk != 0) {
    std::fprintf(stderr, "rig-gpu-landing: --chunk %zu does not divide --bytes %zu\n", chunk, bytes);
    return 2;
  }
  const CudaGpus* gpus = nullptr;
  if (const rig::wire::Outcome o = CudaGpus::probe(gpus); !o.ok()) {
    std::fprintf(stderr, "rig-gpu-landing: skipped: no GPU (%s)\n", o.why().c_str());
    return 77;
  }
  try {
    const CudaDriver& d = gpus->driver();
    // Before the Gpu, so closed after its destructor synchronised the stream: a host function
    // still queued when a read failed writes it before it is closed.
    const EventFd wake;
    Gpu gpu(*gpus, std::max(bytes, d2d_bytes));
    HostBuffer pageable(bytes), pinned(bytes);

    const auto r0 = Clock::now();
    ok(d, "cuMemHostRegister", d.cuMemHostRegister(pinned.data, bytes, CU_MEMHOSTREGISTER_PORTABLE));
    const double register_ms = std::chrono::duration<double, std::milli>(Clock::now() - r0).count();

    nlohmann::json j;
    j["tool"] = "rig-gpu-landing";
    j["gpu"] = gpus->gpus()[0].name;
    j["arch"] = gpus->gpus()[0].arch;
    j["driver"] = rig::agent::cuda_version_string(d.version());
    j["bytes"] = bytes;
    j["d2d_bytes"] = d2d_bytes;
    j["register_ms"] = register_ms;
    j["h2d_pinned_gbs"] = gpu.rate(gpu.a(), host_ptr(pinned), bytes, reps);
    j["h2d_pageable_gbs"] = gpu.rate(gpu.a(), host_ptr(pageable), bytes, reps);
    j["d2h_pinned_gbs"] = gpu.rate(host_ptr(pinned), gpu.a(), bytes, reps);
    j["d2h_pageable_gbs"] = gpu.rate(host_ptr(pageable), gpu.a(), bytes, reps);
    j["d2d_gbs"] = gpu.rate(gpu.b(), gpu.a(), d2d_bytes, reps);
    CUevent e = nullptr;
    ok(d, "cuEventCreate", d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    for (const auto& [key, done] : {std::pair{"tiny_h2d_sync", Gpu::Done::kSynchronised},
                                    std::pair{"tiny_h2d_event_poll", Gpu::Done::kEventPolled},
                                    std::pair{"tiny_h2d_host_function", Gpu::Done::kHostFunction}}) {
      tiny_figure(j, key, count, [&] { return gpu.time_copy(gpu.a(), host_ptr(pinned), 64, done, e, wake.fd); });
    }
    d.cuEventDestroy(e);
    ok(d, "cuMemHostUnregister", d.cuMemHostUnregister(pinned.data));
    const rig::bench::refs::StreamLanding s =
        rig::bench::refs::land_tcp_streams(d, gpu.stream(), gpu.a(), bytes, chunk, reps);
    j["chunk"] = chunk;
    j["tcp_stream_gbs"] = s.tcp_gbs;
    j["tcp_landed_whole_gbs"] = s.whole_gbs;
    j["tcp_landed_chunked_gbs"] = s.chunked_gbs;
    j["tcp_landed_staged_gbs"] = s.staged_gbs;
    j["tcp_landed_pageable_gbs"] = s.pageable_gbs;

    std::cout << j.dump(2) << "\n";
    std::fprintf(stderr,
                 "rig-gpu-landing: %s (%s), driver %s: h2d %.1f GB/s pinned, %.1f pageable; d2h %.1f pinned, %.1f "
                 "pageable (%zu MiB); d2d %.0f GB/s (%zu MiB); 64 B h2d + sync p50 %.1f us, p99 %.1f us; "
                 "+ event polled p50 %.1f us; + host function's wake p50 %.1f us; registering %zu MiB %.2f ms\n",
                 j["gpu"].get<std::string>().c_str(), j["arch"].get<std::string>().c_str(),
                 j["driver"].get<std::string>().c_str(), j["h2d_pinned_gbs"].get<double>(),
                 j["h2d_pageable_gbs"].get<double>(), j["d2h_pinned_gbs"].get<double>(),
                 j["d2h_pageable_gbs"].get<double>(), bytes >> 20, j["d2d_gbs"].get<double>(), d2d_bytes >> 20,
                 j["tiny_h2d_sync_p50_us"].get<double>(), j["tiny_h2d_sync_p99_us"].get<double>(),
                 j["tiny_h2d_event_poll_p50_us"].get<double>(), j["tiny_h2d_host_function_p50_us"].get<double>(),
                 bytes >> 20,
                 register_ms);
    std::fprintf(stderr,
                 "rig-gpu-landing: a loopback TCP stream, %zu MiB at a time: %.2f GB/s alone; landed in the GPU "
                 "received whole then copied %.2f, copied by %zu KiB chunks as they come %.2f, through a bounce "
                 "buffer %.2f, from pageable chunks %.2f\n",
                 bytes >> 20, s.tcp_gbs, s.whole_gbs, chunk >> 10, s.chunked_gbs, s.staged_gbs, s.pageable_gbs);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rig-gpu-landing: %s\n", e.what());
    return 1;
  }
}

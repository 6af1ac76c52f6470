#include "stream_landing.h"

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../timing.h"
#include "counted_io.h"
#include "loopback_pair.h"

namespace rig::bench::refs {
namespace {

using rig::agent::CudaDriver;
using Clock = std::chrono::steady_clock;

enum class Way { kTcp, kWhole, kChunked, kStaged, kPageable };
constexpr int kWays = 5;
constexpr std::size_t kSlots = 4;  // chunks in flight to the GPU

void ok(const CudaDriver& d, const char* call, CUresult rc) {
  if (rc != CUDA_SUCCESS) throw std::runtime_error(d.error(call, rc));
}

// Page-aligned host memory, touched once.
struct Pages {
  explicit Pages(std::size_t n) : data(static_cast<std::byte*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    if (data == nullptr) throw std::runtime_error("out of host memory for " + std::to_string(n) + " bytes");
    std::memset(data, 0, n);
  }
  ~Pages() { std::free(data); }
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  std::byte* data;
};

// Pages registered with the driver (cuMemHostRegister) while it lives.
struct PinnedPages : Pages {
  PinnedPages(const CudaDriver& d, std::size_t n) : Pages(n), d_(d) {
    ok(d, "cuMemHostRegister", d.cuMemHostRegister(data, n, CU_MEMHOSTREGISTER_PORTABLE));
  }
  ~PinnedPages() { d_.cuMemHostUnregister(data); }
  const CudaDriver& d_;
};

// The receiving end: lands `bytes` of the stream in dst one way at a time.
class Receiver {
 public:
  Receiver(const CudaDriver& d, CUstream stream, CUdeviceptr dst, int fd, std::size_t bytes, std::size_t chunk)
      : d_(d), stream_(stream), dst_(dst), fd_(fd), bytes_(bytes), chunk_(chunk), whole_(d, bytes),
        ring_(d, kSlots * chunk), pageable_ring_(kSlots * chunk), bounce_(chunk) {
    for (CUevent& e : events_) {
      ok(d, "cuEventCreate", d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
      ok(d, "cuEventRecord", d.cuEventRecord(e, stream_));
    }
  }
  ~Receiver() {
    d_.cuStreamSynchronize(stream_);
    for (CUevent e : events_) d_.cuEventDestroy(e);
  }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  // GB/s of the median of `reps` landings (after one not timed).
  double rate(Way way, int reps) {
    land(way);
    std::vector<double> s;
    for (int i = 0; i < reps; ++i) s.push_back(land(way));
    return static_cast<double>(bytes_) / rig::bench::percentile(s, 50) / 1e9;
  }

 private:
  // Seconds to take `bytes` of the stream and land them the way asked.
  double land(Way way) {
    const auto t0 = Clock::now();
    if (way == Way::kWhole) {
      recv_exact(whole_.data, bytes_);
      copy(dst_, whole_.data, bytes_);
    } else {
      for (std::size_t off = 0, k = 0; off < bytes_; off += chunk_, ++k) land_chunk(way, off, k % kSlots);
    }
    ok(d_, "cuStreamSynchronize", d_.cuStreamSynchronize(stream_));
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  void land_chunk(Way way, std::size_t off, std::size_t slot) {
    std::byte* pinned = ring_.data + slot * chunk_;
    std::byte* pageable = pageable_ring_.data + slot * chunk_;
    switch (way) {
      case Way::kTcp:
        recv_exact(bounce_.data, chunk_);
        return;
      case Way::kChunked:
        reuse(slot);
        recv_exact(pinned, chunk_);
        break;
      case Way::kStaged:
        recv_exact(bounce_.data, chunk_);
        reuse(slot);
        std::memcpy(pinned, bounce_.data, chunk_);
        break;
      case Way::kPageable:
        reuse(slot);
        recv_exact(pageable, chunk_);
        pinned = pageable;
        break;
      case Way::kWhole:
        return;
    }
    copy(dst_ + off, pinned, chunk_);
    ok(d_, "cuEventRecord", d_.cuEventRecord(events_[slot], stream_));
  }

  // Waits until the copy from chunk `slot` completed.
  void reuse(std::size_t slot) {
    CUresult rc;
    while ((rc = d_.cuEventQuery(events_[slot])) == CUDA_ERROR_NOT_READY) {
    }
    ok(d_, "cuEventQuery", rc);
  }

  void copy(CUdeviceptr dst, const std::byte* src, std::size_t n) {
    ok(d_, "cuMemcpyAsync", d_.cuMemcpyAsync(dst, reinterpret_cast<CUdeviceptr>(src), n, stream_));
  }

  void recv_exact(std::byte* p, std::size_t n) {
    while (n > 0) {
      const std::size_t r = recv_some(fd_, p, n, MSG_WAITALL, calls_);
      if (r == 0) throw std::runtime_error("the stream ended early");
      p += r;
      n -= r;
    }
  }

  const CudaDriver& d_;
  CUstream stream_;
  CUdeviceptr dst_;
  int fd_;
  std::size_t bytes_, chunk_;
  PinnedPages whole_, ring_;
  Pages pageable_ring_, bounce_;
  std::array<CUevent, kSlots> events_{};
  std::uint64_t calls_ = 0;
};

}  // namespace

StreamLanding land_tcp_streams(const CudaDriver& d, CUstream stream, CUdeviceptr dst, std::size_t bytes,
                               std::size_t chunk, int reps) {
  if (chunk == 0 || bytes % chunk != 0) throw std::invalid_argument("the bytes landed must be whole chunks");
  LoopbackPair pair = loopback_pair();
  // Every way takes reps + 1 landings of `bytes`.
  const std::uint64_t total = std::uint64_t{kWays} * static_cast<std::uint64_t>(reps + 1) * bytes;
  std::exception_ptr sender_failed;
  std::thread sender([&] {
    try {
      const std::vector<std::byte> src(chunk, std::byte{0x5a});
      std::uint64_t calls = 0;
      for (std::uint64_t sent = 0; sent < total; sent += chunk) send_all(pair.client.get(), src.data(), chunk, calls);
    } catch (...) {
      sender_failed = std::current_exception();
      ::shutdown(pair.client.get(), SHUT_WR);  // the receiver sees the end rather than waiting
    }
  });
  StreamLanding out;
  try {
    Receiver r(d, stream, dst, pair.server.get(), bytes, chunk);
    out.tcp_gbs = r.rate(Way::kTcp, reps);
    out.whole_gbs = r.rate(Way::kWhole, reps);
    out.chunked_gbs = r.rate(Way::kChunked, reps);
    out.staged_gbs = r.rate(Way::kStaged, reps);
    out.pageable_gbs = r.rate(Way::kPageable, reps);
  } catch (...) {
    ::shutdown(pair.client.get(), SHUT_RDWR);  // the sender's send fails rather than blocks
    sender.join();
    throw;
  }
  sender.join();
  if (sender_failed) std::rethrow_exception(sender_failed);
  return out;
}

}  // namespace rig::bench::refs

// The landing of a TCP stream into a GPU's memory, the ways rig-agent could land a copy's payload
// (issue 10, item 4: "staged, and direct from the receive buffer itself"): one loopback TCP
// connection (TCP_NODELAY, as on rig's sockets) whose sender thread sends without pause, and a
// receiver that lands each `bytes` it takes in GPU memory on one stream. Each way is timed from
// the first byte asked for to the GPU's stream synchronised, median of `reps`:
//   tcp:      received into one pageable chunk, not landed (what the stream gives on this host);
//   whole:    received into one pinned buffer of `bytes`, then one copy from there (the agent
//             where a part is not copied as it comes: its handover is behind other work, the
//             part is 4 MiB or less, or an earlier part touches its destination);
//   chunked:  received straight into a ring of pinned chunks, each copied as soon as it is in,
//             so that while chunk k crosses to the GPU chunk k+1 is received (the agent's
//             Incoming::stream, which copies ranges of the part's staging as they land);
//   staged:   as chunked, but received into a pageable chunk and memcpy'd into the pinned one
//             (one more pass over the bytes on the host);
//   pageable: as chunked, from a ring of pageable chunks (the driver's pageable path).
// A chunk is reused only once its copy's event completed (cuEventQuery polled).
#pragma once

#include <cstddef>

#include "devices/cuda/cuda_driver.h"

namespace rig::bench::refs {

struct StreamLanding {
  double tcp_gbs = 0;
  double whole_gbs = 0;
  double chunked_gbs = 0;
  double staged_gbs = 0;
  double pageable_gbs = 0;
};

// Lands `bytes` (a multiple of `chunk`) into `dst` on `stream`, in the calling thread's current
// context, each of the ways above; throws with the driver's words or errno's text.
StreamLanding land_tcp_streams(const rig::agent::CudaDriver& d, CUstream stream, CUdeviceptr dst,
                               std::size_t bytes, std::size_t chunk, int reps);

}  // namespace rig::bench::refs

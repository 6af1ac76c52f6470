// The transport's process-wide choices that a link's options name (rig/remote/link.h): which
// socket backend a connection runs on, the polling mode's default spin, and the zero-copy
// threshold's "decide from the peer" value. Public: LinkOptions holds them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rig/export.h"

namespace rig::engine {

/// The socket backend of a connection: io_uring, or plain blocking system calls.
enum class Backend { kUring, kPlain };

/// The backend a new connection uses: RIG_SOCKET_BACKEND=plain|uring if set, else io_uring when
/// the kernel lets this process set up a ring, else plain sockets.
RIG_API Backend default_backend();
/// "io_uring" or "plain".
RIG_API const char* backend_name(Backend b);
/// The polling mode's spin in microseconds that a link or agent takes unless told otherwise:
/// RIG_POLL_US if set (0 to 1000000), else 0 (off).
RIG_API int default_poll_us();

/// A zero-copy threshold meaning "pick it from the peer": RIG_SEND_ZC_BYTES if set, else off
/// when the peer is on loopback and 1 MiB otherwise (docs/TUNING.md).
inline constexpr std::size_t kSendZcAuto = SIZE_MAX;

}  // namespace rig::engine

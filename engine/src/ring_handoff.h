// Internal: ThreadSanitizer does not see liburing map and unmap a ring's memory (raw syscalls),
// so when one thread's ring is unmapped at its exit and a later ring lands at the same address,
// TSan takes the two for one memory shared without synchronisation. Every ring of the engine
// calls ring_created() after its set-up and ring_destroyed() before its teardown: one object
// orders each teardown before every later set-up, as the kernel's munmap/mmap does.
#pragma once

#if defined(RIG_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace rig::engine::detail {

#if defined(RIG_TSAN)
inline char g_ring_handoff;
inline void ring_created() { __tsan_acquire(&g_ring_handoff); }
inline void ring_destroyed() { __tsan_release(&g_ring_handoff); }
#else
inline void ring_created() {}
inline void ring_destroyed() {}
#endif

}  // namespace rig::engine::detail

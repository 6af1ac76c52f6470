// The C ABI's handles (rig/remote.h): which are live, so that a null or released handle is
// answered RIG_BAD_HANDLE instead of being followed; and the barrier that turns the C++ API's
// exceptions into the ABI's results and texts.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string_view>

#include "rig/remote.h"
#include "rig/remote/job.h"
#include "rig/remote/proxy.h"

/// A job's handle: the caller's reference to the job.
struct rig_job {
  std::shared_ptr<rig::remote::Job> job;
};

/// An image's handle: the image and the proxy that loaded it (entry and prepare ask through it).
struct rig_image {
  rig::remote::Image image;
  rig::remote::Proxy* proxy = nullptr;
};

namespace rig::remote::c_abi {

enum class HandleKind : std::uint8_t { kJob, kLink, kProxy, kImage };

/// The live handles of the process. Cold path only (a shared lock per check): room, submit,
/// commit and signaled check none.
class Handles {
 public:
  /// Records `p` as live of kind `k`; throws std::bad_alloc.
  static void add(const void* p, HandleKind k);
  /// Forgets `p`; whether it was live of kind `k`.
  static bool remove(const void* p, HandleKind k);
  /// Whether `p` is live of kind `k` (false for null).
  static bool live(const void* p, HandleKind k);
  /// Runs f() (which must not block) if `p` is live of kind `k`, holding the table's shared
  /// lock throughout, so that what `p` names cannot end meanwhile: a link ends on the reaper
  /// thread, which forgets it under the exclusive lock first. f()'s result, else `otherwise`.
  template <class F>
  static int while_live(const void* p, HandleKind k, int otherwise, F&& f) {
    std::shared_lock lock(mutex());
    return live_locked(p, k) ? f() : otherwise;
  }

 private:
  static std::shared_mutex& mutex();
  static bool live_locked(const void* p, HandleKind k);
};

/// Copies `s` into `t` as rig_text says (t may be null). Never throws.
void put_text(rig_text* t, std::string_view s) noexcept;

/// The typed views of the handles, checked: null if the handle is not live. A link's view is had
/// only inside Handles::while_live (link_of_locked), since a link may end on the reaper thread.
Job* job_of(const rig_job* j);
Link* link_of_locked(const rig_link* l);
Proxy* proxy_of(const rig_proxy* d);

/// Runs f(), which returns a rig_result, and turns what it throws into the ABI's results: a
/// Fault into RIG_FAULT, std::invalid_argument into RIG_INVALID_ARGUMENT, anything else into
/// RIG_ERROR (out of memory: "out of memory"), the text into `why`.
template <class F>
int guarded(rig_text* why, F&& f) noexcept {
  try {
    return f();
  } catch (const edge::Fault& e) {
    put_text(why, e.what());
    return RIG_FAULT;
  } catch (const std::invalid_argument& e) {
    put_text(why, e.what());
    return RIG_INVALID_ARGUMENT;
  } catch (const std::bad_alloc&) {
    put_text(why, "out of memory");
    return RIG_ERROR;
  } catch (const std::exception& e) {
    put_text(why, e.what());
    return RIG_ERROR;
  } catch (...) {
    put_text(why, "an unknown exception");
    return RIG_ERROR;
  }
}

/// A capability as the C ABI gives it.
inline rig_capability to_c(const abi::Capability& cap) {
  if (const auto* d = std::get_if<abi::Device>(&cap)) return rig_capability{RIG_CAPABILITY_DEVICE, d->id};
  return rig_capability{RIG_CAPABILITY_HOST, 0};
}

/// RIG_BAD_HANDLE, with a text naming what was bad.
int bad_handle(rig_text* why, const char* what) noexcept;

/// Drops a reference to a job without blocking the caller: the last one ends the job (its close,
/// then joining its threads) on the library's reaper thread, which also forgets its links'
/// handles. Never throws; with no thread to be had, the reference is kept (leaked) rather than
/// dropped where it would block.
void drop(std::shared_ptr<Job> job) noexcept;

}  // namespace rig::remote::c_abi

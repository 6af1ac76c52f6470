// rig/remote.h: queues, the timeline and stopping. signaled checks nothing but null (it is read
// as often as the word); the others check the handle first.
#include <optional>
#include <string>

#include "c_handles.h"
#include "rig/remote.h"
#include "rig/remote/proxy.h"

namespace ra = rig::remote;
using namespace rig::remote::c_abi;  // the ABI's handles, texts and barrier (c_handles.h)

extern "C" {

int rig_proxy_grow(rig_proxy* d, uint64_t* short_bytes) {
  if (proxy_of(d) == nullptr) return RIG_BAD_HANDLE;
  if (short_bytes != nullptr) *short_bytes = 0;
  return RIG_OK;  // Grown: room never answers RIG_GROW
}

uint64_t rig_proxy_signaled(const rig_proxy* d) {
  if (d == nullptr) return 0;
  return ra::Proxy::from_c(const_cast<rig_proxy*>(d))->signaled();
}

int rig_proxy_sleep(rig_proxy* d, uint64_t seen, uint64_t still_ms, rig_text* why) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return bad_handle(why, "sleep: not a live proxy");
  return guarded(why, [&] {
    p->sleep(seen, still_ms);
    return RIG_OK;
  });
}

int rig_proxy_stop(rig_proxy* d, const char* fault) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return RIG_BAD_HANDLE;
  return guarded(nullptr, [&] {
    p->stop(fault == nullptr ? std::nullopt : std::optional<std::string>(fault));
    return RIG_OK;
  });
}

int rig_proxy_capability(const rig_proxy* d, rig_capability* capability) {
  const ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return RIG_BAD_HANDLE;
  if (capability == nullptr) return RIG_INVALID_ARGUMENT;
  *capability = to_c(p->capability());
  return RIG_OK;
}

int rig_proxy_link(const rig_proxy* d, rig_link** link) {
  const ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return RIG_BAD_HANDLE;
  if (link != nullptr) *link = reinterpret_cast<rig_link*>(&p->link());
  return RIG_OK;
}

}  // extern "C"

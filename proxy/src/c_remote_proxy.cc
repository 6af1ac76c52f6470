// rig/remote.h: proxies, regions and images. Each function is an exception barrier
// (c_abi::guarded); a handle is checked before it is followed.
#include <cstring>
#include <span>
#include <string>

#include "c_handles.h"
#include "rig/remote.h"
#include "rig/remote/proxy.h"

namespace ra = rig::remote;
using namespace rig::remote::c_abi;  // the ABI's handles, texts and barrier (c_handles.h)

namespace {

rig_region to_c(const ra::Region& r) {
  rig_region c{};
  c.kind = r.kind == ra::Region::Kind::kWord ? RIG_REGION_WORD : RIG_REGION_OBJECT;
  c.device = r.device;
  c.id = r.id;
  c.bytes = r.bytes;
  c.word = r.word;
  c.link = reinterpret_cast<const rig_link*>(r.link);
  return c;
}

ra::Region from_c(const rig_region& c) {
  ra::Region r;
  r.kind = c.kind == RIG_REGION_WORD ? ra::Region::Kind::kWord : ra::Region::Kind::kObject;
  r.device = c.device;
  r.id = c.id;
  r.bytes = c.bytes;
  r.word = c.word;
  r.link = reinterpret_cast<const ra::Link*>(c.link);
  return r;
}

ra::abi::Capability from_c(const rig_capability& c) {
  if (c.kind == RIG_CAPABILITY_HOST) return ra::abi::Host{};
  if (c.kind == RIG_CAPABILITY_DEVICE) return ra::abi::Device{c.id};
  throw std::invalid_argument("make: capability kind " + std::to_string(c.kind) + " is neither Host nor Device");
}

int invalid(rig_text* why, const char* text) {
  put_text(why, text);
  return RIG_INVALID_ARGUMENT;
}

// A mapping's answer: RIG_OK with the region, or RIG_NONE.
int mapping(const rig::edge::Mapping<ra::Region>& m, rig_region* out) {
  if (!m) return RIG_NONE;
  if (out != nullptr) *out = to_c(*m);
  return RIG_OK;
}

}  // namespace

extern "C" {

int rig_device_make(const rig_device* d, uint64_t* word, rig_proxy** proxy, rig_text* why) {
  if (d == nullptr || proxy == nullptr) return invalid(why, "make: the device and proxy must not be NULL");
  if (d->size < sizeof(rig_device)) return invalid(why, "make: rig_device's size is not set");
  // Made while the link is held live (a link may end on the reaper thread); recorded after,
  // when the proxy's own reference to the job keeps the link.
  std::unique_ptr<ra::Proxy> made;
  const int rc = Handles::while_live(d->link, HandleKind::kLink, -1, [&] {
    return guarded(why, [&] {
      ra::Link& link = *link_of_locked(d->link);
      const ra::Account* account = link.account(d->account);
      if (account == nullptr) {
        throw std::invalid_argument("make: the link's agent opened no device " + std::to_string(d->account));
      }
      made = ra::device(link, *account, from_c(d->capability)).make(word);
      return RIG_OK;
    });
  });
  if (rc == -1) return bad_handle(why, "make: not a live link");
  if (rc != RIG_OK) return rc;
  return guarded(why, [&] {
    Handles::add(made.get(), HandleKind::kProxy);  // on a throw, made unregisters as it goes
    *proxy = made.release()->c_handle();
    return RIG_OK;
  });
}

int rig_proxy_release(rig_proxy* d) {
  if (!Handles::remove(d, HandleKind::kProxy)) return -RIG_BAD_HANDLE;
  ra::Proxy* p = ra::Proxy::from_c(d);
  std::shared_ptr<ra::Job> job = p->link().job().shared_from_this();
  int quiet = 0;
  try {
    if (!p->stopped()) p->stop(std::nullopt);
    quiet = p->word_quiet() ? 1 : 0;
  } catch (...) {
  }
  delete p;  // the job stays alive through `job`: the proxy's end blocks on nothing
  drop(std::move(job));
  return quiet;
}

const void* rig_proxy_key(void) { return ra::Proxy::key(); }

int rig_proxy_facts(const rig_proxy* d, rig_facts* facts) {
  const ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return RIG_BAD_HANDLE;
  if (facts == nullptr) return RIG_INVALID_ARGUMENT;
  return guarded(nullptr, [&] {
    const ra::Facts f = p->facts();
    rig_facts c{};
    c.size = facts->size;
    std::memcpy(c.arch, f.arch.data(), std::min(f.arch.size(), sizeof c.arch - 1));
    c.budget = f.budget;
    c.n_queues = static_cast<uint32_t>(f.queues.size());
    c.copy_engine = f.copy_engine ? static_cast<uint32_t>(f.copy_engine->count) : 0;
    c.completion = f.completion == rig::edge::Completion::kHost ? 0 : 1;
    c.waits_hosts = f.waits.hosts ? 1 : 0;
    c.waits_most = f.waits.most;
    c.may_block = f.may_block ? 1 : 0;
    c.has_hang_ms = f.hang_ms ? 1 : 0;
    c.hang_ms = f.hang_ms.value_or(0);
    c.maps_host = f.maps_host ? 1 : 0;
    c.host_addresses = f.host_addresses ? 1 : 0;
    c.cache_bytes = f.cache_bytes;
    c.capability = to_c(f.capability);
    c.word = to_c(f.word);
    c.has_bus = f.bus ? 1 : 0;
    std::memcpy(facts, &c, std::min(facts->size, sizeof c));
    return RIG_OK;
  });
}

int rig_proxy_name(const rig_proxy* d, rig_text* name) {
  const ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return bad_handle(name, "");
  put_text(name, p->name());
  return RIG_OK;
}

int rig_proxy_alloc(rig_proxy* d, uint32_t memory, uint64_t n, rig_region* region, rig_text* why) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return bad_handle(why, "alloc: not a live proxy");
  if (memory != RIG_MEMORY_DEVICE && memory != RIG_MEMORY_HOST) return invalid(why, "alloc: memory is none of rig_memory");
  return guarded(why, [&] {
    const auto r = p->alloc(static_cast<rig::edge::Memory>(memory), n);
    return mapping(r, region);
  });
}

int rig_proxy_free(rig_proxy* d, const rig_region* region) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return RIG_BAD_HANDLE;
  if (region == nullptr) return RIG_INVALID_ARGUMENT;
  return guarded(nullptr, [&] {
    p->free(from_c(*region));
    return RIG_OK;
  });
}

int rig_region_locate(const rig_region* region, rig_location* location) {
  if (region == nullptr || location == nullptr) return RIG_INVALID_ARGUMENT;
  const rig::edge::Location l = ra::Proxy::locate(from_c(*region));
  *location = rig_location{l.address.has_value(), l.host.has_value(), l.address.value_or(0),
                           l.host.value_or(0), l.handle};
  return RIG_OK;
}

int rig_proxy_peer(const rig_proxy* d, const rig_proxy* d2, int* yes) {
  const ra::Proxy* p = proxy_of(d);
  const ra::Proxy* p2 = proxy_of(d2);
  if (p == nullptr || p2 == nullptr) return RIG_BAD_HANDLE;
  if (yes != nullptr) *yes = ra::Proxy::peer(*p, *p2) ? 1 : 0;
  return RIG_OK;
}

int rig_proxy_map_peer(rig_proxy* d, const rig_proxy* d2, const rig_region* region, rig_region* mapped,
                       rig_text* why) {
  ra::Proxy* p = proxy_of(d);
  const ra::Proxy* p2 = proxy_of(d2);
  if (p == nullptr || p2 == nullptr) return bad_handle(why, "map_peer: not a live proxy");
  if (region == nullptr) return invalid(why, "map_peer: region is NULL");
  return guarded(why, [&] { return mapping(p->map_peer(*p2, from_c(*region)), mapped); });
}

int rig_proxy_map_host(rig_proxy* d, uintptr_t ptr, uint64_t n, rig_region* mapped) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return RIG_BAD_HANDLE;
  return guarded(nullptr, [&] { return mapping(p->map_host(ptr, n), mapped); });
}

int rig_proxy_dma(rig_proxy* d, const rig_region* region, const char* fn, rig_text* why) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return bad_handle(why, "dma: not a live proxy");
  if (region == nullptr || fn == nullptr) return invalid(why, "dma: region and fn must not be NULL");
  return guarded(why, [&] {
    const auto answer = p->dma(from_c(*region), fn);
    put_text(why, std::get<std::string>(answer));  // a proxy never answers a Dma
    return RIG_ERROR;
  });
}

}  // extern "C"

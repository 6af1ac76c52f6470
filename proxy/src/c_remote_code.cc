// rig/remote.h: code (image, entry, prepare, unload) on the machine's host. Each function is an
// exception barrier (c_abi::guarded); a handle is checked before it is followed.
#include <span>
#include <string>

#include "c_handles.h"
#include "rig/remote.h"
#include "rig/remote/proxy.h"

namespace ra = rig::remote;
using namespace rig::remote::c_abi;  // the ABI's handles, texts and barrier (c_handles.h)

namespace {

// The image's handle and the proxy that loaded it, both live; null otherwise.
ra::Proxy* loader_of(const rig_image* image) {
  if (!Handles::live(image, HandleKind::kImage)) return nullptr;
  return proxy_of(image->proxy->c_handle());
}

}  // namespace

extern "C" {

int rig_proxy_image(rig_proxy* d, const void* binary, size_t bytes, rig_image** image, rig_text* why) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr) return bad_handle(why, "image: not a live proxy");
  if ((binary == nullptr && bytes != 0) || image == nullptr) {
    put_text(why, "image: binary and image must not be NULL");
    return RIG_INVALID_ARGUMENT;
  }
  return guarded(why, [&] {
    auto handle = std::make_unique<rig_image>();  // before asking: no answer lost to no memory
    auto answer = p->image(std::span(static_cast<const std::byte*>(binary), bytes));
    if (const auto* reason = std::get_if<std::string>(&answer)) {
      put_text(why, *reason);
      return RIG_ERROR;
    }
    handle->image = std::get<rig::edge::Loaded<ra::Region, ra::Image>>(answer).image;
    handle->proxy = p;
    Handles::add(handle.get(), HandleKind::kImage);
    *image = handle.release();
    return RIG_OK;
  });
}

int rig_image_entry(rig_image* image, const char* f, uint32_t* function, uint64_t* bytes, rig_text* why) {
  ra::Proxy* p = loader_of(image);
  if (p == nullptr) return bad_handle(why, "entry: not a live image of a live proxy");
  if (f == nullptr) {
    put_text(why, "entry: the function's name is NULL");
    return RIG_INVALID_ARGUMENT;
  }
  return guarded(why, [&] {
    const rig::edge::EntryAnswer a = p->entry(image->image, f);
    if (const auto* e = std::get_if<rig::edge::Entry>(&a)) {
      if (function != nullptr) *function = e->function;
      return RIG_OK;
    }
    if (const auto* n = std::get_if<rig::edge::NoMemory>(&a)) {
      if (bytes != nullptr) *bytes = n->bytes;
      return RIG_NO_MEMORY;
    }
    return RIG_ABSENT;
  });
}

uint64_t rig_image_id(const rig_image* image) {
  return Handles::live(image, HandleKind::kImage) ? image->image.id : 0;
}

int rig_image_prepare(rig_image* image, const char* f) {
  ra::Proxy* p = loader_of(image);
  if (p == nullptr) return RIG_BAD_HANDLE;
  if (f == nullptr) return RIG_OK;  // reports nothing: a prepare of nothing starts nothing
  return guarded(nullptr, [&] {
    p->prepare(image->image, f);
    return RIG_OK;
  });
}

int rig_proxy_unload(rig_proxy* d, rig_image* image) {
  ra::Proxy* p = proxy_of(d);
  if (p == nullptr || !Handles::live(image, HandleKind::kImage)) return RIG_BAD_HANDLE;
  return guarded(nullptr, [&] {
    p->unload(image->image);
    return RIG_OK;
  });
}

void rig_image_release(rig_image* image) {
  if (Handles::remove(image, HandleKind::kImage)) delete image;
}

}  // extern "C"

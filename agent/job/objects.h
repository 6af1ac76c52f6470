// A job's object table: the memory it allocated or mapped on the agent's devices and the
// images it loaded, by the job's ids (Link.fresh). Requests (alloc, map_peer, image, entry,
// prepare) and releases land here; pending work holds its own references, so a released object
// lives until the work submitted before its release no longer needs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "devices/device.h"
#include "rig/program/program.h"
#include "rig/wire/messages.h"
#include "rig/wire/outcome.h"

namespace rig::agent {

struct Object {
  std::uint32_t device = 0;  // the device it is mapped for
  std::shared_ptr<Memory> memory;
};

// An entry made by entry/prepare: the function and its launch's scratch, made once.
struct EntryState {
  std::uint32_t function = 0;
  std::shared_ptr<Memory> scratch;  // null for a function with no scratch
};

struct ImageObject {
  std::shared_ptr<const program::Image> image;
  std::map<std::uint32_t, std::shared_ptr<EntryState>> entries;  // by function index
};

// The answer to a request: a status, a value and a reason text.
struct Answer {
  wire::AnswerStatus status = wire::AnswerStatus::kOk;
  std::uint64_t value = 0;
  std::string text;
};

class ObjectTable final : public program::Objects {
 public:
  // max_objects: objects and images the job may hold at once (rig-agent --max-objects).
  ObjectTable(const std::vector<std::unique_ptr<DeviceBackend>>& devices, std::uint64_t max_objects)
      : devices_(devices), max_objects_(max_objects) {}

  // Each request (its device checked by the caller) gives an answer, or fails with -EPROTO
  // when the client broke the protocol (an id that exists already), which fails the job.
  wire::Outcome alloc(const wire::Request& q, Answer& a);
  wire::Outcome map_peer(const wire::Request& q, Answer& a);
  wire::Outcome load_image(const wire::Request& q, std::span<const std::byte> binary, Answer& a);
  // entry and prepare: makes the entry of function `name` of image q.object once.
  Answer entry(const wire::Request& q, std::string_view name);
  // A release of an object or an image; -EPROTO for one that does not exist.
  wire::Outcome release(const wire::Release& r);

  const Object* object(std::uint64_t id) const;
  std::shared_ptr<ImageObject> image(std::uint64_t id) const;
  // Everything goes: the job ended.
  void clear();

  // rig.program's view: a buffer word is the low 32 bits of an object id; host memory only.
  std::span<std::byte> resolve(std::uint32_t word) override;

 private:
  // Whether the job may hold one more object or image; else `a` says why not.
  bool room_for_one(Answer& a, wire::AnswerStatus refusal) const;
  void add(std::uint64_t id, Object o);

  const std::vector<std::unique_ptr<DeviceBackend>>& devices_;
  std::uint64_t max_objects_;
  std::unordered_map<std::uint64_t, Object> objects_;
  std::unordered_map<std::uint32_t, std::uint64_t> by_word_;  // low 32 bits of ids
  std::unordered_map<std::uint64_t, std::shared_ptr<ImageObject>> images_;
};

}  // namespace rig::agent

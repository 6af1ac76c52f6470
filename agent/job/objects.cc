#include "job/objects.h"

#include <algorithm>
#include <string>
#include <variant>

#include "job/accounts.h"

namespace rig::agent {

using wire::violation;  // a request or release that breaks the protocol fails the job

void ObjectTable::add(std::uint64_t id, Object o) {
  objects_[id] = std::move(o);
  by_word_[static_cast<std::uint32_t>(id)] = id;
}

bool ObjectTable::room_for_one(Answer& a, wire::AnswerStatus refusal) const {
  if (objects_.size() + images_.size() < max_objects_) return true;
  a = {refusal, 0,
       "the job holds " + std::to_string(objects_.size() + images_.size()) +
           " objects and images, the agent's limit (rig-agent --max-objects)"};
  return false;
}

wire::Outcome ObjectTable::alloc(const wire::Request& q, Answer& a) {
  if (objects_.count(q.object) != 0) {
    return violation("alloc of object " + std::to_string(q.object) + ", which exists");
  }
  if (q.arg0 == 0 || q.arg0 % 4 != 0) {
    a = {wire::AnswerStatus::kRefused, 0, "size is not a positive multiple of 4"};
    return {};
  }
  if (q.arg1 != 0) {
    a = {wire::AnswerStatus::kRefused, 0, "the device has no such memory"};
    return {};
  }
  if (!room_for_one(a, wire::AnswerStatus::kRefused)) return {};
  DeviceBackend& d = *devices_[q.device];
  std::shared_ptr<Memory> memory = d.allocate(q.arg0);
  if (!memory) {
    a = {wire::AnswerStatus::kRefused, 0, d.no_room(q.arg0)};
    return {};
  }
  add(q.object, Object{q.device, std::move(memory)});
  a = {};
  return {};
}

wire::Outcome ObjectTable::map_peer(const wire::Request& q, Answer& a) {
  auto src = objects_.find(q.arg0);
  if (src == objects_.end()) {
    a = {wire::AnswerStatus::kRefused, 0, "no such object"};
    return {};
  }
  if (objects_.count(q.object) != 0) {
    return violation("map_peer to object " + std::to_string(q.object) + ", which exists");
  }
  if (!room_for_one(a, wire::AnswerStatus::kRefused)) return {};
  std::shared_ptr<Memory> mapped;
  if (reaches(devices_, src->second.device, q.device)) mapped = devices_[q.device]->map_peer(src->second.memory);
  if (!mapped) {
    a = {wire::AnswerStatus::kRefused, 0, "the device does not reach that memory"};
    return {};
  }
  add(q.object, Object{q.device, std::move(mapped)});
  a = {};
  return {};
}

wire::Outcome ObjectTable::load_image(const wire::Request& q, std::span<const std::byte> binary, Answer& a) {
  if (!devices_[q.device]->runs_words()) {
    a = {wire::AnswerStatus::kError, 0, "only the machine's host loads code"};
    return {};
  }
  if (images_.count(q.object) != 0 || objects_.count(q.object) != 0) {
    return violation("image " + std::to_string(q.object) + ", which exists");
  }
  if (!room_for_one(a, wire::AnswerStatus::kError)) return {};
  auto loaded = program::Image::load(binary);
  if (auto* err = std::get_if<std::string>(&loaded)) {
    a = {wire::AnswerStatus::kError, 0, *err};
    return {};
  }
  auto img = std::make_shared<ImageObject>();
  img->image = std::make_shared<const program::Image>(std::move(std::get<program::Image>(loaded)));
  images_[q.object] = std::move(img);
  a = {};
  return {};
}

Answer ObjectTable::entry(const wire::Request& q, std::string_view name) {
  auto it = images_.find(q.object);
  if (it == images_.end()) return {wire::AnswerStatus::kAbsent, 0, "no such image"};
  ImageObject& image = *it->second;
  const auto index = image.image->find(name);
  if (!index) return {wire::AnswerStatus::kAbsent, 0, {}};
  if (image.entries.count(*index) != 0) return {wire::AnswerStatus::kOk, *index, {}};  // nothing new
  const program::FunctionInfo& f = image.image->function(*index);
  DeviceBackend& host = *devices_[0];
  if (f.scratch_bytes > host.account().budget) {
    return {wire::AnswerStatus::kInvalid, 0,
            "function '" + f.name + "' needs " + std::to_string(f.scratch_bytes) +
                " bytes of scratch, more than the host offers (" + std::to_string(host.account().budget) + ")"};
  }
  auto entry = std::make_shared<EntryState>();
  entry->function = *index;
  if (f.scratch_bytes > 0) {
    entry->scratch = host.allocate(f.scratch_bytes);
    if (!entry->scratch) return {wire::AnswerStatus::kNoMemory, f.scratch_bytes, {}};
  }
  image.entries.emplace(*index, std::move(entry));
  return {wire::AnswerStatus::kOk, *index, {}};
}

wire::Outcome ObjectTable::release(const wire::Release& r) {
  // Pending work holds its own references: the memory goes once that work no longer needs it.
  if (r.kind == static_cast<std::uint16_t>(wire::ReleaseKind::kObject)) {
    if (objects_.erase(r.object) == 0) {
      return violation("release of object " + std::to_string(r.object) + ", which does not exist");
    }
    auto w = by_word_.find(static_cast<std::uint32_t>(r.object));
    if (w != by_word_.end() && w->second == r.object) by_word_.erase(w);
    return {};
  }
  if (images_.erase(r.object) == 0) {
    return violation("release of image " + std::to_string(r.object) + ", which does not exist");
  }
  return {};
}

const Object* ObjectTable::object(std::uint64_t id) const {
  auto it = objects_.find(id);
  return it == objects_.end() ? nullptr : &it->second;
}

std::shared_ptr<ImageObject> ObjectTable::image(std::uint64_t id) const {
  auto it = images_.find(id);
  return it == images_.end() ? nullptr : it->second;
}

void ObjectTable::clear() {
  objects_.clear();
  by_word_.clear();
  images_.clear();
}

std::span<std::byte> ObjectTable::resolve(std::uint32_t word) {
  auto w = by_word_.find(word);
  if (w == by_word_.end()) return {};
  auto o = objects_.find(w->second);
  if (o == objects_.end() || o->second.device != 0 || o->second.memory->host() == nullptr) return {};
  return {o->second.memory->host(), o->second.memory->bytes()};
}

}  // namespace rig::agent

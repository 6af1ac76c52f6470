#include "exec/handover.h"

namespace rig::agent {
namespace {

bool resolve_side(const wire::Side& side, const wire::CopyPart& c, std::uint64_t pitch,
                  const ObjectTable& objects, CopySide& out, std::string& why) {
  if (side.kind == static_cast<std::uint8_t>(wire::SideKind::kClient)) {
    out.client = true;
    return true;
  }
  const Object* o = objects.object(side.handle);
  if (o == nullptr) {
    why = "handover names object " + std::to_string(side.handle) + ", which does not exist";
    return false;
  }
  // end = offset + (rows - 1) * pitch + row_bytes; check_copy proved it does not overflow.
  const std::uint64_t end = side.offset + (c.rows - 1) * pitch + c.row_bytes;
  if (end > o->memory->bytes()) {
    why = "copy reaches byte " + std::to_string(end) + " of object " + std::to_string(side.handle) +
          ", which has " + std::to_string(o->memory->bytes());
    return false;
  }
  out.memory = o->memory;
  out.offset = side.offset;
  return true;
}

bool resolve_words(const wire::WordsPart& w, const DeviceBackend& device, const ObjectTable& objects,
                   PendingPart& p, std::string& why) {
  if (!device.runs_words()) {
    why = "words part on device " + std::to_string(device.id()) + ", which is not the machine's host";
    return false;
  }
  p.image = objects.image(w.image);
  if (!p.image) {
    why = "words part names image " + std::to_string(w.image) + ", which does not exist";
    return false;
  }
  auto entry = p.image->entries.find(w.function);
  if (entry == p.image->entries.end()) {
    why = "words part launches function " + std::to_string(w.function) + " of image " +
          std::to_string(w.image) + ", which has no entry";
    return false;
  }
  const auto& f = p.image->image->function(w.function);
  if (w.n_words != f.n_params) {
    why = "words part passes " + std::to_string(w.n_words) + " words to '" + f.name + "', which takes " +
          std::to_string(f.n_params);
    return false;
  }
  p.entry = entry->second;
  return true;
}

}  // namespace

std::uint64_t PendingHandover::cost() const {
  std::uint64_t c = 4 * std::uint64_t{words.size()};
  for (const PendingPart& p : parts) {
    if (p.is_copy()) c += p.part.copy.rows * p.part.copy.row_bytes;  // bounded by check_copy
  }
  return c;
}

bool resolve_handover(const wire::HandoverView& h, const std::vector<std::unique_ptr<DeviceBackend>>& devices,
                      const ObjectTable& objects, PendingHandover& out, std::string& why) {
  out.device = h.fixed.device;
  out.value = h.fixed.value;
  out.waits.assign(h.waits.begin(), h.waits.end());
  for (const wire::Wait& w : out.waits) {
    if (w.device >= devices.size()) {
      why = "wait on device " + std::to_string(w.device) + ", which this agent did not open";
      return false;
    }
  }
  out.words.assign(h.words.begin(), h.words.end());
  out.parts.resize(h.parts.size());
  std::uint32_t word = 0;
  for (std::size_t i = 0; i < h.parts.size(); ++i) {
    const wire::Part& wp = h.parts[i];
    PendingPart& p = out.parts[i];
    p.part = wp;
    if (p.is_copy()) {
      if (!resolve_side(wp.copy.src, wp.copy, wp.copy.src_pitch, objects, p.src, why) ||
          !resolve_side(wp.copy.dst, wp.copy, wp.copy.dst_pitch, objects, p.dst, why)) {
        return false;
      }
      continue;
    }
    if (!resolve_words(wp.words, *devices[out.device], objects, p, why)) return false;
    p.first_word = word;
    word += wp.words.n_words;
  }
  return true;
}

}  // namespace rig::agent

#include "exec/handover.h"

namespace rig::agent {
namespace {

wire::Outcome resolve_side(const wire::Side& side, const wire::CopyPart& c, std::uint64_t pitch,
                           const ObjectTable& objects, CopySide& out) {
  if (side.kind == static_cast<std::uint8_t>(wire::SideKind::kClient)) {
    out.client = true;
    return {};
  }
  const Object* o = objects.object(side.handle);
  if (o == nullptr) {
    return wire::violation("handover names object " + std::to_string(side.handle) + ", which does not exist");
  }
  // end = offset + (rows - 1) * pitch + row_bytes; check_copy proved it does not overflow.
  const std::uint64_t end = side.offset + (c.rows - 1) * pitch + c.row_bytes;
  if (end > o->memory->bytes()) {
    return wire::violation("copy reaches byte " + std::to_string(end) + " of object " +
                           std::to_string(side.handle) + ", which has " + std::to_string(o->memory->bytes()));
  }
  out.memory = o->memory;
  out.offset = side.offset;
  return {};
}

wire::Outcome resolve_words(const wire::WordsPart& w, const DeviceBackend& device, const ObjectTable& objects,
                            PendingPart& p) {
  if (!device.runs_words()) {
    return wire::violation("words part on device " + std::to_string(device.id()) +
                           ", which is not the machine's host");
  }
  p.image = objects.image(w.image);
  if (!p.image) {
    return wire::violation("words part names image " + std::to_string(w.image) + ", which does not exist");
  }
  auto entry = p.image->entries.find(w.function);
  if (entry == p.image->entries.end()) {
    return wire::violation("words part launches function " + std::to_string(w.function) + " of image " +
                           std::to_string(w.image) + ", which has no entry");
  }
  const auto& f = p.image->image->function(w.function);
  if (w.n_words != f.n_params) {
    return wire::violation("words part passes " + std::to_string(w.n_words) + " words to '" + f.name +
                           "', which takes " + std::to_string(f.n_params));
  }
  p.entry = entry->second;
  return {};
}

}  // namespace

std::uint64_t PendingHandover::cost() const {
  std::uint64_t c = 4 * std::uint64_t{words.size()};
  for (const PendingPart& p : parts) {
    if (p.is_copy()) c += p.part.copy.rows * p.part.copy.row_bytes;  // bounded by check_copy
  }
  return c;
}

wire::Outcome resolve_handover(const wire::HandoverView& h, const std::vector<std::unique_ptr<DeviceBackend>>& devices,
                               const ObjectTable& objects, PendingHandover& out) {
  out.device = h.fixed.device;
  out.value = h.fixed.value;
  out.waits.assign(h.waits.begin(), h.waits.end());
  for (const wire::Wait& w : out.waits) {
    if (w.device >= devices.size()) {
      return wire::violation("wait on device " + std::to_string(w.device) + ", which this agent did not open");
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
      RIG_RETURN_IF_FAILED(resolve_side(wp.copy.src, wp.copy, wp.copy.src_pitch, objects, p.src));
      RIG_RETURN_IF_FAILED(resolve_side(wp.copy.dst, wp.copy, wp.copy.dst_pitch, objects, p.dst));
      continue;
    }
    RIG_RETURN_IF_FAILED(resolve_words(wp.words, *devices[out.device], objects, p));
    p.first_word = word;
    word += wp.words.n_words;
  }
  return {};
}

}  // namespace rig::agent

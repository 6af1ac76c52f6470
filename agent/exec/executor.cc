#include "exec/executor.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <new>

#include "exec/given_up_work.h"

namespace rig::agent {

Executor::Executor(const std::vector<std::unique_ptr<DeviceBackend>>& devices, ObjectTable& objects,
                   JobStaging& staging, Reports& reports, std::uint64_t instruction_budget)
    : devices_(devices),
      objects_(objects),
      staging_(staging),
      reports_(reports),
      instruction_budget_(instruction_budget),
      lanes_(devices.size()) {}

wire::Outcome Executor::check_value(std::uint32_t device, std::uint64_t value) const {
  assert(device < lanes_.size());
  if (value > lanes_[device].received) return {};
  return wire::violation("handover value " + std::to_string(value) + " of device " + std::to_string(device) +
                         " is not above the previous one (" + std::to_string(lanes_[device].received) + ")");
}

wire::Outcome Executor::check_room(std::uint32_t device) const {
  const std::uint64_t pending = lanes_[device].pending_cost;
  if (pending <= wire::kRoomBytes) return {};
  return wire::violation("handover for device " + std::to_string(device) + " while " + std::to_string(pending) +
                         " bytes of its earlier work are not done (a client's room admits one only at " +
                         std::to_string(wire::kRoomBytes) + " or less)");
}

void Executor::accept(PendingHandover ho) {
  Lane& lane = lanes_[ho.device];
  assert(ho.value > lane.received);
  lane.received = ho.value;
  lane.pending_cost += ho.cost();
  lane.queue.push_back(std::move(ho));
}

bool Executor::runs_at_once(const std::vector<wire::Wait>& waits) const {
  return idle() && reached(waits);
}

bool Executor::issues_at_once(std::uint32_t device, const std::vector<wire::Wait>& waits) const {
  return lanes_[device].queue.empty() && reached(waits);
}

bool Executor::reached(const std::vector<wire::Wait>& waits) const {
  for (const wire::Wait& w : waits) {
    if (lanes_[w.device].done < w.value) return false;
  }
  return true;
}

std::uint64_t Executor::finished_value(const wire::Wait& w) const {
  for (const PendingHandover& r : lanes_[w.device].running) {
    if (r.value >= w.value) return r.value;
  }
  return 0;
}

bool Executor::ready(std::uint32_t device, const PendingHandover& ho) const {
  for (const wire::Wait& w : ho.waits) {
    if (lanes_[w.device].done >= w.value) continue;
    if (w.device == device || finished_value(w) == 0 || !devices_[device]->waits_on(*devices_[w.device])) {
      return false;
    }
  }
  return true;
}

void Executor::place_waits(std::uint32_t device, PendingHandover& ho) {
  ho.waits_placed = true;
  for (const wire::Wait& w : ho.waits) {
    if (lanes_[w.device].done >= w.value) continue;
    assert(w.device != device && finished_value(w) != 0);  // ready() said so
    devices_[device]->wait_on(*devices_[w.device], finished_value(w));
    ho.held_by.push_back(w);
  }
}

wire::Outcome Executor::run_ready() {
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::uint32_t dev = 0; dev < lanes_.size(); ++dev) {
      // A value reported on another device may let a held report go.
      RIG_RETURN_IF_FAILED(drain(dev, progress));
      Lane& lane = lanes_[dev];
      // Only this device's queue waits for a handover that is not ready.
      while (!lane.queue.empty() && (lane.queue.front().next_part > 0 || ready(dev, lane.queue.front()))) {
        bool finished = false;
        RIG_RETURN_IF_FAILED(run_front(dev, finished));
        if (!finished) break;  // waits for the device's earlier work: poll() resumes it
        progress = true;
      }
    }
  }
  return {};
}

wire::Outcome Executor::run_front(std::uint32_t device, bool& finished) {
  Lane& lane = lanes_[device];
  DeviceBackend& d = *devices_[device];
  PendingHandover& ho = lane.queue.front();
  if (!ho.waits_placed) place_waits(device, ho);
  while (ho.next_part < ho.parts.size()) {
    bool blocked = false;
    RIG_RETURN_IF_FAILED(run_part(d, ho, ho.next_part, blocked));
    if (blocked) return {};
    ++ho.next_part;
  }
  finished = true;
  const Completion c = d.finish(ho.value);
  if (c == Completion::kDone && lane.running.empty() && reached(ho.held_by)) {
    // Done at once and nothing ahead or awaited: reported now, without the running lane.
    PendingHandover done = std::move(lane.queue.front());
    lane.queue.pop_front();
    return complete(device, done);
  }
  // Reported by a later poll or drain, behind the values ahead of it and those it waited for.
  ho.completed = c == Completion::kDone;
  lane.running.push_back(std::move(lane.queue.front()));
  lane.queue.pop_front();
  bool progress = false;
  return drain(device, progress);
}

wire::Outcome Executor::drain(std::uint32_t device, bool& progress) {
  Lane& lane = lanes_[device];
  while (!lane.running.empty() && lane.running.front().completed && reached(lane.running.front().held_by)) {
    PendingHandover ho = std::move(lane.running.front());
    lane.running.pop_front();
    RIG_RETURN_IF_FAILED(complete(device, ho));
    progress = true;
  }
  return {};
}

wire::Outcome Executor::run_part(DeviceBackend& d, PendingHandover& ho, std::uint32_t index, bool& blocked) {
  PendingPart& p = ho.parts[index];
  if (!p.is_copy()) {
    // Words run on this thread: after the device's earlier work.
    if (!d.idle()) {
      blocked = true;
      return {};
    }
    return run_words(ho, p);
  }
  if (p.dst.client) return run_copy_out(d, ho, index, blocked);
  if (!p.src.client) return device_fault(d, d.copy(p.dst_place(), p.src_place(), p.shape()));
  if (p.landed) return {};  // received straight into place (or copied to the device as it came)
  RIG_RETURN_IF_FAILED(device_fault(d, d.copy_in(p.dst_place(), p.staged.get(), p.shape())));
  bytes_copied_in_ += p.shape().rows * p.shape().row_bytes;
  return {};
}

wire::Outcome Executor::run_copy_out(DeviceBackend& d, PendingHandover& ho, std::uint32_t index, bool& blocked) {
  PendingPart& p = ho.parts[index];
  const Shape shape = p.shape();
  const std::uint64_t total = shape.rows * shape.row_bytes;
  const std::byte* base = p.src.memory->host();
  if (base == nullptr && !p.copied_out) {
    // Memory the agent cannot read: the device packs the rows into staging first.
    p.staged = staging_.take(total, p.staged_capacity);
    if (!p.staged) {  // the job's staging limit, the agent's host memory, or RAM
      return wire::Outcome::failed(-ENOMEM, staging_.refusal(total, "for the client"));
    }
    const bool ranges = d.marks() && total > kStreamBytes;
    if (ranges) {
      RIG_RETURN_IF_FAILED(copy_out_ranges(d, p));
    } else {
      RIG_RETURN_IF_FAILED(device_fault(d, d.copy_out(p.staged.get(), p.src_place(), shape)));
    }
    p.copied_out = true;
  }
  if (!p.out_ranges.empty()) return send_ranges(d, ho, index, blocked);
  // The bytes are sent only once the device's earlier work (this copy-out too) is done.
  if (!d.idle()) {
    blocked = true;
    return {};
  }
  const PartBytes b = p.copied_out ? PartBytes{p.staged.get(), shape, shape.row_bytes, 0, total}
                                   : PartBytes{base + p.src.offset, shape, p.src_place().pitch, 0, total};
  return reports_.bytes(ho.device, ho.value, index, b);
}

wire::Outcome Executor::copy_out_ranges(DeviceBackend& d, PendingPart& p) {
  const Shape shape = p.shape();
  for (std::uint64_t at = 0; at < shape.rows * shape.row_bytes;) {
    const PackedRange r = next_out_range(shape, p.src_place(), at);
    std::uint64_t mark = 0;
    RIG_RETURN_IF_FAILED(device_fault(d, d.copy_out(p.staged.get() + at, r.place, r.shape)));
    RIG_RETURN_IF_FAILED(device_fault(d, d.mark(mark)));
    p.out_ranges.push_back({r.end, mark});
    at = r.end;
  }
  return {};
}

wire::Outcome Executor::send_ranges(DeviceBackend& d, PendingHandover& ho, std::uint32_t index, bool& blocked) {
  PendingPart& p = ho.parts[index];
  const Shape shape = p.shape();
  for (; p.ranges_sent < p.out_ranges.size(); ++p.ranges_sent) {
    const PendingPart::OutRange& r = p.out_ranges[p.ranges_sent];
    // Sent once its copy out (and the device's work before it) completed; the wake the
    // session armed is posted then.
    if (!d.passed(r.mark)) {
      blocked = true;
      return {};
    }
    const std::uint64_t from = p.ranges_sent == 0 ? 0 : p.out_ranges[p.ranges_sent - 1].end;
    RIG_RETURN_IF_FAILED(
        reports_.bytes(ho.device, ho.value, index, {p.staged.get(), shape, shape.row_bytes, from, r.end - from}));
    bytes_streamed_out_ += r.end - from;
  }
  return {};
}

wire::Outcome Executor::run_words(const PendingHandover& ho, const PendingPart& p) {
  program::Launch launch;
  launch.image = p.image->image.get();
  launch.function = p.entry->function;
  launch.words = std::span<const std::uint32_t>(ho.words).subspan(p.first_word, p.part.words.n_words);
  if (p.entry->scratch) launch.scratch = {p.entry->scratch->host(), p.entry->scratch->bytes()};
  const program::Outcome out = program::run(launch, objects_, instruction_budget_);
  if (out.ok) return {};
  return fault(*devices_[ho.device], out.fault);
}

wire::Outcome Executor::complete(std::uint32_t device, PendingHandover& ho) {
  lanes_[device].done = ho.value;
  lanes_[device].pending_cost -= ho.cost();
  for (PendingPart& p : ho.parts) staging_.give(std::move(p.staged), p.staged_capacity);
  return reports_.done(device, ho.value);
}

wire::Outcome Executor::poll() {
  // Until nothing new completes: a value reported done may let a handover run whose own value
  // is reported by the next round (and a session that polls before it blocks in a read must
  // not leave a report behind).
  for (bool any = true; any;) {
    any = false;
    for (std::uint32_t dev = 0; dev < lanes_.size(); ++dev) {
      polled_.clear();
      RIG_RETURN_IF_FAILED(device_fault(*devices_[dev], devices_[dev]->poll(polled_)));
      for (const std::uint64_t v : polled_) {
        RIG_RETURN_IF_FAILED(retire(dev, v));
        any = true;
      }
    }
    // A device that became idle lets a handover blocked on its earlier work go on, too.
    RIG_RETURN_IF_FAILED(run_ready());
  }
  return {};
}

wire::Outcome Executor::retire(std::uint32_t device, std::uint64_t value) {
  Lane& lane = lanes_[device];
  auto it = std::find_if(lane.running.begin(), lane.running.end(),
                         [](const PendingHandover& r) { return !r.completed; });
  if (it == lane.running.end() || it->value != value) {
    return fault(*devices_[device], "reported value " + std::to_string(value) + " done out of order");
  }
  it->completed = true;
  bool progress = false;
  return drain(device, progress);
}

void Executor::abandon(PendingHandover ho) noexcept {
  try {
    lanes_[ho.device].abandoned.push_back(std::move(ho));
  } catch (const std::bad_alloc&) {
    // No memory to hold it (nothing was moved): its staging is kept by a plain leak, never
    // unpinned or freed under the copies.
    for (PendingPart& p : ho.parts) static_cast<void>(p.staged.release());
  }
}

void Executor::clear() {
  // In-flight device work may still use the memory and staging that pending handovers hold.
  for (const auto& d : devices_) d->quiesce();
  // Abandoned handovers' issued copies went with it: theirs are given back (or kept) as the
  // issued work's are.
  for (Lane& l : lanes_) {
    for (PendingHandover& ho : l.abandoned) l.running.push_back(std::move(ho));
    l.abandoned.clear();
  }
  for (std::uint32_t dev = 0; dev < lanes_.size(); ++dev) {
    Lane& l = lanes_[dev];
    if (devices_[dev]->gave_up()) {
      keep_given_up(*devices_[dev], l);
    } else {
      // Their staging goes back to the pool, which unpins what it frees.
      for (auto* handovers : {&l.queue, &l.running}) {
        for (PendingHandover& ho : *handovers) {
          for (PendingPart& p : ho.parts) staging_.give(std::move(p.staged), p.staged_capacity);
        }
      }
    }
    l.queue.clear();
    l.running.clear();
    l.pending_cost = 0;
  }
}

void Executor::keep_given_up(DeviceBackend& device, Lane& lane) noexcept {
  if (lane.queue.empty() && lane.running.empty()) return;  // nothing named (or a second clear)
  try {
    auto work = std::make_shared<GivenUpWork>(staging_.pinning(), staging_.host_memory());
    work->take(lane.queue, lane.running);
    device.keep(std::move(work));
  } catch (const std::bad_alloc&) {
    // No memory to keep them (none was moved): their staging is kept by a plain leak, never
    // unpinned or freed; the memory they name is let go of as if the work had ended.
    for (auto* handovers : {&lane.queue, &lane.running}) {
      for (PendingHandover& ho : *handovers) {
        for (PendingPart& p : ho.parts) static_cast<void>(p.staged.release());
      }
    }
  }
}

wire::Outcome Executor::fault(const DeviceBackend& d, const std::string& why) {
  return device_fault(d, device_error(why));
}

wire::Outcome device_fault(const DeviceBackend& d, const wire::Outcome& o) {
  if (o.ok()) return o;
  return wire::Outcome::failed(o.err(), "device " + std::to_string(d.id()) + " (" +
                                            std::string(wire::fixed_string(d.account().name)) + ") faulted: " + o.why());
}

void Executor::arm_wakes(const std::shared_ptr<Wake>& wake) {
  for (std::uint32_t dev = 0; dev < lanes_.size(); ++dev) {
    if (!lanes_[dev].queue.empty() || !lanes_[dev].running.empty()) devices_[dev]->arm_wake(wake);
  }
}

bool Executor::idle() const {
  return std::all_of(lanes_.begin(), lanes_.end(),
                     [](const Lane& l) { return l.queue.empty() && l.running.empty(); });
}

}  // namespace rig::agent

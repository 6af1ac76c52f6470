// room: what a proxy can run, and whether it has room for it now (the page's Work section).
#include "proxy_slot.h"
#include "rig/remote/proxy.h"
#include "rig/wire/codec.h"
#include "rig/wire/limits.h"
#include "submission.h"

namespace rig::remote {
namespace {

// A copy part that sends bytes: RIG_NEVER for what the proxy cannot run (docs/SEMANTICS.md,
// deviations the page does not list), else RIG_FITS with its bytes.
int copy_room(const Link& link, const rig_copy& c, std::uint64_t& bytes) {
  const bool src_client = c.src.host != nullptr, dst_client = c.dst.host != nullptr;
  if (src_client && dst_client) return RIG_NEVER;  // both sides here: nothing crosses
  if (!src_client && !link.owns(c.src.handle)) return RIG_NEVER;  // another link's, or a word
  if (!dst_client && !link.owns(c.dst.handle)) return RIG_NEVER;
  if (c.rows > 1 && (c.src_pitch < c.row_bytes || c.dst_pitch < c.row_bytes)) return RIG_NEVER;
  if (!copy_bytes(c, bytes) || bytes > wire::kMaxCopyBytes) return RIG_NEVER;
  return RIG_FITS;
}

}  // namespace

int Proxy::room(const rig_submission& s) const {
  if ((s.n_parts > 0 && s.parts == nullptr) || (s.n_waits > 0 && s.waits == nullptr)) return RIG_NEVER;
  TravellingWaits waits;  // waits that stay here never count; those that travel, once a device
  waits.merge(link_, s);
  std::uint64_t words = 0, sent = 0, sent_into_client = 0;
  bool into_client = false;
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    if (p.queue > RIG_QUEUE_COPY) return RIG_NEVER;
    if (p.kind == RIG_PART_COPY) {
      const rig_copy& c = p.u.copy;
      // The page: a copy from this process's memory after a copy into it, because submit
      // reads the source bytes before the agent runs the earlier part.
      if (c.src.host != nullptr && into_client) return RIG_NEVER;
      into_client = into_client || c.dst.host != nullptr;
      if (!part_sent(p)) continue;  // zero bytes: fits, and sends nothing
      std::uint64_t bytes = 0;
      if (copy_room(link_, c, bytes) != RIG_FITS) return RIG_NEVER;
      if (c.dst.host != nullptr && ++sent_into_client > kMaxCopiesIntoHere) return RIG_NEVER;
    } else if (p.kind == RIG_PART_WORDS) {
      if (!is_host()) return RIG_NEVER;
      if (p.u.words.n_words > 0 && p.u.words.words == nullptr) return RIG_NEVER;
      words += p.u.words.n_words;
    } else {
      return RIG_NEVER;
    }
    ++sent;
  }
  // A deviation: what one frame cannot carry (docs/SEMANTICS.md).
  if (wire::handover_body_bytes(waits.count(), sent, words) > wire::kMaxControlLength) return RIG_NEVER;
  // relaxed: submitted_cost is this side's own; acquire: pairs with the receiving thread's
  // release of done_cost.
  const std::uint64_t in_flight = slot_->submitted_cost.load(std::memory_order_relaxed) -
                                  slot_->done_cost.load(std::memory_order_acquire);
  return in_flight > wire::kRoomBytes ? RIG_LATER : RIG_FITS;
}

}  // namespace rig::remote

#include "exec/outbox.h"

#include <algorithm>
#include <cerrno>
#include <string>

#include "rig/engine/iov_cursor.h"

namespace rig::agent {
namespace {

// A report the connection could not take: the job's connection is lost.
wire::Outcome lost_sending(const char* what) {
  return wire::Outcome::failed(-EPIPE, std::string("connection lost sending ") + what);
}

}  // namespace

FailureFrame::FailureFrame(const std::string& why)
    : text(why.substr(0, wire::kMaxText)),
      frame(wire::encode(wire::Failure{wire::kNoDevice, static_cast<std::uint32_t>(text.size())})) {}

std::array<iovec, 2> FailureFrame::iov() const {
  return {engine::to_iov(&frame, sizeof frame), engine::to_iov(text.data(), text.size())};
}

bool Outbox::send_frame(std::span<const iovec> iov) {
  return flush() && connection_.send(iov) == 0;
}

bool Outbox::queue_frame(std::span<const iovec> iov) { return queue_pending_done() && append(iov); }

bool Outbox::append(std::span<const iovec> iov) {
  for (const iovec& v : iov) {
    const auto* p = static_cast<const std::byte*>(v.iov_base);
    out_.insert(out_.end(), p, p + v.iov_len);
  }
  return out_.size() < kBatchBytes || flush();
}

bool Outbox::queue_pending_done() {
  if (!pending_done_.set) return true;
  pending_done_.set = false;  // before append, whose flush comes back here
  const auto f = wire::encode(wire::Done{pending_done_.device, 0, pending_done_.value});
  const iovec iov = engine::to_iov(&f, sizeof f);
  return append({&iov, 1});
}

bool Outbox::flush() { return post() && end_posted(); }

bool Outbox::post() {
  if (!queue_pending_done()) return false;
  if (!end_posted()) return false;
  if (out_.empty()) return true;
  posted_.swap(out_);  // out_ keeps the older buffer's capacity: no allocation per batch
  out_.clear();
  const iovec iov{posted_.data(), posted_.size()};
  posting_ = connection_.post_send({&iov, 1}) == 0;
  return posting_;
}

bool Outbox::end_posted() {
  if (!posting_) return true;
  posting_ = false;
  return connection_.finish_send() == 0;
}

bool Outbox::answer(std::uint64_t id, const Answer& a) {
  if (id == 0) return true;  // a prepare: nobody waits for its answer
  const std::string_view text = std::string_view(a.text).substr(0, wire::kMaxText);
  const auto f = wire::encode(wire::Answer{id, static_cast<std::uint16_t>(a.status), 0,
                                           static_cast<std::uint32_t>(text.size()), a.value});
  const iovec iov[2] = {engine::to_iov(&f, sizeof f), engine::to_iov(text.data(), text.size())};
  return queue_frame({iov, text.empty() ? 1u : 2u});
}

bool Outbox::echo(const wire::Ping& ping) {
  const auto f = wire::encode(ping);
  const iovec iov = engine::to_iov(&f, sizeof f);
  return queue_frame({&iov, 1});
}

void Outbox::failure(const std::string& why) {
  const FailureFrame f(why);
  const auto iov = f.iov();
  send_frame(iov);
}

wire::Outcome Outbox::done(std::uint32_t device, std::uint64_t value) {
  if (pending_done_.set && pending_done_.device != device && !queue_pending_done()) {
    return lost_sending("a done report");
  }
  if (!pending_done_.set) pending_done_ = {device, value, true};
  pending_done_.value = std::max(pending_done_.value, value);
  return {};
}

wire::Outcome Outbox::bytes(std::uint32_t device, std::uint64_t value, std::uint32_t part, const PartBytes& b) {
  const engine::CopyPart cp{device, part, value, b.shape.rows * b.shape.row_bytes};
  const engine::CopyRows rows{b.base, b.shape.row_bytes, b.shape.rows == 1 ? b.shape.row_bytes : b.pitch};
  // The agent packs nothing here: a GPU's rows were packed into staging already, and a host
  // object's rows go in place, gathered.
  const engine::CopyWay way = engine::CopyBytes::way(stripes_.ready() ? &stripes_.set() : nullptr, cp, rows, false);
  if (way == engine::CopyWay::kStriped) {
    // Announced on the job's connection after what is batched, the pieces on the stripes.
    if (!flush()) return lost_sending("bytes");
    engine::Connection::Hold hold(connection_);
    const int rc = engine::CopyBytes::striped(stripes_.set(), connection_, cp, rows, b.at, b.at + b.n);
    if (rc == -ENOMEM) return wire::Outcome::failed(rc, "out of memory sending striped bytes");
    return rc == 0 ? wire::Outcome{} : lost_sending("striped bytes");
  }
  // Bytes of another device end the run of reports: what they complete (a stopped proxy's last
  // copy, on the client) must not come before those reports.
  if (pending_done_.set && pending_done_.device != device && !queue_pending_done()) {
    return lost_sending("bytes");
  }
  const auto each = [&](const auto&, std::span<const iovec> frame, std::uint32_t n) {
    // A small payload joins the batch without ending the run of done reports (see
    // pending_done_): the report that follows it is of an earlier value, or of this one.
    return (n <= kInlineBytes ? append(frame) : send_frame(frame)) ? 0 : -EPIPE;
  };
  const int rc = copy_bytes_.frames(way, cp, rows, b.at, b.at + b.n, nullptr, nullptr, each);
  return rc == 0 ? wire::Outcome{} : lost_sending("bytes");
}

}  // namespace rig::agent

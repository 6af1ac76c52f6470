#include "session.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <spdlog/spdlog.h>

#include "rig/engine/iov_cursor.h"
#include "rig/engine/packed_rows.h"
#include "rig/engine/tcp.h"
#include "stripe_registry.h"

namespace rig::agent {
namespace {

constexpr int kHelloTimeoutMs = 10000;
constexpr std::uint64_t kChunkBytes = 4ull << 20;

bool side_is_client(const wire::Side& s) {
  return s.kind == static_cast<std::uint8_t>(wire::SideKind::kClient);
}

// The program's view of the job's objects: a buffer word is the low 32 bits of an object id.
class JobObjects final : public program::Objects {
 public:
  JobObjects(const std::unordered_map<std::uint64_t, Object>& objects,
             const std::unordered_map<std::uint32_t, std::uint64_t>& by_word)
      : objects_(objects), by_word_(by_word) {}
  std::span<std::byte> resolve(std::uint32_t word) override {
    auto w = by_word_.find(word);
    if (w == by_word_.end()) return {};
    auto o = objects_.find(w->second);
    if (o == objects_.end() || o->second.device != 0) return {};  // host memory only
    return {o->second.memory->data(), o->second.memory->bytes()};
  }

 private:
  const std::unordered_map<std::uint64_t, Object>& objects_;
  const std::unordered_map<std::uint32_t, std::uint64_t>& by_word_;
};

}  // namespace

std::vector<wire::Account> make_accounts(const AgentConfig& config) {
  std::vector<wire::Account> accounts;
  const std::uint64_t all = config.devices >= 63 ? ~0ull : ((2ull << config.devices) - 1);
  wire::Account host{};
  host.id = 0;
  host.kind = static_cast<std::uint32_t>(wire::AccountKind::kHost);
  host.budget = config.host_budget;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  host.cache_bytes = l3 > 0 ? static_cast<std::uint64_t>(l3) : 0;
  host.reaches = all;
  if (config.isolated != 0) host.reaches &= ~(1ull << config.isolated);
  wire::set_fixed_string(host.name, "host");
  wire::set_fixed_string(host.arch, "x86_64");
  accounts.push_back(host);
  for (std::uint32_t i = 1; i <= config.devices && i < wire::kMaxDevices; ++i) {
    wire::Account a{};
    a.id = i;
    a.kind = static_cast<std::uint32_t>(wire::AccountKind::kDevice);
    a.budget = config.device_budget;
    a.cache_bytes = 32ull << 20;
    // Simulated devices share host RAM: each reaches every other, unless told to act as one
    // that does not (to exercise peer = false).
    a.reaches = (i == config.isolated) ? (1ull << i) : all;
    if (config.isolated != 0 && i != config.isolated) a.reaches &= ~(1ull << config.isolated);
    wire::set_fixed_string(a.name, "sim" + std::to_string(i));
    wire::set_fixed_string(a.arch, "sim");
    accounts.push_back(a);
  }
  return accounts;
}

Session::Session(int fd, const AgentConfig& config, std::string peer)
    : config_(config), peer_(std::move(peer)), fd_(fd) {}

Session::~Session() {
  if (stripe_token_ != 0) StripeRegistry::instance().close(stripe_token_);
}

bool Session::join(const wire::FrameHeader& h, std::string& why) {
  alignas(8) std::byte body[sizeof(wire::Join)];
  if (h.length != sizeof body) {
    why = "join of " + std::to_string(h.length) + " bytes, not " + std::to_string(sizeof body);
    return false;
  }
  if (!recv_first_frame(body, sizeof body, "join", why)) return false;
  wire::Join j{};
  if (!wire::decode(body, j, why)) return false;
  std::unique_ptr<engine::Socket> socket = engine::make_socket(fd_, config_.backend);
  fd_ = -1;  // the socket owns it now
  const std::string refused = StripeRegistry::instance().attach(j, socket);
  if (refused.empty()) {
    joined_ = true;
    spdlog::debug("stripe {} of {} from {} joined its job", j.stripe, j.count, peer_);
    return true;
  }
  why = "join refused: " + refused;
  const std::string text = why.substr(0, wire::kMaxText);
  const auto f = wire::frame(wire::MsgType::kFailure,
                             wire::Failure{wire::kNoDevice, static_cast<std::uint32_t>(text.size())},
                             text.size());
  const iovec iov[2] = {engine::to_iov(&f, sizeof f), engine::to_iov(text.data(), text.size())};
  socket->send_all(iov);
  return false;
}

bool Session::stripes_ready() {
  if (stripes_) return true;
  if (stripe_token_ == 0) return false;
  std::vector<std::unique_ptr<engine::Socket>> sockets;
  if (!StripeRegistry::instance().take(stripe_token_, sockets, stripe_min_bytes_)) return false;
  // The agent's zero-copy threshold (--send-zc-bytes, else off towards loopback) for pieces too.
  stripes_ = std::make_unique<engine::StripeSet>(
      config_.backend == engine::Backend::kUring && engine::uring_available(), counters_,
      engine::resolve_send_zc_bytes(sockets.front()->fd(), engine::kSendZcAuto));
  for (auto& socket : sockets) stripes_->add(std::move(socket));
  return true;
}

bool Session::send_frame(std::span<const iovec> iov) {
  return flush() && connection_->send(iov) == 0;
}

bool Session::queue_frame(std::span<const iovec> iov) {
  for (const iovec& v : iov) {
    const auto* p = static_cast<const std::byte*>(v.iov_base);
    out_.insert(out_.end(), p, p + v.iov_len);
  }
  return out_.size() < kBatchBytes || flush();
}

bool Session::flush() {
  if (out_.empty()) return true;
  const iovec iov{out_.data(), out_.size()};
  const bool ok = connection_->send({&iov, 1}) == 0;
  out_.clear();
  return ok;
}

void Session::send_failure(const std::string& why) {
  const std::string text = why.substr(0, wire::kMaxText);
  const auto f = wire::frame(wire::MsgType::kFailure,
                             wire::Failure{wire::kNoDevice, static_cast<std::uint32_t>(text.size())},
                             text.size());
  const iovec iov[2] = {engine::to_iov(&f, sizeof f), engine::to_iov(text.data(), text.size())};
  if (connection_) {
    send_frame(iov);
  } else {
    ::send(fd_, &f, sizeof f, MSG_NOSIGNAL);
    ::send(fd_, text.data(), text.size(), MSG_NOSIGNAL);
  }
}

bool Session::recv_first_frame(void* buf, std::size_t n, const char* what, std::string& why) {
  // The first frame of a connection, header and body, within kHelloTimeoutMs in all: a peer
  // that connects and stalls holds none of the agent's threads for longer.
  const int rc = engine::recv_within(fd_, buf, n, kHelloTimeoutMs);
  if (rc == -ETIME) why = std::string("no complete ") + what + " within " + std::to_string(kHelloTimeoutMs) + " ms";
  else if (rc != 0) why = std::string("connection closed in its ") + what;
  return rc == 0;
}

bool Session::handshake(std::string& why) {
  wire::FrameHeader h{};
  if (!recv_first_frame(&h, sizeof h, "first frame (hello or join)", why)) return false;
  if (const char* bad = wire::check_header(h)) {
    why = std::string("bad hello frame: ") + bad;
    return false;
  }
  if (h.type == static_cast<std::uint16_t>(wire::MsgType::kJoin)) {
    is_join_ = true;  // a data connection, whatever becomes of it: not a job
    return join(h, why);
  }
  if (h.type != static_cast<std::uint16_t>(wire::MsgType::kHello) || h.length != sizeof(wire::Hello)) {
    why = std::string("expected hello, got ") + wire::type_name(h.type);
    return false;
  }
  alignas(8) std::byte body[sizeof(wire::Hello)];
  if (!recv_first_frame(body, sizeof body, "hello", why)) return false;
  wire::Hello hello{};
  if (!wire::decode(body, hello, why)) return false;

  const std::vector<wire::Account> accounts = make_accounts(config_);
  for (const auto& a : accounts) {
    DeviceState d;
    d.account = a;
    d.budget = std::make_shared<Budget>(Budget{a.budget});
    devices_.push_back(std::move(d));
  }
  const std::uint32_t supported =
      wire::kFeaturePrograms | (config_.max_stripes > 0 ? std::uint32_t{wire::kFeatureStripes} : 0u);
  const auto w = wire::frame(
      wire::MsgType::kWelcome,
      wire::Welcome{wire::kMagic, wire::kVersion, 0, hello.features & supported,
                    static_cast<std::uint32_t>(accounts.size())},
      accounts.size() * sizeof(wire::Account));
  connection_ = std::make_unique<engine::Connection>(engine::make_socket(fd_, config_.backend), counters_);
  reader_ = std::make_unique<engine::FrameReader>(connection_->socket(), counters_);
  reader_->set_before_read([this] { return flush() ? 0 : -EPIPE; });
  const iovec iov[2] = {engine::to_iov(&w, sizeof w),
                        engine::to_iov(accounts.data(), accounts.size() * sizeof(wire::Account))};
  if (!send_frame(iov)) {
    why = "connection lost sending the welcome";
    return false;
  }
  if ((hello.features & supported & wire::kFeatureStripes) != 0) {
    const std::uint32_t max = std::min(config_.max_stripes, wire::kMaxStripes);
    stripe_token_ = StripeRegistry::instance().open(max);
    const auto g = wire::frame(wire::MsgType::kStripeGrant, wire::StripeGrant{stripe_token_, max, 0});
    const iovec giov = engine::to_iov(&g, sizeof g);
    if (!send_frame({&giov, 1})) {
      why = "connection lost sending the stripe grant";
      return false;
    }
  }
  return true;
}

bool Session::run() {
  std::string why;
  if (!handshake(why)) {
    spdlog::warn("{} from {}: {}", is_join_ ? "data connection" : "job", peer_, why);
    if (fd_ >= 0 || connection_) send_failure(why);
    if (!connection_ && fd_ >= 0) ::close(fd_);
    return !is_join_;
  }
  if (joined_) return false;  // a stripe of a job: that job's session uses it
  spdlog::info("job from {}: connected ({} devices, {} backend)", peer_, devices_.size(),
               connection_->socket().backend());
  bool closed = false;
  for (;;) {
    wire::FrameHeader h{};
    const int rc = reader_->next(h, why);
    if (rc == 1) {
      why = "the client closed the connection";
      closed = true;
      break;
    }
    if (rc < 0) {
      if (rc != -EPROTO) why = std::string("connection lost: ") + std::strerror(-rc);
      else why = "protocol violation: " + why;
      break;
    }
    const auto type = static_cast<wire::MsgType>(h.type);
    if (type == wire::MsgType::kBytes) {
      why = "bytes that follow no handover";
      break;
    }
    std::span<const std::byte> body;
    if (const int r = reader_->body(h.length, body); r != 0) {
      why = std::string("connection lost: ") + std::strerror(-r);
      break;
    }
    bool ok = true;
    switch (type) {
      case wire::MsgType::kRequest: ok = on_request(body, why); break;
      case wire::MsgType::kRelease: ok = on_release(body, why); break;
      case wire::MsgType::kHandover: ok = on_handover(body, why) && run_ready(why); break;
      case wire::MsgType::kPing: {  // keepalive: echo it
        wire::Ping p{};
        ok = wire::decode(body, p, why);
        if (ok) {
          const auto echo = wire::frame(wire::MsgType::kPing, p);
          const iovec iov = engine::to_iov(&echo, sizeof echo);
          ok = queue_frame({&iov, 1});
          if (!ok) why = "connection lost sending a ping";
        }
        break;
      }
      case wire::MsgType::kClose: {
        wire::Close c{};
        if (wire::decode(body, c, why)) {
          why = "the client closed the job";
          closed = true;
        }
        ok = false;
        break;
      }
      default:
        why = std::string("unexpected ") + wire::type_name(h.type) + " message";
        ok = false;
    }
    if (!ok) break;
  }
  if (closed) {
    spdlog::info("job from {}: {}", peer_, why);
  } else {
    spdlog::warn("job from {} failed: {}", peer_, why);
    send_failure(why);
  }
  connection_->shutdown();
  if (stripes_) stripes_->shutdown();
  // Everything the job held goes now: pending work, objects, images.
  for (auto& d : devices_) d.queue.clear();
  objects_.clear();
  objects_by_word_.clear();
  images_.clear();
  return true;
}

bool Session::answer(std::uint64_t id, wire::AnswerStatus status, std::uint64_t value,
                     std::string_view text) {
  if (id == 0) return true;  // a prepare: nobody waits for its answer
  text = text.substr(0, wire::kMaxText);
  const auto a = wire::frame(wire::MsgType::kAnswer,
                             wire::Answer{id, static_cast<std::uint16_t>(status), 0,
                                          static_cast<std::uint32_t>(text.size()), value},
                             text.size());
  const iovec iov[2] = {engine::to_iov(&a, sizeof a), engine::to_iov(text.data(), text.size())};
  return queue_frame({iov, text.empty() ? 1u : 2u});
}

std::shared_ptr<EntryState> Session::make_entry(ImageObject& image, std::uint32_t function,
                                                wire::AnswerStatus& status, std::uint64_t& value,
                                                std::string& text) {
  if (auto it = image.entries.find(function); it != image.entries.end()) {
    status = wire::AnswerStatus::kOk;
    value = function;
    return it->second;  // made already: nothing new
  }
  const program::FunctionInfo& f = image.image->function(function);
  DeviceState& host = devices_[0];
  if (f.scratch_bytes > host.account.budget) {
    status = wire::AnswerStatus::kInvalid;
    text = "function '" + f.name + "' needs " + std::to_string(f.scratch_bytes) +
           " bytes of scratch, more than the host offers (" + std::to_string(host.account.budget) + ")";
    return nullptr;
  }
  auto entry = std::make_shared<EntryState>();
  entry->function = function;
  if (f.scratch_bytes > 0) {
    entry->scratch = std::make_unique<Memory>(f.scratch_bytes, host.budget);
    if (!entry->scratch->ok()) {
      status = wire::AnswerStatus::kNoMemory;
      value = f.scratch_bytes;
      return nullptr;
    }
  }
  image.entries.emplace(function, entry);
  status = wire::AnswerStatus::kOk;
  value = function;
  return entry;
}

bool Session::on_request(std::span<const std::byte> body, std::string& why) {
  wire::RequestView r;
  if (!wire::decode(body, r, why)) return false;
  const wire::Request& q = r.fixed;
  const auto kind = static_cast<wire::RequestKind>(q.kind);
  if (kind != wire::RequestKind::kEntry && kind != wire::RequestKind::kPrepare &&
      q.device >= devices_.size()) {
    return answer(q.id, wire::AnswerStatus::kRefused, 0,
                  "no device " + std::to_string(q.device) + " on this agent");
  }
  switch (kind) {
    case wire::RequestKind::kAlloc: {
      if (objects_.count(q.object) != 0) {
        why = "alloc of object " + std::to_string(q.object) + ", which exists";
        return false;
      }
      if (q.arg0 == 0 || q.arg0 % 4 != 0) {
        return answer(q.id, wire::AnswerStatus::kRefused, 0, "size is not a positive multiple of 4");
      }
      if (q.arg1 != 0) return answer(q.id, wire::AnswerStatus::kRefused, 0, "the device has no such memory");
      DeviceState& d = devices_[q.device];
      auto mem = std::make_shared<Memory>(q.arg0, d.budget);
      if (!mem->ok()) {
        return answer(q.id, wire::AnswerStatus::kRefused, 0,
                      "no room: " + std::to_string(d.budget->left) + " bytes left of the budget");
      }
      objects_[q.object] = Object{q.device, std::move(mem)};
      objects_by_word_[static_cast<std::uint32_t>(q.object)] = q.object;
      return answer(q.id, wire::AnswerStatus::kOk, 0, {});
    }
    case wire::RequestKind::kMapPeer: {
      auto src = objects_.find(q.arg0);
      if (src == objects_.end()) return answer(q.id, wire::AnswerStatus::kRefused, 0, "no such object");
      if (objects_.count(q.object) != 0) {
        why = "map_peer to object " + std::to_string(q.object) + ", which exists";
        return false;
      }
      const std::uint32_t owner = src->second.device;
      if (!((devices_[std::max(owner, q.device)].account.reaches >> std::min(owner, q.device)) & 1)) {
        return answer(q.id, wire::AnswerStatus::kRefused, 0, "the device does not reach that memory");
      }
      objects_[q.object] = Object{q.device, src->second.memory};
      objects_by_word_[static_cast<std::uint32_t>(q.object)] = q.object;
      return answer(q.id, wire::AnswerStatus::kOk, 0, {});
    }
    case wire::RequestKind::kImage: {
      if (q.device != 0) {
        return answer(q.id, wire::AnswerStatus::kError, 0, "only the machine's host loads code");
      }
      if (images_.count(q.object) != 0 || objects_.count(q.object) != 0) {
        why = "image " + std::to_string(q.object) + ", which exists";
        return false;
      }
      auto loaded = program::Image::load(r.tail);
      if (auto* err = std::get_if<std::string>(&loaded)) {
        return answer(q.id, wire::AnswerStatus::kError, 0, *err);
      }
      auto img = std::make_shared<ImageObject>();
      img->image = std::make_shared<const program::Image>(std::move(std::get<program::Image>(loaded)));
      images_[q.object] = std::move(img);
      return answer(q.id, wire::AnswerStatus::kOk, 0, {});
    }
    case wire::RequestKind::kEntry:
    case wire::RequestKind::kPrepare: {
      auto it = images_.find(q.object);
      if (it == images_.end()) return answer(q.id, wire::AnswerStatus::kAbsent, 0, "no such image");
      const std::string_view name(reinterpret_cast<const char*>(r.tail.data()), r.tail.size());
      const auto index = it->second->image->find(name);
      if (!index) return answer(q.id, wire::AnswerStatus::kAbsent, 0, {});
      wire::AnswerStatus status{};
      std::uint64_t value = 0;
      std::string text;
      make_entry(*it->second, *index, status, value, text);
      return answer(q.id, status, value, text);
    }
  }
  return true;
}

bool Session::on_release(std::span<const std::byte> body, std::string& why) {
  wire::Release r{};
  if (!wire::decode(body, r, why)) return false;
  // Pending work holds its own references: the memory goes once that work no longer needs it.
  if (r.kind == static_cast<std::uint16_t>(wire::ReleaseKind::kObject)) {
    if (objects_.erase(r.object) == 0) {
      why = "release of object " + std::to_string(r.object) + ", which does not exist";
      return false;
    }
    auto w = objects_by_word_.find(static_cast<std::uint32_t>(r.object));
    if (w != objects_by_word_.end() && w->second == r.object) objects_by_word_.erase(w);
  } else if (images_.erase(r.object) == 0) {
    why = "release of image " + std::to_string(r.object) + ", which does not exist";
    return false;
  }
  return true;
}

bool Session::resolve_side(const wire::Side& side, const wire::CopyPart& c, std::uint64_t pitch,
                           Side& out, std::string& why) {
  if (side_is_client(side)) {
    out.client = true;
    return true;
  }
  auto it = objects_.find(side.handle);
  if (it == objects_.end()) {
    why = "handover names object " + std::to_string(side.handle) + ", which does not exist";
    return false;
  }
  // end = offset + (rows - 1) * pitch + row_bytes; check_copy proved it does not overflow.
  const std::uint64_t end = side.offset + (c.rows - 1) * pitch + c.row_bytes;
  if (end > it->second.memory->bytes()) {
    why = "copy reaches byte " + std::to_string(end) + " of object " + std::to_string(side.handle) +
          ", which has " + std::to_string(it->second.memory->bytes());
    return false;
  }
  out.memory = it->second.memory;
  out.offset = side.offset;
  return true;
}

bool Session::on_handover(std::span<const std::byte> body, std::string& why) {
  wire::HandoverView h;
  if (!wire::decode(body, h, why)) return false;
  const std::uint32_t dev = h.fixed.device;
  if (dev >= devices_.size()) {
    why = "handover for device " + std::to_string(dev) + ", which this agent did not open";
    return false;
  }
  DeviceState& d = devices_[dev];
  if (h.fixed.value <= d.received) {
    why = "handover value " + std::to_string(h.fixed.value) + " of device " + std::to_string(dev) +
          " is not above the previous one (" + std::to_string(d.received) + ")";
    return false;
  }
  PendingHandover ho;
  ho.value = h.fixed.value;
  ho.waits.assign(h.waits.begin(), h.waits.end());
  for (const wire::Wait& w : ho.waits) {
    if (w.device >= devices_.size()) {
      why = "wait on device " + std::to_string(w.device) + ", which this agent did not open";
      return false;
    }
  }
  ho.words.assign(h.words.begin(), h.words.end());
  ho.parts.resize(h.parts.size());
  std::uint32_t word = 0;
  for (std::size_t i = 0; i < h.parts.size(); ++i) {
    const wire::Part& wp = h.parts[i];
    PendingPart& p = ho.parts[i];
    p.part = wp;
    if (wp.kind == static_cast<std::uint16_t>(wire::PartKind::kCopy)) {
      if (!resolve_side(wp.copy.src, wp.copy, wp.copy.src_pitch, p.src, why) ||
          !resolve_side(wp.copy.dst, wp.copy, wp.copy.dst_pitch, p.dst, why)) {
        return false;
      }
    } else {
      if (dev != 0) {
        why = "words part on device " + std::to_string(dev) + ", which is not the machine's host";
        return false;
      }
      auto img = images_.find(wp.words.image);
      if (img == images_.end()) {
        why = "words part names image " + std::to_string(wp.words.image) + ", which does not exist";
        return false;
      }
      auto entry = img->second->entries.find(wp.words.function);
      if (entry == img->second->entries.end()) {
        why = "words part launches function " + std::to_string(wp.words.function) +
              " of image " + std::to_string(wp.words.image) + ", which has no entry";
        return false;
      }
      const auto& f = img->second->image->function(wp.words.function);
      if (wp.words.n_words != f.n_params) {
        why = "words part passes " + std::to_string(wp.words.n_words) + " words to '" + f.name +
              "', which takes " + std::to_string(f.n_params);
        return false;
      }
      p.image = img->second;
      p.entry = entry->second;
      p.first_word = word;
      word += wp.words.n_words;
    }
  }
  if (!receive_client_bytes(h, ho, why)) return false;
  d.received = ho.value;
  d.queue.push_back(std::move(ho));
  return true;
}

std::unique_ptr<std::byte[]> Session::take_staging(std::uint64_t bytes, std::uint64_t& capacity) {
  std::size_t best = spare_.size();
  for (std::size_t i = 0; i < spare_.size(); ++i) {
    if (spare_[i].second >= bytes && (best == spare_.size() || spare_[i].second < spare_[best].second)) best = i;
  }
  if (best < spare_.size()) {
    auto buffer = std::move(spare_[best].first);
    capacity = spare_[best].second;
    spare_bytes_ -= capacity;
    spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(best));
    return buffer;
  }
  capacity = bytes;
  return std::unique_ptr<std::byte[]>(new (std::nothrow) std::byte[bytes]);
}

void Session::give_staging(std::unique_ptr<std::byte[]> buffer, std::uint64_t capacity) {
  if (!buffer || spare_bytes_ + capacity > kSpareBytes) return;  // freed
  spare_bytes_ += capacity;
  spare_.emplace_back(std::move(buffer), capacity);
}

bool Session::receive_client_bytes(const wire::HandoverView& h, PendingHandover& ho, std::string& why) {
  // The handover runs as soon as it is read when no earlier work is pending anywhere and its
  // waits are reached: then a copy's bytes may land straight in its destination, as long as no
  // earlier part of this handover may touch that memory.
  bool runs_at_once = true;
  for (const DeviceState& d : devices_) runs_at_once = runs_at_once && d.queue.empty();
  for (const wire::Wait& w : ho.waits) runs_at_once = runs_at_once && devices_[w.device].done >= w.value;
  for (std::size_t i = 0; i < ho.parts.size(); ++i) {
    PendingPart& p = ho.parts[i];
    if (p.part.kind != static_cast<std::uint16_t>(wire::PartKind::kCopy) || !p.src.client) continue;
    const wire::CopyPart& c = p.part.copy;
    const std::uint64_t total = wire::packed_bytes(c);
    bool direct = runs_at_once;
    for (std::size_t j = 0; direct && j < i; ++j) {
      const PendingPart& e = ho.parts[j];
      direct = e.part.kind == static_cast<std::uint16_t>(wire::PartKind::kCopy) &&
               e.src.memory != p.dst.memory && e.dst.memory != p.dst.memory;
    }
    if (direct) {
      p.landed = true;
    } else {
      p.staged = take_staging(total, p.staged_capacity);
      if (!p.staged) {
        why = "out of memory staging " + std::to_string(total) + " bytes of a hand-over";
        return false;
      }
      engine::bump(counters_.bytes_staged, total);
    }
    // Where the part's packed bytes go: straight into the destination's rows, or end to end
    // into staging.
    const Rows into{p.landed ? p.dst.memory->data() + p.dst.offset : p.staged.get(), c.row_bytes,
                    p.landed && c.rows > 1 ? c.dst_pitch : c.row_bytes};
    Expected next{h.fixed.device, h.fixed.value, static_cast<std::uint32_t>(i), 0, total};
    while (next.got < total) {
      wire::FrameHeader fh{};
      int rc = reader_->next(fh, why);
      if (rc != 0) {
        if (rc != -EPROTO) why = "connection lost in a handover's bytes";
        return false;
      }
      if (fh.type == static_cast<std::uint16_t>(wire::MsgType::kStriped)) {
        std::uint64_t length = 0;
        if (!receive_striped(fh, next, into, length, why)) return false;
        next.got += length;
        continue;
      }
      if (fh.type != static_cast<std::uint16_t>(wire::MsgType::kBytes)) {
        why = std::string("expected the bytes of part ") + std::to_string(i) + ", got " +
              wire::type_name(fh.type);
        return false;
      }
      std::span<const std::byte> fixed;
      wire::Bytes b{};
      rc = reader_->body(sizeof(wire::Bytes), fixed);
      if (rc != 0 || !wire::decode_bytes(fixed, fh.length, b, why)) {
        if (rc != 0) why = "connection lost in a handover's bytes";
        return false;
      }
      if (!next.continued_by("bytes", b.device, b.value, b.part, b.offset, b.length, why)) return false;
      recv_iov_.clear();
      engine::append_rows(recv_iov_, into.base, into.row_bytes, into.pitch, next.got, b.length);
      if (reader_->payload(recv_iov_) != 0) {
        why = "connection lost in a handover's bytes";
        return false;
      }
      next.got += b.length;
    }
  }
  return true;
}

bool Session::receive_striped(const wire::FrameHeader& fh, const Expected& next, const Rows& into,
                              std::uint64_t& length, std::string& why) {
  std::span<const std::byte> body;
  if (reader_->body(fh.length, body) != 0) {
    why = "connection lost in a handover's bytes";
    return false;
  }
  wire::Striped st{};
  if (!wire::decode(body, st, why)) return false;
  if (stripe_token_ == 0) {
    why = "striped bytes in a job that was granted no stripes";
    return false;
  }
  if (!stripes_ready()) {
    why = "striped bytes before all of the job's stripes joined";
    return false;
  }
  if (!next.continued_by("striped bytes", st.device, st.value, st.part, st.offset, st.length, why)) return false;
  if (const int rc = stripes_->recv_striped(st, into.base, into.row_bytes, into.pitch, why); rc != 0) {
    if (rc != -EPROTO && rc != -ENOMEM) why = "a stripe was lost in a handover's bytes";
    return false;
  }
  length = st.length;
  return true;
}

bool Session::Expected::continued_by(const char* what, std::uint32_t d, std::uint64_t v, std::uint32_t pt,
                                     std::uint64_t offset, std::uint64_t length, std::string& why) const {
  if (d == device && v == value && pt == part && offset == got && length <= total - got) return true;
  why = std::string(what) + " (device " + std::to_string(d) + ", value " + std::to_string(v) + ", part " +
        std::to_string(pt) + ", offset " + std::to_string(offset) + ", length " + std::to_string(length) +
        ") do not continue part " + std::to_string(part) + " at offset " + std::to_string(got) + " of " +
        std::to_string(total);
  return false;
}

bool Session::run_ready(std::string& why) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::uint32_t dev = 0; dev < devices_.size(); ++dev) {
      DeviceState& d = devices_[dev];
      while (!d.queue.empty()) {
        PendingHandover& ho = d.queue.front();
        bool ready = true;
        for (const wire::Wait& w : ho.waits) {
          if (devices_[w.device].done < w.value) {
            ready = false;
            break;
          }
        }
        if (!ready) break;  // only this device's executor waits
        if (!run_handover(dev, ho, why)) return false;
        d.done = ho.value;
        const auto done = wire::frame(wire::MsgType::kDone, wire::Done{dev, 0, ho.value});
        d.queue.pop_front();
        const iovec iov = engine::to_iov(&done, sizeof done);
        if (!queue_frame({&iov, 1})) {
          why = "connection lost sending a done report";
          return false;
        }
        progress = true;
      }
    }
  }
  return true;
}

bool Session::run_handover(std::uint32_t device, PendingHandover& ho, std::string& why) {
  for (std::uint32_t i = 0; i < ho.parts.size(); ++i) {
    PendingPart& p = ho.parts[i];
    const bool ok = p.part.kind == static_cast<std::uint16_t>(wire::PartKind::kCopy)
                        ? run_copy(device, ho.value, i, p, why)
                        : run_words(ho, p, why);
    if (!ok) return false;
  }
  return true;
}

bool Session::run_copy(std::uint32_t device, std::uint64_t value, std::uint32_t index,
                       PendingPart& p, std::string& why) {
  const wire::CopyPart& c = p.part.copy;
  if (p.dst.client) {
    // Into the client's memory: kBytes messages straight from the object's rows.
    const std::byte* base = p.src.memory->data() + p.src.offset;
    const std::uint64_t total = wire::packed_bytes(c);
    if (stripes_ready() && total >= stripe_min_bytes_) {
      // Announced on the job's connection after what is batched, the pieces on the stripes.
      if (!flush()) {
        why = "connection lost sending bytes";
        return false;
      }
      engine::Connection::Hold hold(*connection_);
      const int rc = stripes_->send_copy(*connection_, device, index, value, base, c.row_bytes,
                                         c.rows == 1 ? c.row_bytes : c.src_pitch, 0, total);
      if (rc != 0) why = "connection lost sending striped bytes";
      return rc == 0;
    }
    for (std::uint64_t at = 0; at < total; at += kChunkBytes) {
      const auto n = static_cast<std::uint32_t>(std::min(kChunkBytes, total - at));
      const auto hdr = wire::frame(wire::MsgType::kBytes, wire::Bytes{device, index, value, at, n, 0}, n);
      iov_.clear();
      iov_.push_back(engine::to_iov(&hdr, sizeof hdr));
      engine::append_rows(iov_, base, c.row_bytes, c.rows == 1 ? c.row_bytes : c.src_pitch, at, n);
      if (!(n <= kInlineBytes ? queue_frame(iov_) : send_frame(iov_))) {
        why = "connection lost sending bytes";
        return false;
      }
    }
    return true;
  }
  if (p.landed) return true;  // received straight into place
  std::byte* dst = p.dst.memory->data() + p.dst.offset;
  const std::byte* src = p.src.client ? p.staged.get() : p.src.memory->data() + p.src.offset;
  const std::uint64_t src_pitch = p.src.client ? c.row_bytes : c.src_pitch;
  if (c.rows == 1 || (src_pitch == c.row_bytes && c.dst_pitch == c.row_bytes)) {
    std::memmove(dst, src, c.rows * c.row_bytes);
  } else {
    for (std::uint64_t r = 0; r < c.rows; ++r) {
      std::memmove(dst + r * c.dst_pitch, src + r * src_pitch, c.row_bytes);
    }
  }
  give_staging(std::move(p.staged), p.staged_capacity);
  return true;
}

bool Session::run_words(PendingHandover& ho, PendingPart& p, std::string& why) {
  JobObjects objects(objects_, objects_by_word_);
  program::Launch launch;
  launch.image = p.image->image.get();
  launch.function = p.entry->function;
  launch.words = std::span<const std::uint32_t>(ho.words).subspan(p.first_word, p.part.words.n_words);
  if (p.entry->scratch) launch.scratch = {p.entry->scratch->data(), p.entry->scratch->bytes()};
  const program::Outcome out = program::run(launch, objects, config_.instruction_budget);
  if (!out.ok) {
    why = "device 0 (host) faulted: " + out.fault;
    return false;
  }
  return true;
}

}  // namespace rig::agent

#include "process/server.h"

#include "job/handshake.h"
#include "job/session.h"
#include "process/notify.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <thread>
#include <span>
#include <vector>

namespace rig::agent {

Server::Server(int listen_fd, const engine::Address& address, const AgentConfig& config) : config_(config) {
  listen_fd_ = listen_fd;
  address_ = address;
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int flags = ::fcntl(listen_fd_, F_GETFL);
  if (wake_fd_ < 0 || flags < 0 || ::fcntl(listen_fd_, F_SETFL, flags | O_NONBLOCK) < 0) {
    const int err = errno;
    ::close(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    throw std::system_error(err, std::generic_category(), "the agent's listener: eventfd or O_NONBLOCK");
  }
  // Before the agent says it listens: a launcher that counts the agent's threads once it does
  // (the fault tests) counts this one too.
  try {
    heartbeat_->start();
  } catch (...) {
    ::close(listen_fd_);
    ::close(wake_fd_);
    throw;
  }
}

Server::~Server() {
  heartbeat_->stop();  // a session that outlives the server pings no more
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Server::wake() {
  const std::uint64_t one = 1;
  // Cannot fail short of a counter at 2^64-2; async-signal-safe.
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Server::stop() {
  stopping_.store(true, std::memory_order_seq_cst);
  ::shutdown(listen_fd_, SHUT_RDWR);  // new connections are refused from here (async-signal-safe)
  wake();
}

namespace {

// systemd's reload protocol: RELOADING=1 with the monotonic clock's microseconds.
std::string reloading_state() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return "RELOADING=1\nSTATUS=rereading the secrets\nMONOTONIC_USEC=" +
         std::to_string(static_cast<std::uint64_t>(now.tv_sec) * 1000000u + static_cast<std::uint64_t>(now.tv_nsec) / 1000u);
}

void tell(const std::string& state) {
  if (const wire::Outcome told = notify_service_manager(state); !told.ok()) {
    spdlog::warn("not told to the service manager: {}", told.why());
  }
}

}  // namespace

void Server::reread_secrets() {
  tell(reloading_state());
  wire::Result<std::shared_ptr<const std::vector<engine::Secret>>> secrets = load_secrets(config_);
  if (!secrets.ok()) {
    const std::string& why = secrets.outcome().why();
    spdlog::error("secrets not reread, the old ones stay: {}", why);
    tell(std::string("READY=1\nSTATUS=listening on ") + engine::to_string(address_) +
         "; secrets not reread, the old ones stay: " + why);
    return;
  }
  config_.secrets = *secrets;
  spdlog::info("secrets reread: {} in use", config_.secrets->size());
  tell("READY=1\nSTATUS=listening on " + engine::to_string(address_) + "; secrets reread: " +
       std::to_string(config_.secrets->size()) + " in use");
}

namespace {

// Accept errors that a client can cause (descriptors, buffers or memory exhausted) pass: the
// agent waits a moment, doubling up to a second, and accepts again.
bool passes(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM || err == EPERM; }

// After accept failed with `err`: whether the agent accepts on, once the backoff passed where
// the error passes (doubling from 10 ms up to a second; `backoff_ms` keeps it).
bool accept_passes(int err, int& backoff_ms) {
  // EAGAIN: the connection poll saw went away before accept.
  if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) return true;
  if (!passes(err)) {
    spdlog::error("accept: {}: the agent stops", std::strerror(err));
    return false;
  }
  backoff_ms = std::clamp(backoff_ms * 2, 10, 1000);
  spdlog::warn("accept: {}; accepting again in {} ms", std::strerror(err), backoff_ms);
  return true;
}

std::string peer_name(const sockaddr_storage& peer) {
  char addr[INET6_ADDRSTRLEN] = "?";
  std::uint16_t port = 0;
  if (peer.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(peer);
    inet_ntop(AF_INET, &in.sin_addr, addr, sizeof addr);
    port = ntohs(in.sin_port);
  } else if (peer.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(peer);
    inet_ntop(AF_INET6, &in6.sin6_addr, addr, sizeof addr);
    port = ntohs(in6.sin6_port);
  }
  return std::string(addr) + ":" + std::to_string(port);
}

}  // namespace

bool Server::admit(int fd, const std::string& who) {
  if (!take(gauges_->connections, config_.max_connections)) {
    bump(gauges_->refused_connections);  // counted before the peer hears of it
    refuse(fd, "the agent serves its limit of " + std::to_string(config_.max_connections) +
                   " connections (rig-agent --max-connections)", 0);
    if (std::uint64_t left_out = 0; refused_log_.allow(left_out)) {
      spdlog::warn("connection from {} refused: {} connections{}", who, config_.max_connections,
                   left_out_note(left_out));
    }
    return false;
  }
  return true;
}

bool Server::accept_one(HandshakeRoom& room) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (!accept_passes(err, backoff_ms_)) return false;
    if (passes(err)) accept_after_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(backoff_ms_);
    return true;
  }
  backoff_ms_ = 0;
  engine::set_job_options(fd);
  const std::string who = peer_name(peer);
  if (!admit(fd, who)) return true;
  std::unique_ptr<Handshake> handshake;
  try {
    handshake = std::make_unique<Handshake>(fd, who, config_, *gauges_);  // holds the count admit() took
  } catch (const std::exception& e) {
    gauges_->connections.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a count (gauges.h)
    refuse(fd, std::string("the agent could not take the connection: ") + e.what(), 0);
    return true;
  }
  room.enter(std::move(handshake), peer);
  return true;
}

void Server::ended(Handshake& h, Handshake::Step step) {
  if (step == Handshake::Step::kJob) return start_session(h);
  if (step == Handshake::Step::kJoined) return spdlog::debug("data connection from {} joined its job", h.peer());
  bump(h.proving() ? gauges_->auth_failures : gauges_->handshakes_failed);
  if (std::uint64_t left_out = 0; (h.proving() ? auth_log_ : handshake_log_).allow(left_out)) {
    spdlog::warn("{} from {}: {}{}{}", h.joining() ? "data connection" : "job", h.peer(),
                 h.proving() ? "authentication failed: " : "", h.why(), left_out_note(left_out));
  }
  h.refuse(h.told());
  if (!h.joining() && tally_->job_ended(max_jobs_)) stop();
}

void Server::start_session(Handshake& h) {
  // Shared with the thread, so that it is still here to refuse when no thread can be started.
  auto job = std::make_shared<Authenticated>(h.take_job());
  // `this` outlives the thread when max_jobs_ > 0 (finish() waits for every thread).
  try {
    std::thread([this, job, who = h.peer(), config = config_, gauges = gauges_, drain = drain_, heartbeat = heartbeat_,
                 tally = tally_, max_jobs = max_jobs_] {
      try {  // the thread's edge: no exception crosses it
        Session(std::move(*job), config, who, *gauges, *drain, *heartbeat).run();
      } catch (const std::exception& e) {
        spdlog::error("job from {} ended by an internal error: {}", who, e.what());
      }
      if (tally->job_ended(max_jobs)) stop();
      // release: pairs with finish()'s acquire: this thread is done with `this`.
      tally->finished.fetch_add(1, std::memory_order_release);
      tally->finished.notify_all();
    }).detach();
    ++started_;
  } catch (const std::exception& e) {
    // No thread for it (threads or memory exhausted): refused, and the agent goes on.
    refuse(job->release_fd(), std::string("the agent could not start a thread for the connection: ") + e.what(), 0);
    spdlog::error("connection from {} refused: no thread: {}", h.peer(), e.what());
  }
}

int Server::poll_timeout_ms(const HandshakeRoom& room) const {
  int timeout = room.timeout_ms();
  const auto now = std::chrono::steady_clock::now();
  if (accept_after_ > now) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(accept_after_ - now).count();
    if (timeout < 0 || left < timeout) timeout = static_cast<int>(left);
  }
  return timeout;
}

void Server::serve(std::uint64_t max_jobs) {
  tally_ = std::make_shared<Tally>();
  started_ = 0;
  max_jobs_ = max_jobs;  // before any thread that reads it starts
  HandshakeRoom room(config_.max_handshakes, config_.max_handshakes_per_source, *gauges_);
  std::vector<pollfd> fds;
  while (!stopping_.load(std::memory_order_seq_cst)) {
    const bool accepting = std::chrono::steady_clock::now() >= accept_after_;
    fds.assign({{listen_fd_, static_cast<short>(accepting ? POLLIN : 0), 0}, {wake_fd_, POLLIN, 0}});
    room.poll_fds(fds);
    if (::poll(fds.data(), fds.size(), poll_timeout_ms(room)) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll on the listener: {}: the agent stops", std::strerror(errno));
      break;
    }
    if (fds[1].revents != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const ssize_t n = ::read(wake_fd_, &count, sizeof count);  // clears it
    }
    if (reload_.exchange(false, std::memory_order_seq_cst)) reread_secrets();
    if (stopping_.load(std::memory_order_seq_cst)) break;
    room.advance(std::span(fds).subspan(2), [this](Handshake& h, Handshake::Step step) { ended(h, step); });
    if ((fds[0].revents & POLLIN) != 0 && !accept_one(room)) break;
  }
  room.clear(kStopping);
  finish();
}

void Server::finish() {
  if (terminating_.load(std::memory_order_seq_cst)) {
    drain_->begin(config_.drain_ms);
    if (const wire::Outcome told = notify_service_manager("STOPPING=1\nSTATUS=stopping: jobs run what they received");
        !told.ok()) {
      spdlog::warn("stopping not told to the service manager: {}", told.why());
    }
    spdlog::info("stopping: {} job(s) may run what they received for up to {} ms",
                 gauges_->jobs.load(std::memory_order_relaxed), config_.drain_ms);  // relaxed: a count
    // Every session thread, for the drain and a second more (a job whose client does not read
    // its failure is not waited for longer).
    const auto limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.drain_ms) +
                       std::chrono::seconds(1);
    while (tally_->finished.load(std::memory_order_acquire) < started_ && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return;
  }
  if (max_jobs_ > 0) {
    // Wait for every session thread this serve() started.
    for (std::uint64_t e = tally_->finished.load(std::memory_order_acquire); e < started_;
         e = tally_->finished.load(std::memory_order_acquire)) {
      tally_->finished.wait(e, std::memory_order_acquire);
    }
  }
}

}  // namespace rig::agent

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

namespace rig::agent {

Server::Server(const std::vector<engine::Address>& listen, const AgentConfig& config)
    : config_(config),
      room_(std::make_shared<HandshakeRoom>(config.max_handshakes, config.max_handshakes_per_source, *gauges_)) {
  listen_fd_ = engine::tcp_listen_first(listen, port_, &address_);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int flags = ::fcntl(listen_fd_, F_GETFL);
  if (wake_fd_ < 0 || flags < 0 || ::fcntl(listen_fd_, F_SETFL, flags | O_NONBLOCK) < 0) {
    const int err = errno;
    ::close(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    throw std::system_error(err, std::generic_category(), "the agent's listener: eventfd or O_NONBLOCK");
  }
}

Server::~Server() {
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
  if (std::string why; !notify_service_manager(state, why)) spdlog::warn("not told to the service manager: {}", why);
}

}  // namespace

void Server::reread_secrets() {
  tell(reloading_state());
  try {
    config_.secrets = load_secrets(config_);
    spdlog::info("secrets reread: {} in use", config_.secrets->size());
    tell("READY=1\nSTATUS=listening on " + engine::to_string(address_) + "; secrets reread: " +
         std::to_string(config_.secrets->size()) + " in use");
  } catch (const std::exception& e) {
    spdlog::error("secrets not reread, the old ones stay: {}", e.what());
    tell(std::string("READY=1\nSTATUS=listening on ") + engine::to_string(address_) +
         "; secrets not reread, the old ones stay: " + e.what());
  }
}

namespace {

// Accept errors that a client can cause (descriptors, buffers or memory exhausted) pass: the
// agent waits a moment, doubling up to a second, and accepts again.
bool passes(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM || err == EPERM; }

// After accept failed with `err`: whether the agent accepts on, having waited out the backoff
// where the error passes (doubling from 10 ms up to a second; `backoff_ms` keeps it).
bool accept_passes(int err, int& backoff_ms) {
  // EAGAIN: the connection poll saw went away before accept.
  if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) return true;
  if (!passes(err)) {
    spdlog::error("accept: {}: the agent stops", std::strerror(err));
    return false;
  }
  backoff_ms = std::clamp(backoff_ms * 2, 10, 1000);
  spdlog::warn("accept: {}; accepting again in {} ms", std::strerror(err), backoff_ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
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
    refuse(fd, "the agent serves its limit of " + std::to_string(config_.max_connections) +
                   " connections (rig-agent --max-connections)", 0);
    spdlog::warn("connection from {} refused: {} connections", who, config_.max_connections);
    bump(gauges_->refused_connections);
    return false;
  }
  return true;
}

void Server::serve(std::uint64_t max_jobs) {
  // Shared with the connection threads, which may outlive this call when max_jobs is 0.
  struct Tally {
    std::atomic<std::uint64_t> jobs_ended{0};  // connections that were jobs (not stripes)
    std::atomic<std::uint64_t> finished{0};    // every connection thread's end
  };
  auto tally = std::make_shared<Tally>();
  std::uint64_t started = 0;
  int backoff_ms = 0;
  while (!stopping_.load(std::memory_order_seq_cst)) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
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
    if (fds[0].revents == 0) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    const int err = errno;
    if (fd < 0) {
      if (!accept_passes(err, backoff_ms)) break;
      continue;
    }
    backoff_ms = 0;
    engine::set_job_options(fd);
    const std::string who = peer_name(peer);
    if (!admit(fd, who)) continue;
    const std::uint64_t ticket = room_->enter(fd, peer);
    // A connection is a job or a stripe joining one: only jobs count toward max_jobs. `this`
    // outlives the thread when max_jobs > 0 (serve waits for every thread below).
    try {
      std::thread([this, fd, who, config = config_, gauges = gauges_, drain = drain_, room = room_, ticket, tally,
                   max_jobs] {
        Held connection(gauges->connections);
        HandshakePlace handshaking(*room, ticket);
        bool job = true;
        try {  // the thread's edge: no exception crosses it
          Session session(fd, config, who, *gauges, handshaking, *drain);
          job = session.run();
        } catch (const std::exception& e) {
          spdlog::error("connection from {} ended by an internal error: {}", who, e.what());
        }
        if (job) {
          // seq_cst: the count that ends serve() (read after the stop it may cause).
          const std::uint64_t n = tally->jobs_ended.fetch_add(1, std::memory_order_seq_cst) + 1;
          if (max_jobs > 0 && n >= max_jobs) stop();
        }
        // release: pairs with serve()'s acquire: this thread is done with `this`.
        tally->finished.fetch_add(1, std::memory_order_release);
        tally->finished.notify_all();
      }).detach();
      ++started;
    } catch (const std::system_error& e) {
      // No thread for it (threads or memory exhausted): refused, and the agent goes on.
      gauges_->connections.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a count (gauges.h)
      room_->leave(ticket);
      refuse(fd, std::string("the agent could not start a thread for the connection: ") + e.what(), 0);
      spdlog::error("connection from {} refused: no thread: {}", who, e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (terminating_.load(std::memory_order_seq_cst)) {
    drain_->begin(config_.drain_ms);
    if (std::string why; !notify_service_manager("STOPPING=1\nSTATUS=stopping: jobs run what they received", why)) {
      spdlog::warn("stopping not told to the service manager: {}", why);
    }
    spdlog::info("stopping: {} job(s) may run what they received for up to {} ms",
                 gauges_->jobs.load(std::memory_order_relaxed), config_.drain_ms);  // relaxed: a count
    // Every connection thread, for the drain and a second more (a connection still in its
    // handshake, or a job whose client does not read its failure, is not waited for longer).
    const auto limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.drain_ms) +
                       std::chrono::seconds(1);
    while (tally->finished.load(std::memory_order_acquire) < started && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return;
  }
  if (max_jobs > 0) {
    // Wait for every connection thread this call started.
    for (std::uint64_t e = tally->finished.load(std::memory_order_acquire); e < started;
         e = tally->finished.load(std::memory_order_acquire)) {
      tally->finished.wait(e, std::memory_order_acquire);
    }
  }
}

}  // namespace rig::agent

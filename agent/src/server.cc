#include "server.h"

#include "session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <spdlog/spdlog.h>
#include <thread>

namespace rig::agent {

Server::Server(const engine::Endpoint& listen, const AgentConfig& config) : config_(config) {
  listen_fd_ = engine::tcp_listen(listen, port_);
}

Server::~Server() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void Server::stop() {
  stopping_.store(true, std::memory_order_seq_cst);
  ::shutdown(listen_fd_, SHUT_RDWR);  // async-signal-safe: wakes accept()
}

void Server::serve(std::uint64_t max_jobs) {
  // Shared with the connection threads, which may outlive this call when max_jobs is 0.
  struct Tally {
    std::atomic<std::uint64_t> jobs_ended{0};  // connections that were jobs (not stripes)
    std::atomic<std::uint64_t> finished{0};    // every connection thread's end
  };
  auto tally = std::make_shared<Tally>();
  std::uint64_t started = 0;
  while (!stopping_.load(std::memory_order_seq_cst)) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (stopping_.load(std::memory_order_seq_cst)) break;
      spdlog::error("accept: {}", std::strerror(errno));
      break;
    }
    engine::set_job_options(fd);
    char addr[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &peer.sin_addr, addr, sizeof addr);
    const std::string who = std::string(addr) + ":" + std::to_string(ntohs(peer.sin_port));
    ++started;
    // A connection is a job or a stripe joining one: only jobs count toward max_jobs. `this`
    // outlives the thread when max_jobs > 0 (serve waits for every thread below).
    std::thread([this, fd, who, config = config_, tally, max_jobs] {
      Session session(fd, config, who);
      if (session.run()) {
        // seq_cst: the count that ends serve() (read after the stop it may cause).
        const std::uint64_t n = tally->jobs_ended.fetch_add(1, std::memory_order_seq_cst) + 1;
        if (max_jobs > 0 && n >= max_jobs) stop();
      }
      // release: pairs with serve()'s acquire: this thread is done with `this`.
      tally->finished.fetch_add(1, std::memory_order_release);
      tally->finished.notify_all();
    }).detach();
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

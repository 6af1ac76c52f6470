#include "server.h"

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
  // Shared with the job threads, which may outlive this call.
  auto ended = std::make_shared<std::atomic<std::uint64_t>>(0);
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
    std::thread([fd, who, config = config_, ended] {
      Session session(fd, config, who);
      session.run();
      // release: pairs with serve()'s acquire when it counts ended jobs.
      ended->fetch_add(1, std::memory_order_release);
      ended->notify_all();
    }).detach();
    if (max_jobs > 0 && started >= max_jobs) break;
  }
  if (max_jobs > 0) {
    // Wait for the jobs this call started (each ends when its client goes).
    for (std::uint64_t e = ended->load(std::memory_order_acquire); e < started;
         e = ended->load(std::memory_order_acquire)) {
      ended->wait(e, std::memory_order_acquire);
    }
  }
}

}  // namespace rig::agent

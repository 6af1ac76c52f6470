// rig-agent under a service manager (packaging/rig-agent.service, Type=notify): it tells
// NOTIFY_SOCKET "READY=1" once it listens and "STOPPING=1" when SIGTERM begins its drain.
// Against a real rig-agent process and a real unix datagram socket; notify_service_manager's
// outcomes in this process.
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "agent_process.h"
#include "process/notify.h"

namespace rig::test {
namespace {

// A unix datagram socket bound to a fresh path in TMPDIR: the service manager's end.
class NotifySocket {
 public:
  NotifySocket() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != 0 ? dir : "/tmp") + "/rig-notify-" + std::to_string(::getpid()) +
            "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this) & 0xffff);
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path_.c_str(), sizeof sa.sun_path - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  }
  ~NotifySocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // The next datagram within 10 s ("" if none came).
  std::string next() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return "";
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(ServiceManager, TheAgentSaysReadyOnceItListensAndStoppingOnSigterm) {
  NotifySocket manager;
  AgentProcess agent({"--drain-ms", "100"}, false, {"env", "NOTIFY_SOCKET=" + manager.path()});
  const std::string ready = manager.next();
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << ready;
  EXPECT_NE(ready.find("STATUS=listening on " + agent.endpoint()), std::string::npos) << ready;
  ::kill(agent.pid(), SIGTERM);
  const std::string stopping = manager.next();
  EXPECT_NE(stopping.find("STOPPING=1"), std::string::npos) << stopping;
  const int status = agent.wait_exit(10000);
  EXPECT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(ServiceManager, SighupRereadsTheSecretsAtOnceSayingReloadingThenReady) {
  NotifySocket manager;
  AgentProcess agent({}, false, {"env", "NOTIFY_SOCKET=" + manager.path()});
  ASSERT_NE(manager.next().find("READY=1"), std::string::npos);
  agent.signal(SIGHUP);
  // No connection is made: the reread must not wait for one.
  const std::string reloading = manager.next();
  EXPECT_NE(reloading.find("RELOADING=1"), std::string::npos) << reloading;
  EXPECT_NE(reloading.find("MONOTONIC_USEC="), std::string::npos) << reloading;
  const std::string ready = manager.next();
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << ready;
  EXPECT_NE(ready.find("secrets reread: 1 in use"), std::string::npos) << ready;
  EXPECT_TRUE(agent.alive());
}

// Sets NOTIFY_SOCKET for its life, and unsets it after.
class NotifyVariable {
 public:
  explicit NotifyVariable(const std::string& value) { ::setenv("NOTIFY_SOCKET", value.c_str(), 1); }
  ~NotifyVariable() { ::unsetenv("NOTIFY_SOCKET"); }
};

TEST(ServiceManager, ANotifyIsOkWithoutASocketAndAFailureHasItsCausesErrnoAndThePath) {
  ASSERT_EQ(std::getenv("NOTIFY_SOCKET"), nullptr) << "this test sets NOTIFY_SOCKET itself";
  EXPECT_TRUE(agent::notify_service_manager("READY=1").ok());
  {
    NotifySocket manager;
    const NotifyVariable set(manager.path());
    EXPECT_TRUE(agent::notify_service_manager("READY=1").ok());
    EXPECT_EQ(manager.next(), "READY=1");
  }
  {
    const std::string path = "/" + std::string(200, 'n');
    const NotifyVariable set(path);
    const wire::Outcome told = agent::notify_service_manager("READY=1");
    EXPECT_EQ(told.err(), -EINVAL);
    EXPECT_EQ(told.why(), "NOTIFY_SOCKET='" + path + "': longer than a unix socket's path");
  }
  {
    const std::string path = "/nonexistent-rig-notify-" + std::to_string(::getpid());
    const NotifyVariable set(path);
    const wire::Outcome told = agent::notify_service_manager("READY=1");
    EXPECT_EQ(told.err(), -ENOENT);
    EXPECT_EQ(told.why(), "NOTIFY_SOCKET='" + path + "': " + std::strerror(ENOENT));
  }
}

}  // namespace
}  // namespace rig::test

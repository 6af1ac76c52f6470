#include "process_facts.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "rig/remote/job.h"

namespace rig::test {

ProcessHolds held_by(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  ProcessHolds h;
  std::ifstream status(dir + "/status");
  if (!status) throw std::runtime_error("process " + std::to_string(pid) + " is gone");
  for (std::string key; status >> key;) {
    if (key == "Threads:") status >> h.threads;
    if (key == "VmRSS:") {
      status >> h.resident_bytes;  // kB
      h.resident_bytes *= 1024;
    }
  }
  DIR* fds = ::opendir((dir + "/fd").c_str());
  if (fds == nullptr) throw std::runtime_error("process " + std::to_string(pid) + " is gone");
  while (const dirent* e = ::readdir(fds)) {
    if (e->d_name[0] != '.') ++h.fds;
  }
  ::closedir(fds);
  std::vector<std::string> names;
  if (DIR* tasks = ::opendir((dir + "/task").c_str())) {
    while (const dirent* e = ::readdir(tasks)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream comm(dir + "/task/" + e->d_name + "/comm");
      std::string name;
      if (std::getline(comm, name)) names.push_back(name);
    }
    ::closedir(tasks);
  }
  std::ranges::sort(names);
  for (const std::string& n : names) h.thread_names += (h.thread_names.empty() ? "" : " ") + n;
  return h;
}

std::chrono::milliseconds within(std::chrono::milliseconds bound, const std::function<bool()>& done) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    if (done()) return took;
    if (took > bound) return std::chrono::milliseconds(-1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string connects_within(const std::string& endpoint) {
  std::string why = "never tried";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      auto job = remote::Job::create();
      job->connect(endpoint);
      return "";
    } catch (const std::exception& e) {
      why = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return why;
}

}  // namespace rig::test

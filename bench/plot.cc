#include "plot.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <vector>

extern char** environ;

namespace rig::bench {

int run_plot(const PlotCommand& cmd) {
  std::vector<std::string> args = {cmd.python, cmd.script, "--results", cmd.results, "--out", cmd.out};
  if (!cmd.references.empty()) {
    args.push_back("--references");
    args.push_back(cmd.references);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return 127;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace rig::bench

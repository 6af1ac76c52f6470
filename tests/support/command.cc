#include "command.h"

#include <sys/wait.h>

#include <cstdio>

namespace rig::test {

bool CommandRun::exited(int code) const { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == code; }

CommandRun run_command(const std::string& command) {
  CommandRun r;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) r.out += buf;
  r.status = ::pclose(p);
  return r;
}

}  // namespace rig::test

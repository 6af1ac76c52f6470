// A shell command run to its end for tests (a tool's or rig-agent's exit and output).
#pragma once

#include <string>

namespace rig::test {

struct CommandRun {
  int status = -1;  // as waitpid reports it; -1: the command could not be started
  std::string out;  // what it printed (stdout; add 2>&1 to the command for stderr)
  bool exited(int code) const;
};

// Runs `command` with /bin/sh and collects what it printed until it ends.
CommandRun run_command(const std::string& command);

}  // namespace rig::test

// rig-agent's log under journald: where stderr is the stream JOURNAL_STREAM names, each line
// starts with its syslog priority ("<6>" for info) and has no time of its own; elsewhere the
// usual lines. Runs the real rig-agent with its stderr in a file and JOURNAL_STREAM naming that
// file (as systemd names the journal's socket), or another.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "agent_process.h"
#include "command.h"

namespace rig::test {
namespace {

// The log of a rig-agent run for a second (then SIGTERM: it drains and stops), with
// JOURNAL_STREAM set to `stream` (a shell word; $log is the file that is its stderr), one line each.
std::vector<std::string> log_lines(const std::string& stream) {
  const CommandRun run = run_command("log=$(mktemp) && JOURNAL_STREAM=" + stream +
                                     " timeout -s TERM 1 env -u RIG_SECRET_FILE -u RIG_SECRET " + agent_path() +
                                     " --listen 127.0.0.1:0 --log debug >/dev/null 2>\"$log\"; cat \"$log\"; rm -f \"$log\"");
  std::vector<std::string> lines;
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

TEST(JournalLog, UnderJournaldEachLineStartsWithItsSyslogPriorityAndCarriesNoTime) {
  const std::vector<std::string> lines = log_lines("$(stat -c %d:%i \"$log\")");
  ASSERT_FALSE(lines.empty());
  bool info = false;
  for (const std::string& l : lines) {
    ASSERT_TRUE(l.size() > 3 && l[0] == '<' && l[2] == '>') << l;
    EXPECT_EQ(l.find("[20"), std::string::npos) << l;  // no "[2025-..." of its own
    if (l.rfind("<6>[info] ", 0) == 0) info = true;
    if (l.find("[debug]") != std::string::npos) {
      EXPECT_EQ(l.rfind("<7>", 0), 0u) << l;
    }
  }
  EXPECT_TRUE(info) << lines.front();
}

TEST(JournalLog, WhereStderrIsNotTheJournalsStreamTheLinesHaveTheirTimeAndNoPriority) {
  for (const std::string stream : {"", "1:1", "$(stat -c %d:%i /)"}) {
    const std::vector<std::string> lines = log_lines(stream);
    ASSERT_FALSE(lines.empty()) << stream;
    for (const std::string& l : lines) EXPECT_EQ(l.rfind("[20", 0), 0u) << stream << ": " << l;
  }
}

}  // namespace
}  // namespace rig::test

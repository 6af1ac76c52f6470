// The agent's log on stderr, as journald reads it when systemd runs the agent: systemd connects
// stderr to the journal and says so in JOURNAL_STREAM ("DEVICE:INODE" of that stream;
// systemd.exec(5)). Where stderr is still that stream, each line starts with its syslog
// priority, "<N>" (sd-daemon(3)'s prefixes: critical 2, error 3, warn 4, info 6, debug and
// trace 7), and carries no time (journald stamps each line). Elsewhere (a terminal, a file, a
// child whose stderr was redirected) the usual lines, with their time.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace rig::agent {

// Whether stderr is the stream that JOURNAL_STREAM names (its device and inode).
bool stderr_is_journal();

// The agent's logger, named `name`, writing to stderr as above.
std::shared_ptr<spdlog::logger> stderr_logger(const char* name);

}  // namespace rig::agent

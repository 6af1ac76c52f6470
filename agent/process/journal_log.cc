#include "process/journal_log.h"

#include <sys/stat.h>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace rig::agent {
namespace {

// syslog's priority of a level (<syslog.h>'s LOG_CRIT .. LOG_DEBUG).
char priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical: return '2';
    case spdlog::level::err: return '3';
    case spdlog::level::warn: return '4';
    case spdlog::level::info: return '6';
    default: return '7';
  }
}

// The pattern's %* under journald: "<N>".
class PriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const char text[] = {'<', priority(msg.level), '>'};
    dest.append(text, text + sizeof text);
  }
  std::unique_ptr<spdlog::custom_flag_formatter> clone() const override { return std::make_unique<PriorityFlag>(); }
};

}  // namespace

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  std::uintmax_t device = 0, inode = 0;
  if (stream == nullptr || std::sscanf(stream, "%" SCNuMAX ":%" SCNuMAX, &device, &inode) != 2) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return st.st_dev == device && st.st_ino == inode;
}

std::shared_ptr<spdlog::logger> stderr_logger(const char* name) {
  if (!stderr_is_journal()) return spdlog::stderr_color_mt(name);
  auto logger = spdlog::stderr_logger_mt(name);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PriorityFlag>('*').set_pattern("%*[%l] %v");
  logger->set_formatter(std::move(formatter));
  return logger;
}

}  // namespace rig::agent

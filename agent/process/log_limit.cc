#include "process/log_limit.h"

namespace rig::agent {

bool LogLimit::allow(std::uint64_t& left_out) {
  const auto now = std::chrono::steady_clock::now();
  if (logged_ && now - last_ < every_) {
    ++left_out_;
    return false;
  }
  logged_ = true;
  last_ = now;
  left_out = left_out_;
  left_out_ = 0;
  return true;
}

std::string left_out_note(std::uint64_t left_out) {
  if (left_out == 0) return "";
  return " (" + std::to_string(left_out) + " more like it since the last line, not logged)";
}

}  // namespace rig::agent

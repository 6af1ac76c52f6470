// Lines of one kind, logged at most once a second: a flood of strangers fills no disk. The first
// line is logged at once; those in the second after it are counted, and the next line logged
// says how many were left out. One thread uses a LogLimit (the accept thread's).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rig::agent {

class LogLimit {
 public:
  explicit LogLimit(std::chrono::milliseconds every = std::chrono::seconds(1)) : every_(every) {}
  // Whether this line is logged; when it is, `left_out` gets how many were not since the last.
  bool allow(std::uint64_t& left_out);

 private:
  std::chrono::milliseconds every_;
  bool logged_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::uint64_t left_out_ = 0;
};

// What a logged line adds for those left out before it: "" for none, else " (N more like it
// since the last line, not logged)".
std::string left_out_note(std::uint64_t left_out);

}  // namespace rig::agent

// Draws rig-bench's bandwidth against size with the reference figures as horizontal lines, by
// running bench/plot.py (python3 with matplotlib: Debian's python3-matplotlib).
#pragma once

#include <string>

namespace rig::bench {

struct PlotCommand {
  std::string python;      // interpreter that has matplotlib
  std::string script;      // bench/plot.py
  std::string results;     // rig-bench's JSON
  std::string references;  // the references' JSON, or "" for none
  std::string out;         // the PNG to write
};

// Runs the script and waits for it. Returns its exit status (127 if it could not be started).
int run_plot(const PlotCommand& cmd);

}  // namespace rig::bench

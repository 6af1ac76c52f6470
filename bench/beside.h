// Files rig-bench finds beside its own executable, so that no path of the build tree is compiled
// into it: the same binary works in the build tree and once installed (docs/PACKAGING.md).
#pragma once

#include <initializer_list>
#include <string>

namespace rig::bench {

// The first of `candidates` (paths relative to the folder that holds this executable) that
// exists, as an absolute path; the first candidate if none exists (so the error names it).
std::string beside_self(std::initializer_list<const char*> candidates);

}  // namespace rig::bench

// Versions: the software's (the CMake project's, as `rig-agent --version`, rig-info and
// rig-bench's JSON print it) and the protocol's (kVersion, in every hello, join and welcome;
// wire/PROTOCOL.md 9).
#pragma once

namespace rig::wire {

// "0.1": the release of rig-remote this was built from.
const char* software_version();

}  // namespace rig::wire

#include "rig/wire/version.h"

#ifndef RIG_REMOTE_VERSION
#error "RIG_REMOTE_VERSION is set by wire/CMakeLists.txt from the project's version"
#endif

namespace rig::wire {

const char* software_version() { return RIG_REMOTE_VERSION; }

}  // namespace rig::wire

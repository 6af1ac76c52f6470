// systemd's readiness protocol (sd_notify(3)) without libsystemd: when the service manager sets
// NOTIFY_SOCKET (a unix datagram socket; '@' at the start: the abstract namespace), rig-agent
// sends it "READY=1" once it listens, "RELOADING=1" then "READY=1" around a SIGHUP's reread of the
// secrets, and "STOPPING=1" when it begins to stop.
#pragma once

#include <string>

#include "rig/wire/outcome.h"

namespace rig::agent {

// Sends `state` ("READY=1\nSTATUS=...") to NOTIFY_SOCKET; ok when it is unset. A failure names
// the socket's path and errno's text: -EINVAL for a path longer than a unix socket's (as
// sd_notify says), else the errno of the socket or the send that failed.
wire::Outcome notify_service_manager(const std::string& state);

}  // namespace rig::agent

// systemd's readiness protocol (sd_notify(3)) without libsystemd: when the service manager sets
// NOTIFY_SOCKET (a unix datagram socket; '@' at the start: the abstract namespace), rig-agent
// sends it "READY=1" once it listens, "RELOADING=1" then "READY=1" around a SIGHUP's reread of the
// secrets, and "STOPPING=1" when it begins to stop.
#pragma once

#include <string>

namespace rig::agent {

// Sends `state` ("READY=1\nSTATUS=...") to NOTIFY_SOCKET; true when it is unset. False, with why
// (the socket's path and errno's text), when the send failed.
bool notify_service_manager(const std::string& state, std::string& why);

}  // namespace rig::agent

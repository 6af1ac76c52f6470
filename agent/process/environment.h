// The RIG_* variables rig-agent reads, checked at its start: a value it would not understand is
// an error naming the variable, instead of being ignored by the reader deep inside (the engine's
// default_backend() and resolve_send_zc_bytes()). RIG_SECRET_FILE and RIG_SECRET are checked
// where they are read (load_secrets), which names them too.
#pragma once

namespace rig::agent {

// Throws std::runtime_error naming the variable, its value and what it must be.
void check_environment();

}  // namespace rig::agent

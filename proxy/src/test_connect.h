// Tests only: Job::connect with every socket of the link wrapped in an engine::FaultySocket
// (rig/engine/faulty_socket.h) that injects `faults`; its stripes then use the plain backend.
// Not installed: a runtime never makes a faulty link.
#pragma once

#include <memory>
#include <string>

#include "link_core.h"
#include "rig/engine/faulty_socket.h"
#include "rig/remote/job.h"

namespace rig::remote {

inline Link& connect_with_faults(Job& job, const std::string& endpoint, const LinkOptions& options,
                                 const engine::Faults& faults) {
  return LinkCore::connect(job, endpoint, options, std::make_shared<const engine::Faults>(faults));
}

}  // namespace rig::remote

// One connection to this agent: a data connection joining its job, or a job. A job's session
// reads the client's messages in order on one thread and answers each: requests go to the
// object table, handovers (resolved, their client bytes received) to the executor, which runs
// each device's handovers in order; what goes back leaves through the outbox. Everything the job
// held is freed when it ends, however it ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "devices/device.h"
#include "exec/executor.h"
#include "exec/incoming.h"
#include "exec/outbox.h"
#include "exec/staging.h"
#include "job/job_stripes.h"
#include "job/handshake.h"
#include "job/objects.h"
#include "process/config.h"
#include "process/drain.h"
#include "process/gauges.h"
#include "process/heartbeat.h"
#include "rig/engine/connection.h"
#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"

namespace rig::agent {

class Session {
 public:
  // A job whose client proved itself (job/handshake.h). `gauges`: the agent's counts, for its
  // limits; `drain`: the agent's stop (drain.h); `heartbeat`: pings the client while the session
  // is busy with one message for long (heartbeat.h).
  Session(Authenticated job, const AgentConfig& config, std::string peer, Gauges& gauges, Drain& drain,
          Heartbeat& heartbeat);
  ~Session();
  // Welcomes the job (or refuses it: --max-jobs, the agent's stop) and runs it until it closes
  // or fails; then everything the job held is freed.
  void run();
  const engine::Counters& counters() const { return counters_; }

 private:
  // The job's parts, made once its hello was read.
  struct JobParts {
    JobParts(std::unique_ptr<engine::Socket> socket, const AgentConfig& config, engine::Counters& counters);
    // end(), also when run() did not get there (an exception): the members go in reverse
    // order, so without it pending work's staging and objects' memory would be freed while
    // the devices (destroyed last) may still copy into or out of them.
    ~JobParts() { end(); }
    // Stops reading and, once no device's issued work runs, lets go of everything the job held:
    // pending work (its staging back to the pool, unpinned), objects, images. Idempotent.
    void end();
    std::vector<std::unique_ptr<DeviceBackend>> devices;
    engine::Connection connection;
    engine::FrameReader reader;
    JobStripes stripes;
    JobStaging staging;  // bounded by config.max_staged_bytes
    ObjectTable objects;
    Outbox outbox;
    Incoming incoming;
    Executor executor;
    std::shared_ptr<Wake> wake;  // devices that complete in the background signal it (set_wake)
  };
  // The job's parts on the socket of `fd`, its reading set up (before_read, spin, gathering, the
  // watch of devices that complete in the background); a failure (no eventfd for the wake) ends
  // the job before its welcome.
  wire::Outcome make_job(int fd);
  // The job's end, `end` its record (serve()'s): closed by its client, or failed (the agent's stop
  // first runs what the job received, and then fails it); logged, a failure told to the client,
  // everything the job held freed, its bytes counted.
  void end_job(wire::Outcome end);
  // Reads and answers the client's messages until the job ends: ok when the client closed it
  // (its Close), wire::kStreamEnded when the client closed the connection between messages,
  // else the job's failure (as on_message's, -ETIMEDOUT the client's silence).
  wire::Outcome serve();
  // One message the client sent, whole: a failure fails the job (-EPROTO the client's
  // violation, -EIO a device's fault, -ENOMEM no room, -EPIPE the connection lost); `closed`
  // once it was the client's Close.
  wire::Outcome on_message(wire::MsgType type, std::span<const std::byte> body, bool& closed);
  // What the devices completed in the background, reported now: 0, or -ECANCELED (a device
  // faulted: fault_ says why) or -EPIPE (the reports could not be sent).
  int report_completed();
  // Watches the devices that complete in the background (a GPU's stream) while serve() waits;
  // fails when their wake cannot be made.
  wire::Outcome watch_devices();
  wire::Outcome on_request(std::span<const std::byte> body);
  wire::Outcome on_release(std::span<const std::byte> body);
  wire::Outcome on_handover(std::span<const std::byte> body);
  // A status query (only when the job accepted kFeatureStatus): answered at once (status.h).
  wire::Outcome on_status_query(std::span<const std::byte> body);
  // The drain: runs the handovers the job received until none is left or the drain's deadline
  // passes, and sends their reports. Fails with the fault of a device that faults meanwhile.
  wire::Outcome run_received();

  AgentConfig config_;
  std::string peer_;
  Gauges& gauges_;
  Drain& drain_;
  Heartbeat& heartbeat_;
  Authenticated hello_;  // its fd is the Session's until the job's socket takes it
  engine::Counters counters_;
  std::unique_ptr<JobParts> job_;
  bool status_accepted_ = false;  // the welcome accepted kFeatureStatus
  wire::Outcome fault_;  // the executor's poll before a read, that failed the job
  // serve() read the client's Close: the job ended by the client's word, even if the agent's
  // stop began meanwhile (an end of stream, by contrast, may be the drain's own shutdown).
  bool close_read_ = false;
  // For the job's summary line: when it was welcomed, and the handovers it handed over.
  std::chrono::steady_clock::time_point welcomed_;
  std::uint64_t handovers_ = 0;
  // "0.25 s, handovers 3, bytes in 4200, bytes out 180"
  std::string summary() const;
};

}  // namespace rig::agent

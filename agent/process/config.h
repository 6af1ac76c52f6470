// What one rig-agent offers its jobs: the devices it opens, their budgets, and the transport's
// settings. Set by rig-agent's options; read by every job's session.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devices/host_memory_limit.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/secret.h"
#include "rig/engine/socket.h"

namespace rig::agent {

// How a simulated device reports a value done: at once (as the machine's host does), or later,
// from the executor's next poll, as an asynchronous device (a GPU's stream) does; or woken:
// later, and its work completes only once the session, about to wait for the client, asks the
// device to wake it (DeviceBackend::arm_wake), as a GPU's does in the background while it waits.
enum class SimCompletion { kNow, kLater, kWoken };

// Which devices besides the host the agent opens: simulated ones, the machine's GPUs (CUDA),
// or the GPUs where the driver finds one and simulated devices otherwise. Settled at start
// (choose_device_kind): kAuto never reaches a job.
enum class DeviceKind { kSim, kCuda, kAuto };

struct AgentConfig {
  DeviceKind device_kind = DeviceKind::kSim;
  std::uint32_t devices = 2;                       // simulated devices besides the host
  std::uint64_t device_budget = 1ull << 30;        // bytes a job may hold on each (a GPU: at most its free memory)
  std::uint64_t host_budget = 1ull << 30;
  std::uint64_t instruction_budget = 1ull << 32;   // per launch of a words part
  std::uint32_t isolated = 0;                      // >0: this simulated device reaches no other
  SimCompletion sim_completion = SimCompletion::kNow;
  engine::Backend backend = engine::default_backend();
  std::uint32_t max_stripes = 8;                   // data connections a job may join (0: none)
  // A client silent this long fails its job, between frames or inside one (0: no bound). A
  // live client pings an agent that has been silent for a second, so an idle job stays.
  int silence_ms = 60000;
  // Polling mode: a job's reading thread asks for bytes without waiting for up to this many
  // microseconds before it sleeps (engine::FrameReader::set_spin_us). RIG_POLL_US, else 0.
  int poll_us = engine::default_poll_us();
  // Gathering (engine::FrameReader::set_gather): on a busy stream of small frames a job's
  // reading waits up to this many microseconds for kGatherBytes (about eight tiny handovers)
  // before it reads, so one wake serves many frames (0: off). docs/TUNING.md, "Gathering".
  int gather_us = 100;
  static constexpr std::size_t kGatherBytes = 1024;
  // What clients may make the agent hold: each limit refuses with a reason, and the agent goes
  // on serving. Connections of any kind (each holds a thread), connections still in their
  // handshake, jobs at once; per job: objects and images, and bytes waiting in staging.
  std::uint32_t max_connections = 256;
  std::uint32_t max_handshakes = 32;  // past it, the oldest is shed (handshake_room.h)
  // The whole handshake, every frame of it both ways, is done within this of the accept.
  int handshake_ms = 10000;
  std::uint32_t max_handshakes_per_source = 8;
  std::uint32_t max_jobs = 64;
  std::uint64_t max_objects = 1u << 16;
  std::uint64_t max_staged_bytes = 1ull << 30;
  // The host memory of all jobs together (staging, host and simulated objects): half the
  // machine's by default (default_max_host_bytes says why). `host_memory` counts it, one
  // account shared by every job's copy of the config: made by rig-agent's main from
  // max_host_bytes (null, as in tests that make a config of their own: not bounded).
  std::uint64_t max_host_bytes = default_max_host_bytes();
  std::shared_ptr<HostMemoryLimit> host_memory;
  // On SIGTERM or SIGINT: how long jobs may still run the handovers they received before they
  // fail with "the agent is stopping" (drain.h).
  int drain_ms = 5000;
  // The secrets a job may prove (two during a rotation); none: the agent runs open, which it
  // does only on loopback. Replaced whole when rig-agent rereads them (SIGHUP).
  std::shared_ptr<const std::vector<engine::Secret>> secrets;
  std::vector<std::string> secret_files;  // where they come from (else RIG_SECRET_FILE, RIG_SECRET)
  // RIG_SECRET's bytes as rig-agent found them at its start (take_secret_variable), for a reread
  // once the variable is gone from its environment; null if it was not set.
  std::shared_ptr<const engine::SecretBuffer> secret_variable;
  // The agent's name in every challenge, covered by both proofs, which a job may pin
  // (LinkOptions::agent_name): --name, else the machine's host name (agent_name()).
  std::string name;
  bool authenticates() const { return secrets && !secrets->empty(); }
};

// Reads the secrets of `config.secret_files` (at most two: a rotation), else the environment's
// (RIG_SECRET_FILE, RIG_SECRET, else `config.secret_variable`); none if neither names one. Fails
// as engine::read_secret_file, naming the file and the cause, for a secret it refuses (readable
// by others, shorter than 32 bytes); -EINVAL for more than two files.
wire::Result<std::shared_ptr<const std::vector<engine::Secret>>> load_secrets(const AgentConfig& config);

// RIG_SECRET's bytes (null if unset or empty), then the variable is gone: its value overwritten
// in place (so /proc/PID/environ no longer shows it) and unset, so no child inherits it. Changes
// the environment, which only a process's own main may do: rig-agent calls it before any thread
// starts (the library never changes the environment).
std::shared_ptr<const engine::SecretBuffer> take_secret_variable();

// Every setting as `name=value` words, for the log at start (the secrets by where they come
// from, never their bytes).
std::string describe(const AgentConfig& config);

}  // namespace rig::agent

// rig-info: what this machine offers rig-remote (like ucx_info): the release, how this build was
// built (sanitizers, the CUDA backend), the GPUs it sees, io_uring and its features, zero-copy
// sends, the memlock limit, the settings and every RIG_* variable (its value, never a secret's,
// and its default). As text, one fact a line; with --json, as JSON. Checks the variables as
// rig-agent does: a bad value is an error naming it. With --agent HOST:PORT, instead: that
// agent's own figures, from its status query (a job of its own connects, asks, and closes).
#include <sys/resource.h>

#include <liburing.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "as_text.h"
#include "gpus.h"
#include "rig/engine/env_settings.h"
#include "rig/engine/socket.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace {

using json = nlohmann::ordered_json;

// The kernel's io_uring: whether a ring can be made (else why), its feature flags, and the
// operations rig-remote uses.
json uring_facts() {
  io_uring ring{};
  io_uring_params params{};
  const int rc = io_uring_queue_init_params(2, &ring, &params);
  if (rc < 0) return {{"available", false}, {"why", std::strerror(-rc)}};
  static constexpr struct {
    unsigned bit;
    const char* name;
  } kFeatures[] = {{IORING_FEAT_SINGLE_MMAP, "single_mmap"}, {IORING_FEAT_NODROP, "nodrop"},
                   {IORING_FEAT_SUBMIT_STABLE, "submit_stable"}, {IORING_FEAT_FAST_POLL, "fast_poll"},
                   {IORING_FEAT_EXT_ARG, "ext_arg"}, {IORING_FEAT_NATIVE_WORKERS, "native_workers"},
                   {IORING_FEAT_CQE_SKIP, "cqe_skip"}};
  json features = json::array();
  for (const auto& f : kFeatures) {
    if ((params.features & f.bit) != 0) features.push_back(f.name);
  }
  json ops = json::object();
  if (io_uring_probe* probe = io_uring_get_probe_ring(&ring)) {
    static constexpr struct {
      int op;
      const char* name;
    } kOps[] = {{IORING_OP_SEND, "send"}, {IORING_OP_RECV, "recv"}, {IORING_OP_SENDMSG, "sendmsg"},
                {IORING_OP_SEND_ZC, "send_zc"}, {IORING_OP_SENDMSG_ZC, "sendmsg_zc"},
                {IORING_OP_PROVIDE_BUFFERS, "provide_buffers"}};
    for (const auto& o : kOps) ops[o.name] = io_uring_opcode_supported(probe, o.op) != 0;
    io_uring_free_probe(probe);
  }
  io_uring_queue_exit(&ring);
  return {{"available", true}, {"features", features}, {"ops", ops}};
}

// RLIMIT_MEMLOCK: what zero-copy sends and registered staging buffers may pin.
json memlock() {
  rlimit r{};
  if (::getrlimit(RLIMIT_MEMLOCK, &r) != 0) return {{"why", std::strerror(errno)}};
  const auto text = [](rlim_t v) -> json { return v == RLIM_INFINITY ? json("unlimited") : json(v); };
  return {{"soft_bytes", text(r.rlim_cur)}, {"hard_bytes", text(r.rlim_max)}};
}

// How this build was built: CMake's options (tools/CMakeLists.txt passes them).
json build_facts() {
#if defined(RIG_TSAN)
  const char* sanitizers = "ThreadSanitizer";
#elif defined(RIG_ASAN)
  const char* sanitizers = "AddressSanitizer, UndefinedBehaviorSanitizer";
#else
  const char* sanitizers = "none";
#endif
#if defined(RIG_CUDA)
  const std::string cuda = "built (CUDA toolkit " RIG_INFO_CUDA_TOOLKIT "; the driver is loaded at run time)";
#else
  const std::string cuda = "not built (no CUDA toolkit at configure time)";
#endif
  const std::string type = RIG_INFO_BUILD_TYPE;
  return {{"build_type", type.empty() ? "none (CMake's default flags)" : type},
          {"compiler", RIG_INFO_COMPILER},
          {"sanitizers", sanitizers},
          {"cuda_backend", cuda}};
}

// What a job or an agent started here would use.
json settings() {
  json s;
  s["backend"] = rig::engine::backend_name(rig::engine::default_backend());
  const auto zc = rig::engine::env_settings()->send_zc_bytes;
  s["send_zc_bytes"] = zc ? json(*zc) : json("auto: off towards loopback, 1048576 otherwise");
  return s;
}

// Every RIG_* variable, from the engine's one table: its value (null: unset or empty; a
// secret's only "(set)", never its bytes) and what unset means.
json variables() {
  json out = json::object();
  for (const rig::engine::EnvVariable& v : rig::engine::env_variables()) {
    const char* value = rig::engine::env_text(v.name);
    const json shown = value == nullptr ? json(nullptr) : v.secret ? json("(set)") : json(value);
    out[v.name] = {{"value", shown}, {"default", v.fallback}};
  }
  return out;
}

// This machine's facts, in the order the text shows them.
json machine_facts() {
  json info;
  info["version"] = rig::wire::software_version();
  info["protocol"] = rig::wire::kVersion;
  info["build"] = build_facts();
  info["gpus"] = rig::info::gpu_facts();
  info["io_uring"] = uring_facts();
  const bool zc = info["io_uring"].value("available", false) && info["io_uring"]["ops"].value("send_zc", false);
  info["zero_copy"] = {{"send_zc", zc}};
  info["memlock"] = memlock();
  info["settings"] = settings();
  info["variables"] = variables();
  return info;
}

// The status of the agent at `endpoint`: its JSON (in the agent's order), with the endpoint and
// the devices it offers this job. Throws.
json agent_status(const std::string& endpoint, const std::string& secret_file) {
  auto job = rig::remote::Job::create();
  rig::remote::LinkOptions options;
  options.secret_file = secret_file;
  rig::remote::Link& link = job->connect(endpoint, options);
  json status = json::parse(link.agent_status());
  json devices = json::array();
  for (const rig::remote::Account& a : link.accounts()) {
    devices.push_back({{"id", a.id}, {"name", a.name}, {"arch", a.arch}});
  }
  json out;
  out["endpoint"] = endpoint;
  out["address"] = link.address();
  job->close();
  out["devices"] = devices;
  out["status"] = std::move(status);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rig-info: what this machine offers rig-remote (the build, GPUs, io_uring, zero-copy, memlock, "
               "settings, the RIG_* variables), as text or JSON"};
  app.set_version_flag("--version", std::string("rig-info ") + rig::wire::software_version() + " (protocol " +
                                        std::to_string(rig::wire::kVersion) + ")");
  std::string agent, secret_file;
  bool as_json = false;
  app.add_flag("--json", as_json, "print JSON instead of text (the same facts)");
  app.add_option("--agent", agent,
                 "HOST:PORT of a running rig-agent: print its status instead (version, uptime, jobs (this "
                 "query's own job among them), bytes in and out, every thread's CPU time, context switches "
                 "and system calls)");
  app.add_option("--secret-file", secret_file,
                 "the secret shared with --agent's rig-agent (default: RIG_SECRET_FILE, else RIG_SECRET)");
  CLI11_PARSE(app, argc, argv);
  // A bad RIG_* variable is an error naming it.
  if (const rig::wire::Outcome& env = rig::engine::env_settings().outcome(); !env.ok()) {
    std::cerr << "rig-info: " << env.why() << "\n";
    return 1;
  }
  try {
    const json facts = agent.empty() ? machine_facts() : agent_status(agent, secret_file);
    if (as_json) {
      std::cout << facts.dump(2) << "\n";
    } else {
      rig::info::write_text(std::cout, facts);
    }
  } catch (const std::exception& e) {
    std::cerr << "rig-info: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

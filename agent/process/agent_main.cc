// rig-agent: opens this machine's host and its GPUs or simulated devices for jobs that connect.
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "devices/gpu_devices.h"
#include "job/handshake.h"
#include "process/config.h"
#include "process/config_file.h"
#include "process/journal_log.h"
#include "process/notify.h"
#include "process/server.h"
#include "rig/engine/env_settings.h"
#include "rig/engine/number_text.h"
#include "rig/engine/socket.h"
#include "rig/engine/tcp.h"
#include "rig/wire/messages.h"
#include "rig/wire/version.h"

namespace {

// SIGINT, SIGTERM and SIGHUP: blocked in every thread (from main's first line, so threads that
// libraries start inherit it) and taken by one thread with sigwait, so no handler runs inside a
// blocked call (ThreadSanitizer defers handlers to its next interceptor).
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// The thread that takes those signals for a server while it lives: SIGHUP rereads the secrets,
// SIGINT and SIGTERM stop the agent.
class SignalTaker {
 public:
  explicit SignalTaker(rig::agent::Server& server) : thread_([this, &server] { take(server); }) {}
  ~SignalTaker() {
    // release: pairs with take()'s acquire once the SIGTERM sent here wakes it.
    done_.store(true, std::memory_order_release);
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }
  SignalTaker(const SignalTaker&) = delete;
  SignalTaker& operator=(const SignalTaker&) = delete;

 private:
  void take(rig::agent::Server& server) {
    const sigset_t set = stop_signals();
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (done_.load(std::memory_order_acquire)) return;
      if (sig == SIGHUP) {
        server.reload();
      } else {
        server.terminate();
      }
    }
  }
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: started once done_ exists
};

// What the command line sets.
struct Options {
  std::string listen = "127.0.0.1:0";
  rig::agent::AgentConfig config;
  std::string backend = "auto";
  std::string log_level = "info";
  std::string sim_completion = "now";
  std::string device_kind = "sim";
  std::uint64_t max_jobs = 0;
  std::int64_t send_zc_bytes = -1;
};

// "rig-agent 0.1 (protocol 3)"
std::string version_text() {
  return std::string("rig-agent ") + rig::wire::software_version() + " (protocol " +
         std::to_string(rig::wire::kVersion) + ")";
}

// A byte size as an operator writes it (engine::parse_number: 65536, 64MiB, 1GiB), handed on to
// CLI11's conversion and range check as its bytes; --send-zc-bytes's -1 ("auto") passes as is.
void take_byte_units(CLI::App& app) {
  for (const char* name : {"--device-budget", "--host-budget", "--max-staged-bytes", "--max-host-bytes", "--send-zc-bytes"}) {
    const bool auto_allowed = std::string_view(name) == "--send-zc-bytes";
    app.get_option(name)->transform(CLI::Validator(
        [auto_allowed](std::string& text) -> std::string {
          if (auto_allowed && text == "-1") return "";
          const auto n = rig::engine::parse_number(text, UINT64_MAX, rig::engine::Units::kBytes);
          if (!n) return "'" + text + "' is not " + rig::engine::kByteSizeForm;
          text = std::to_string(*n);
          return "";
        },
        "SIZE"));
  }
}

// Connections in their handshake: how many, from one source, for how long.
void define_handshake_options(CLI::App& app, Options& o) {
  app.add_option("--max-handshakes", o.config.max_handshakes,
                 "connections still in their handshake at once (unauthenticated); a newcomer past it sheds "
                 "the oldest of the source that holds the most")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--handshake-ms", o.config.handshake_ms,
                 "a connection's whole handshake (every frame of it, both ways) is done within this of its "
                 "accept, however the peer spreads its bytes; else it is refused")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  app.add_option("--max-handshakes-per-source", o.config.max_handshakes_per_source,
                 "of those, from one source (an IPv4 address, an IPv6 /64); a newcomer past it sheds its "
                 "source's oldest")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
}

// How the agent serves: polling, gathering, silence, its limits, draining, logging.
void define_service_options(CLI::App& app, Options& o) {
  app.add_option("--poll-us", o.config.poll_us,
                 "polling mode: a job's reading thread asks for bytes without waiting for this many "
                 "microseconds before it sleeps (lower latency for the CPU it burns; 0: off; default: "
                 "RIG_POLL_US, else 0)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--gather-us", o.config.gather_us,
                 "gathering: once a client streams small frames faster than one wake per read keeps up "
                 "with, a job's reading waits up to this many microseconds for 1 KiB before it reads, "
                 "so one wake and one batch of reports serve many frames; a wait that runs out ends "
                 "it (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--silence-ms", o.config.silence_ms,
                 "a client that sends nothing for this long, between messages or inside one, fails "
                 "its job (0: no bound; a live client pings a silent agent every second)")
      ->capture_default_str()
      ->check(CLI::Range(0, 24 * 3600 * 1000));
  app.add_option("--max-connections", o.config.max_connections,
                 "connections of any kind at once (each holds a thread); more are refused")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  define_handshake_options(app, o);
  app.add_option("--max-jobs", o.config.max_jobs, "jobs at once; more are refused")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--max-objects", o.config.max_objects,
                 "objects and images one job may hold; an alloc past it is None")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  app.add_option("--max-staged-bytes", o.config.max_staged_bytes,
                 "bytes (or 256MiB) of one job that may wait in staging (bytes from the client that cannot land "
                 "in place yet); a handover past it fails its job")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1} << 20, std::uint64_t{1} << 44));
  app.add_option("--max-host-bytes", o.config.max_host_bytes,
                 "bytes (or 8GiB) of host memory all jobs together may hold: staging, pinned or not, and "
                 "host and simulated objects; past it an alloc is None and a handover's staging fails "
                 "its job, each naming this limit. Default: half the machine's memory (or its cgroup's "
                 "limit), leaving the rest for what it does not count (frames in flight, socket "
                 "buffers, the allocator's kept pages) and the machine's other work")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1} << 20, std::uint64_t{1} << 50));
  app.add_option("--drain-ms", o.config.drain_ms,
                 "on SIGTERM or SIGINT: how long jobs may still run the handovers they received before "
                 "they fail with \"the agent is stopping\" (the agent then exits 0)")
      ->capture_default_str()
      ->check(CLI::Range(0, 24 * 3600 * 1000));
  app.add_option("--jobs", o.max_jobs, "exit after this many jobs have ended (0: serve until killed)")
      ->capture_default_str();
  app.add_option("--log", o.log_level, "log level: trace, debug, info, warn, error, critical, off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  take_byte_units(app);
}

void define_options(CLI::App& app, Options& o) {
  // An option given twice (in the config file and on the command line, or twice there): the last
  // one counts.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", version_text());
  app.add_option("--listen", o.listen, "HOST:PORT to listen on: a name, an IPv4 address or [IPv6] (port 0 picks one; loopback by default)")
      ->capture_default_str();
  app.add_option("--devices", o.config.devices, "simulated devices to open besides the host")
      ->capture_default_str()
      ->check(CLI::Range(0, 63));
  app.add_option("--device-kind", o.device_kind,
                 "the devices besides the host: sim (--devices simulated ones), cuda (the machine's "
                 "GPUs, in the driver's order; refuses to start without one, saying why) or auto "
                 "(the GPUs where the driver finds one, else simulated devices, logging why)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sim", "cuda", "auto"}));
  app.add_option("--isolated", o.config.isolated,
                 "a simulated device that reaches no other device's memory (0: none)")
      ->capture_default_str();
  app.add_option("--device-budget", o.config.device_budget, "bytes a job may hold on each device besides the host (a GPU: at most its free memory at the job's start); sizes take KiB, MiB, GiB or TiB: 1GiB")
      ->capture_default_str();
  app.add_option("--host-budget", o.config.host_budget, "bytes a job may hold on the host (or with a unit: 512MiB)")
      ->capture_default_str();
  app.add_option("--instruction-budget", o.config.instruction_budget,
                 "instructions one launch of a words part may run before it faults")
      ->capture_default_str();
  app.add_option("--sim-completion", o.sim_completion,
                 "when simulated devices report a value done: now, later (from the executor's "
                 "next poll, as an asynchronous device such as a GPU's stream does), or woken (later, "
                 "and only once the job, about to wait for its client, asks the device to wake it, "
                 "as a GPU's work completes in the background: tests the wake without a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"now", "later", "woken"}));
  app.add_option("--backend", o.backend, "socket backend: auto, uring or plain")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "uring", "plain"}));
  app.add_option("--max-stripes", o.config.max_stripes,
                 "data connections a job may stripe large copies over (0: no striping)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  app.add_option("--send-zc-bytes", o.send_zc_bytes,
                 "sends of at least this many bytes (or 64KiB, 1MiB) go zero-copy (io_uring SEND_ZC); 0: never; "
                 "-1: RIG_SEND_ZC_BYTES, else off towards loopback and 1 MiB otherwise")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{-1}, std::int64_t{1} << 40));
  app.add_option("--secret-file", o.config.secret_files,
                 "a file holding the secret jobs must prove (at least 32 bytes, readable by its owner "
                 "only); give two during a rotation; SIGHUP rereads them. Default: RIG_SECRET_FILE, "
                 "else RIG_SECRET; without any the agent runs open, on loopback only")
      ->expected(1, 2)
      ->take_all();
  app.add_option("--name", o.config.name,
                 "the agent's name in its challenges: both proofs of the handshake cover it, and a job "
                 "may pin it (LinkOptions::agent_name); 1 to 63 printable bytes without spaces; default: "
                 "the host's name")
      ->check(CLI::Validator(rig::agent::check_agent_name, "NAME"));
  define_service_options(app, o);
}

// What is wrong with `--name values...` on the command line ("" if nothing): how each line of a
// config file is checked (config_file.h), by the same rules.
std::string check_option(const std::string& name, const std::vector<std::string>& values) {
  CLI::App scratch;
  Options o;
  define_options(scratch, o);
  if (scratch.get_option_no_throw("--" + name) == nullptr) {
    return "unknown name '" + name + "' (rig-agent --help lists the options; give their names without the dashes)";
  }
  std::vector<std::string> args(values.rbegin(), values.rend());  // CLI11 takes them last first
  args.push_back("--" + name);
  try {
    scratch.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? "" : e.what();
  }
  return "";
}

// The command line's and the config file's options (the file's lines checked by check_option).
void define_all(CLI::App& app, Options& o) {
  define_options(app, o);
  rig::agent::add_config_file(app, "a file of options: `name = value` lines (CLI11's format, neither INI nor TOML), "
                              "names without the dashes (devices = 4, device-budget = 1GiB); `#` begins a "
                              "comment; the command line wins over it; an error names the file and the line",
                              check_option);
}

// Applies the options that are not plain fields of the config.
void apply(Options& o) {
  spdlog::set_default_logger(rig::agent::stderr_logger("rig-agent"));  // with priorities under journald
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  if (o.device_kind == "cuda") o.config.device_kind = rig::agent::DeviceKind::kCuda;
  if (o.device_kind == "auto") o.config.device_kind = rig::agent::DeviceKind::kAuto;
  if (o.sim_completion == "later") o.config.sim_completion = rig::agent::SimCompletion::kLater;
  if (o.sim_completion == "woken") o.config.sim_completion = rig::agent::SimCompletion::kWoken;
  if (o.backend == "uring") o.config.backend = rig::engine::Backend::kUring;
  if (o.backend == "plain") o.config.backend = rig::engine::Backend::kPlain;
  if (o.send_zc_bytes >= 0) rig::engine::set_send_zc_default(static_cast<std::size_t>(o.send_zc_bytes));
  // One account for every job (each Session copies the config, and with it this pointer).
  o.config.host_memory = std::make_shared<rig::agent::HostMemoryLimit>(o.config.max_host_bytes);
}

// The RIG_* variables, read before anything else (AgentConfig's defaults read them): a bad one
// refuses the start, saying so.
bool environment_taken() {
  const rig::wire::Outcome& o = rig::engine::env_settings().outcome();
  if (!o.ok()) std::cerr << "rig-agent: " << o.why() << "\n";
  return o.ok();
}

// The listening socket of --listen, once the secrets are loaded and the device kind chosen; it
// refuses to listen beyond loopback without a secret (-EPERM).
rig::wire::Result<int> listen_socket(const Options& o, rig::agent::AgentConfig& config, rig::engine::Address& bound) {
  const rig::wire::Result<rig::engine::Endpoint> ep = rig::engine::parse_endpoint(o.listen);
  RIG_RETURN_IF_FAILED(ep.outcome());
  const auto addresses = rig::engine::resolve(*ep, rig::engine::Use::kListen);
  RIG_RETURN_IF_FAILED(addresses.outcome());
  auto secrets = rig::agent::load_secrets(config);
  RIG_RETURN_IF_FAILED(secrets.outcome());
  config.secrets = *secrets;
  RIG_RETURN_IF_FAILED(rig::agent::choose_device_kind(config));
  if (!config.authenticates() && !std::ranges::all_of(*addresses, rig::engine::is_loopback)) {
    return rig::wire::Outcome::failed(-EPERM, "refusing to listen on " + ep->host +
                                                  " without a secret: anyone who reaches the port could run code here "
                                                  "(give --secret-file, RIG_SECRET_FILE or RIG_SECRET)");
  }
  std::uint16_t port = 0;
  return rig::engine::tcp_listen_first(*addresses, port, &bound);
}

}  // namespace

int main(int argc, char** argv) {
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (!environment_taken()) return 1;
  CLI::App app{"rig-agent: serves this machine's devices to rig-remote jobs over TCP"};
  Options o;
  // Still one thread: the only time the environment may change safely.
  o.config.secret_variable = rig::agent::take_secret_variable();
  define_all(app, o);
  CLI11_PARSE(app, argc, argv);

  apply(o);
  rig::agent::AgentConfig& config = o.config;

  try {
    rig::engine::Address bound;
    const rig::wire::Result<int> listen_fd = listen_socket(o, config, bound);
    if (!listen_fd.ok()) {
      std::cerr << "rig-agent: " << listen_fd.outcome().why() << "\n";
      return 1;
    }
    rig::agent::Server server(*listen_fd, bound, config);
    std::signal(SIGPIPE, SIG_IGN);
    const SignalTaker signal_taker(server);
    spdlog::info("{}: listen={} {} send_zc_bytes={} log={} jobs={}", version_text(),
                 rig::engine::to_string(server.address()), rig::agent::describe(config),
                 o.send_zc_bytes < 0 ? std::string("auto") : std::to_string(o.send_zc_bytes), o.log_level,
                 o.max_jobs == 0 ? std::string("unbounded") : std::to_string(o.max_jobs));
    // The one line a launcher reads to learn the port.
    spdlog::info("devices: the host and {}, {} backend",
                 config.device_kind == rig::agent::DeviceKind::kCuda ? std::string("its GPUs")
                                                                      : std::to_string(config.devices) + " simulated devices",
                 rig::engine::backend_name(config.backend));
    std::cout << "rig-agent listening on " << rig::engine::to_string(server.address()) << std::endl;
    if (const rig::wire::Outcome told = rig::agent::notify_service_manager(
            "READY=1\nSTATUS=listening on " + rig::engine::to_string(server.address()) + "\nMAINPID=" +
            std::to_string(::getpid()));
        !told.ok()) {
      spdlog::warn("readiness not told to the service manager: {}", told.why());
    }
    server.serve(o.max_jobs);
    if (server.terminated()) {
      // Jobs' threads that outlived the drain's bound may still run: end here, without
      // the destructors of statics they use.
      spdlog::info("stopped");
      spdlog::default_logger()->flush();
      std::cout.flush();
      std::_Exit(0);
    }
  } catch (const std::exception& e) {
    std::cerr << "rig-agent: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// rig-agent: opens this machine's host and simulated devices for jobs that connect.
#include <csignal>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "rig/engine/socket.h"
#include "server.h"

namespace {
rig::agent::Server* g_server = nullptr;
extern "C" void on_signal(int) {
  if (g_server != nullptr) g_server->stop();
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rig-agent: serves this machine's devices to rig-remote jobs over TCP"};
  std::string listen = "127.0.0.1:0";
  rig::agent::AgentConfig config;
  std::string backend = "auto";
  std::string log_level = "info";
  std::uint64_t max_jobs = 0;
  std::int64_t send_zc_bytes = -1;
  app.add_option("--listen", listen, "HOST:PORT to listen on (port 0 picks one; loopback by default)")
      ->capture_default_str();
  app.add_option("--devices", config.devices, "simulated devices to open besides the host")
      ->capture_default_str()
      ->check(CLI::Range(0, 63));
  app.add_option("--isolated", config.isolated,
                 "a simulated device that reaches no other device's memory (0: none)")
      ->capture_default_str();
  app.add_option("--device-budget", config.device_budget, "bytes a job may hold on each simulated device")
      ->capture_default_str();
  app.add_option("--host-budget", config.host_budget, "bytes a job may hold on the host")
      ->capture_default_str();
  app.add_option("--instruction-budget", config.instruction_budget,
                 "instructions one launch of a words part may run before it faults")
      ->capture_default_str();
  std::string sim_completion = "now";
  app.add_option("--sim-completion", sim_completion,
                 "when simulated devices report a value done: now, or later (from the executor's "
                 "next poll, as an asynchronous device such as a GPU's stream does)")
      ->capture_default_str()
      ->check(CLI::IsMember({"now", "later"}));
  app.add_option("--backend", backend, "socket backend: auto, uring or plain")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "uring", "plain"}));
  app.add_option("--max-stripes", config.max_stripes,
                 "data connections a job may stripe large copies over (0: no striping)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  app.add_option("--send-zc-bytes", send_zc_bytes,
                 "sends of at least this many bytes go zero-copy (io_uring SEND_ZC); 0: never; "
                 "-1: RIG_SEND_ZC_BYTES, else off towards loopback and 1 MiB otherwise")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{-1}, std::int64_t{1} << 40));
  app.add_option("--jobs", max_jobs, "exit after this many jobs have ended (0: serve until killed)")
      ->capture_default_str();
  app.add_option("--log", log_level, "log level: trace, debug, info, warn, error, off")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto logger = spdlog::stderr_color_mt("rig-agent");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (sim_completion == "later") config.sim_completion = rig::agent::SimCompletion::kLater;
  if (backend == "uring") config.backend = rig::engine::Backend::kUring;
  if (backend == "plain") config.backend = rig::engine::Backend::kPlain;
  if (send_zc_bytes >= 0) rig::engine::set_send_zc_default(static_cast<std::size_t>(send_zc_bytes));

  try {
    const rig::engine::Endpoint ep = rig::engine::parse_endpoint(listen);
    rig::agent::Server server(ep, config);
    g_server = &server;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);
    // The one line a launcher reads to learn the port.
    std::cout << "rig-agent listening on " << ep.host << ":" << server.port() << std::endl;
    spdlog::info("{} simulated devices, {} backend", config.devices,
                 rig::engine::backend_name(config.backend));
    server.serve(max_jobs);
    g_server = nullptr;
  } catch (const std::exception& e) {
    std::cerr << "rig-agent: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

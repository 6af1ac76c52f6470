#include "process/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rig/engine/env_settings.h"
#include "rig/wire/auth.h"

namespace rig::agent {

wire::Result<std::shared_ptr<const std::vector<engine::Secret>>> load_secrets(const AgentConfig& config) {
  auto secrets = std::make_shared<std::vector<engine::Secret>>();
  if (config.secret_files.size() > 2) {
    return wire::Outcome::failed(-EINVAL, "at most two secret files (the current and the next during a rotation)");
  }
  // Each secret it finds joins `secrets`.
  const auto keep = [&](wire::Result<engine::Secret> s) {
    if (s.ok()) secrets->push_back(std::move(*s));
    return s.outcome();
  };
  for (const std::string& path : config.secret_files) RIG_RETURN_IF_FAILED(keep(engine::read_secret_file(path)));
  if (!config.secret_files.empty()) return std::shared_ptr<const std::vector<engine::Secret>>(std::move(secrets));
  wire::Result<std::optional<engine::Secret>> from_env = engine::secret_from_env();
  RIG_RETURN_IF_FAILED(from_env.outcome());
  if (*from_env) {
    secrets->push_back(std::move(**from_env));
  } else if (config.secret_variable) {
    RIG_RETURN_IF_FAILED(keep(engine::secret_from_bytes(*config.secret_variable, "RIG_SECRET")));
  }
  return std::shared_ptr<const std::vector<engine::Secret>>(std::move(secrets));
}

std::shared_ptr<const engine::SecretBuffer> take_secret_variable() {
  char* text = std::getenv("RIG_SECRET");
  if (text == nullptr) return nullptr;
  const std::size_t n = std::strlen(text);
  auto bytes = n == 0 ? nullptr : std::make_shared<const engine::SecretBuffer>(text, text + n);
  wire::wipe(text, n);
  ::unsetenv("RIG_SECRET");
  return bytes;
}

namespace {
const char* sim_completion_name(SimCompletion c) {
  switch (c) {
    case SimCompletion::kNow: return "now";
    case SimCompletion::kLater: return "later";
    case SimCompletion::kWoken: return "woken";
  }
  return "?";
}
}  // namespace

std::string describe(const AgentConfig& c) {
  std::string secret = "none (open: loopback only)";
  if (c.authenticates()) {
    secret = std::to_string(c.secrets->size()) + " from ";
    if (!c.secret_files.empty()) {
      for (std::size_t i = 0; i < c.secret_files.size(); ++i) secret += (i > 0 ? "," : "") + c.secret_files[i];
    } else {
      const char* file = engine::env_text("RIG_SECRET_FILE");
      secret += file != nullptr ? std::string("RIG_SECRET_FILE=") + file : std::string("RIG_SECRET");
    }
  }
  return "devices=" + std::to_string(c.devices) + " device_budget=" + std::to_string(c.device_budget) +
         " host_budget=" + std::to_string(c.host_budget) + " instruction_budget=" + std::to_string(c.instruction_budget) +
         " isolated=" + std::to_string(c.isolated) +
         " sim_completion=" + sim_completion_name(c.sim_completion) +
         " backend=" + engine::backend_name(c.backend) + " max_stripes=" + std::to_string(c.max_stripes) +
         " silence_ms=" + std::to_string(c.silence_ms) + " poll_us=" + std::to_string(c.poll_us) +
         " gather_us=" + std::to_string(c.gather_us) + " max_connections=" + std::to_string(c.max_connections) +
         " max_handshakes=" + std::to_string(c.max_handshakes) +
         " max_handshakes_per_source=" + std::to_string(c.max_handshakes_per_source) +
         " handshake_ms=" + std::to_string(c.handshake_ms) + " max_jobs=" + std::to_string(c.max_jobs) +
         " max_objects=" + std::to_string(c.max_objects) + " max_staged_bytes=" + std::to_string(c.max_staged_bytes) +
         " max_host_bytes=" + std::to_string(c.max_host_bytes) + " drain_ms=" + std::to_string(c.drain_ms) +
         " secrets=" + secret + " name=" + (c.name.empty() ? std::string("(the host's)") : c.name);
}

}  // namespace rig::agent

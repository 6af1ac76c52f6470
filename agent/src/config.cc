#include "config.h"

#include <stdexcept>

namespace rig::agent {

std::shared_ptr<const std::vector<engine::Secret>> load_secrets(const AgentConfig& config) {
  auto secrets = std::make_shared<std::vector<engine::Secret>>();
  if (config.secret_files.size() > 2) {
    throw std::runtime_error("at most two secret files (the current and the next during a rotation)");
  }
  for (const std::string& path : config.secret_files) secrets->push_back(engine::read_secret_file(path));
  if (config.secret_files.empty()) {
    if (auto s = engine::secret_from_env()) secrets->push_back(std::move(*s));
  }
  return secrets;
}

}  // namespace rig::agent

#include "process/config_file.h"

#include <sstream>
#include <utility>

namespace rig::agent {
namespace {

// Whether `text` (a line, or lines joined) is `name = [` a list whose `]` is on a later line,
// which CLI11 reads on (ConfigBase::from_config).
bool list_runs_on(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return false;
  std::string value = text.substr(eq + 1);
  if (const auto hash = value.find('#'); hash != std::string::npos) value.erase(hash);
  CLI::detail::trim(value);
  return value.size() > 1 && value.front() == '[' && value.back() != ']';
}

// CLI11's reading of the file, line by line, each line's items checked first.
class CheckedConfig : public CLI::ConfigBase {
 public:
  CheckedConfig(const CLI::Option* file, OptionCheck check) : file_(file), check_(std::move(check)) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::string path = file_->as<std::string>();
    std::vector<CLI::ConfigItem> items;
    std::string line;
    for (int number = 1; std::getline(input, line); ++number) {
      const std::string where = path + ":" + std::to_string(number) + ": ";
      std::string text = line;
      for (std::string more; list_runs_on(text) && std::getline(input, more); ++number) text += "\n" + more;
      const std::string trimmed = CLI::detail::trim_copy(line);
      if (trimmed.size() > 1 && trimmed.front() == '[' && trimmed.back() == ']') {
        throw CLI::ConfigError(where + "sections are not read: give every option at the top level");
      }
      std::istringstream one(text);
      for (CLI::ConfigItem& item : CLI::ConfigBase::from_config(one)) {
        if (const std::string why = check_(item.fullname(), item.inputs); !why.empty()) {
          throw CLI::ConfigError(where + why);
        }
        items.push_back(std::move(item));
      }
    }
    return items;
  }

 private:
  const CLI::Option* file_;
  OptionCheck check_;
};

}  // namespace

void add_config_file(CLI::App& app, const std::string& help, OptionCheck check) {
  const CLI::Option* file = app.set_config("--config", "", help);
  app.config_formatter(std::make_shared<CheckedConfig>(file, std::move(check)));
  app.allow_config_extras(CLI::config_extras_mode::error);
}

}  // namespace rig::agent

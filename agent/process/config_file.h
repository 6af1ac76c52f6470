// rig-agent's config file (--config FILE): `name = value` lines in CLI11's format, which is
// neither INI nor TOML: names are the options' without the dashes; a value is bare or in double
// quotes, a list is [a, b] (it may run over lines); `#` or `;` begins a comment, to the line's
// end (inside quotes too); no sections. CLI11 reads it, but its errors name neither the file nor
// the line, so each line is first checked as the command line's `--name value` would be, and
// an error names both: "/etc/rig-agent/rig-agent.conf:12: --devices: Value 99 not in range 0 to 63".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace rig::agent {

// What is wrong with the option `--name` given `values` ("" when nothing is).
using OptionCheck = std::function<std::string(const std::string& name, const std::vector<std::string>& values)>;

// Gives `app` the option --config FILE (described by `help`), whose lines are checked by `check`
// before CLI11 takes them; an error is a CLI::ConfigError "FILE:LINE: what".
void add_config_file(CLI::App& app, const std::string& help, OptionCheck check);

}  // namespace rig::agent

// rig-info's text: its JSON written one fact a line, "key: value", a nested object's keys
// indented under its own, an array of objects as "-" items; null is "unset", an array of
// plain values one comma-separated line. The same facts as --json, in the same order.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>

namespace rig::info {

void write_text(std::ostream& out, const nlohmann::ordered_json& facts, int indent = 0);

}  // namespace rig::info

#include "as_text.h"

#include <algorithm>
#include <string>

namespace rig::info {
namespace {

using json = nlohmann::ordered_json;

bool nested(const json& v) {
  if (v.is_object()) return !v.empty();
  return v.is_array() && std::any_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); });
}

std::string plain(const json& v) {
  if (v.is_null()) return "unset";
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_structured()) return v.dump();
  if (v.empty()) return "(none)";
  std::string line;
  for (const json& e : v) line += (line.empty() ? "" : ", ") + plain(e);
  return line;
}

}  // namespace

void write_text(std::ostream& out, const json& facts, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  for (const auto& [key, value] : facts.items()) {
    if (!nested(value)) {
      out << pad << key << ": " << plain(value) << "\n";
      continue;
    }
    out << pad << key << ":\n";
    if (value.is_object()) {
      write_text(out, value, indent + 2);
      continue;
    }
    for (const json& e : value) {
      if (!e.is_object()) {
        out << pad << "  - " << plain(e) << "\n";
        continue;
      }
      out << pad << "  -\n";
      write_text(out, e, indent + 4);
    }
  }
}

}  // namespace rig::info

// The verifier: the only way bytes become an Image::Impl.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <variant>

#include "image_impl.h"

namespace rig::program {

// Checks every rule of FORMAT.md, reading nothing outside `binary`, and decodes the code.
// Returns the decoded image or the first rule broken, as one sentence naming the function
// and instruction concerned.
std::variant<Image::Impl, std::string> verify(std::span<const std::byte> binary);

}  // namespace rig::program

#include <utility>

#include "image_impl.h"
#include "rig/program/program.h"
#include "verifier.h"

namespace rig::program {

std::variant<Image, std::string> Image::load(std::span<const std::byte> binary) {
  auto verified = verify(binary);
  if (auto* reason = std::get_if<std::string>(&verified)) return std::move(*reason);
  Image image;
  image.impl_ = std::make_shared<const Impl>(std::move(std::get<Impl>(verified)));
  return image;
}

std::optional<std::uint32_t> Image::find(std::string_view name) const {
  const auto it = impl_->by_name.find(name);
  if (it == impl_->by_name.end()) return std::nullopt;
  return it->second;
}

// Throws std::out_of_range for an index not below function_count(): a caller's bug.
const FunctionInfo& Image::function(std::uint32_t index) const {
  return impl_->functions.at(index);
}

std::size_t Image::function_count() const { return impl_->functions.size(); }

Image::~Image() = default;

}  // namespace rig::program

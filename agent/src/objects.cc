#include "objects.h"

#include <mimalloc.h>

namespace rig::agent {

Memory::Memory(std::uint64_t bytes, std::shared_ptr<Budget> budget)
    : bytes_(bytes), budget_(std::move(budget)) {
  if (bytes_ > budget_->left) return;
  data_ = static_cast<std::byte*>(mi_zalloc_aligned(bytes_, 64));
  if (data_ != nullptr) budget_->left -= bytes_;
}

Memory::~Memory() {
  if (data_ == nullptr) return;
  mi_free(data_);
  budget_->left += bytes_;
}

}  // namespace rig::agent

// A bounded single-producer single-consumer ring. The producer claims a slot, writes it, then
// publishes it with a release store of the tail; the consumer treats a slot it has not seen
// published (acquire load of the tail) as not ready. The consumer may modify the front slot in
// place (it owns it) and frees it with a release store of the head.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace rig::engine {

template <class T>
class SpscRing {
 public:
  explicit SpscRing(std::size_t capacity_pow2)
      : mask_(capacity_pow2 - 1), slots_(new T[capacity_pow2]) {}

  // ---- producer ----
  std::size_t free_slots() const {
    // acquire: pairs with pop()'s release, so the consumer is done with the slots we reuse.
    return mask_ + 1 - (tail_.load(std::memory_order_relaxed) - head_.load(std::memory_order_acquire));
  }
  // The slot to write next; valid only while free_slots() > k.
  T& claim(std::size_t k = 0) { return slots_[(tail_.load(std::memory_order_relaxed) + k) & mask_]; }
  // Publishes the next `n` claimed slots.
  void publish(std::size_t n = 1) {
    // release: pairs with the consumer's acquire in empty()/size(): the slots' contents are
    // visible before their index is.
    tail_.store(tail_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // ---- consumer ----
  bool empty() const { return size() == 0; }
  std::size_t size() const {
    // acquire: pairs with publish()'s release.
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_relaxed);
  }
  T& front() { return slots_[head_.load(std::memory_order_relaxed) & mask_]; }
  T& at(std::size_t k) { return slots_[(head_.load(std::memory_order_relaxed) + k) & mask_]; }
  void pop(std::size_t n = 1) {
    // seq_cst (a release and more): pairs with free_slots()' acquire, and takes part in the
    // stop/receiver Dekker handshake (Link: a stopped proxy's last copy).
    head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_seq_cst);
  }

  // Frees the slots' memory; the indices stay, so empty(), size() and drained() still answer.
  // The caller guarantees that neither side touches a slot again (claim, front, at) and that
  // every earlier access to one happens before this call.
  void release_storage() { slots_.reset(); }

  // Any thread: whether everything published has been popped (seq_cst, for the handshake).
  bool drained() const {
    return head_.load(std::memory_order_seq_cst) == tail_.load(std::memory_order_seq_cst);
  }

 private:
  alignas(64) std::atomic<std::size_t> head_{0};  // written by the consumer
  alignas(64) std::atomic<std::size_t> tail_{0};  // written by the producer
  alignas(64) const std::size_t mask_;
  std::unique_ptr<T[]> slots_;
};

}  // namespace rig::engine

// A bounded single-producer single-consumer ring. The producer claims a slot, writes it, then
// publishes it with a release store of the tail; the consumer treats a slot it has not seen
// published (acquire load of the tail) as not ready. The consumer may modify the front slot in
// place (it owns it) and frees it with a release store of the head.
//
// Each side keeps a copy of the other side's index (as rigtorp's SPSCQueue does) and reloads it
// only when the copy shows too little: too few free slots for the producer, too few items for
// the consumer. So a side touches the other's cache line once per batch the other made, not
// once per call. The copies are plain fields: each is read and written by its own side only.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace rig::engine {

template <class T>
class SpscRing {
 public:
  explicit SpscRing(std::size_t capacity_pow2)
      : mask_(capacity_pow2 - 1), slots_(new T[capacity_pow2]) {
    assert(capacity_pow2 != 0 && (capacity_pow2 & mask_) == 0 && "a power of two");
  }

  // ---- producer ----
  // The slots the producer may claim now: from its copy of the head, reloaded when that copy
  // shows none free. So it is at least 1 whenever a slot is free, and may be fewer than are.
  std::size_t free_slots() {
    if (known_free() == 0) refresh_head();
    return known_free();
  }
  // Whether `n` slots may be claimed now (claim(0..n-1)); reloads the head only if the copy
  // shows fewer.
  bool has_room(std::size_t n) {
    if (known_free() >= n) return true;
    refresh_head();
    return known_free() >= n;
  }
  // The slot to write next; valid only while free_slots() > k (or has_room(k + 1)) said so.
  T& claim(std::size_t k = 0) {
    assert(k < known_free() && "claim beyond the room the producer saw");
    // relaxed: the tail is written only by this side.
    return slots_[(tail_.load(std::memory_order_relaxed) + k) & mask_];
  }
  // Publishes the next `n` claimed slots.
  void publish(std::size_t n = 1) {
    assert(n <= known_free() && "publish beyond the room the producer saw");
    // release: pairs with the consumer's acquire in refresh_tail(): the slots' contents are
    // visible before their index is.
    tail_.store(tail_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // ---- consumer ----
  // The items the consumer may read now: from its copy of the tail, reloaded when that copy
  // shows none. So it is at least 1 whenever an item is published, and may be fewer than are.
  std::size_t size() {
    if (known_items() == 0) refresh_tail();
    return known_items();
  }
  bool empty() { return size() == 0; }
  // Whether `n` items may be read now (at(0..n-1)); reloads the tail only if the copy shows
  // fewer.
  bool has_items(std::size_t n) {
    if (known_items() >= n) return true;
    refresh_tail();
    return known_items() >= n;
  }
  T& front() { return at(0); }
  T& at(std::size_t k) {
    assert(k < known_items() && "read beyond the items the consumer saw");
    // relaxed: the head is written only by this side.
    return slots_[(head_.load(std::memory_order_relaxed) + k) & mask_];
  }
  // Frees the front `n` items.
  void pop(std::size_t n = 1) {
    assert(n <= known_items() && "pop beyond the items the consumer saw");
    // release: pairs with the producer's acquire in refresh_head(): the consumer is done with
    // the slots the producer reuses.
    head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  // Frees the slots' memory; the indices stay, so empty(), size() and drained() still answer.
  // The caller guarantees that neither side touches a slot again (claim, front, at) and that
  // every earlier access to one happens before this call.
  void release_storage() { slots_.reset(); }

  // Any thread: whether everything published has been popped (a proxy's stop, after the
  // producer's last publish). acquire (head): pairs with pop()'s release: the consumer is done
  // with every slot. acquire (tail): pairs with publish()'s release.
  bool drained() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

 private:
  std::size_t known_free() const {
    // relaxed: the tail is this (the producer's) side's own.
    return mask_ + 1 - (tail_.load(std::memory_order_relaxed) - head_seen_);
  }
  void refresh_head() {
    // acquire: pairs with pop()'s release: the consumer is done with the
    // slots up to the head, which the producer may now reuse.
    head_seen_ = head_.load(std::memory_order_acquire);
  }
  std::size_t known_items() const {
    // relaxed: the head is this (the consumer's) side's own.
    return tail_seen_ - head_.load(std::memory_order_relaxed);
  }
  void refresh_tail() {
    // acquire: pairs with publish()'s release: the slots up to the tail are written.
    tail_seen_ = tail_.load(std::memory_order_acquire);
  }

  // The consumer's line: its index, and its copy of the producer's.
  alignas(64) std::atomic<std::size_t> head_{0};
  std::size_t tail_seen_ = 0;
  // The producer's line: its index, and its copy of the consumer's.
  alignas(64) std::atomic<std::size_t> tail_{0};
  std::size_t head_seen_ = 0;
  alignas(64) const std::size_t mask_;
  std::unique_ptr<T[]> slots_;
};

}  // namespace rig::engine

#include "rig/engine/connection.h"

#include "rig/engine/iov_cursor.h"

namespace rig::engine {

int Connection::send_holding_turn(std::span<const iovec> iov) {
  const int rc = socket_->send_all(iov);
  if (rc == 0) {
    bump(counters_.bytes_sent, iov_bytes(iov));
    bump(counters_.messages_sent, 1);
  }
  bump(counters_.send_calls, 1);
  return rc;
}

}  // namespace rig::engine

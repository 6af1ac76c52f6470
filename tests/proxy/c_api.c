/* Compiled as C: the C functions and the types they take, used as a C runtime would. */
#include "rig/edge.h"

#include <stddef.h>
#include <string.h>

/* Copies n bytes from `from` into the region `handle` and back into `to`, as one submission
 * with the given value. Returns room's answer if it is not RIG_FITS, else submit's. */
int c_round_trip(rig_proxy* d, uint64_t handle, const void* from, void* to, uint64_t n,
                 uint64_t value, const char** why) {
  rig_part parts[2];
  memset(parts, 0, sizeof parts);
  parts[0].kind = RIG_PART_COPY;
  parts[0].queue = RIG_QUEUE_COPY;
  parts[0].u.copy.src.host = (void*)from;
  parts[0].u.copy.dst.handle = handle;
  parts[0].u.copy.rows = 1;
  parts[0].u.copy.row_bytes = n;
  parts[1] = parts[0];
  parts[1].u.copy.src.host = NULL;
  parts[1].u.copy.src.handle = handle;
  parts[1].u.copy.dst.host = to;
  parts[1].u.copy.dst.handle = 0;
  rig_submission s;
  s.waits = NULL;
  s.n_waits = 0;
  s.parts = parts;
  s.n_parts = 2;
  int room = rig_proxy_room(d, &s);
  if (room != RIG_FITS) return room;
  int rc = rig_proxy_submit(d, &s, value, why);
  rig_proxy_commit(d);
  return rc;
}

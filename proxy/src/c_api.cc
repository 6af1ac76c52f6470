// The C functions of rig/edge.h, over rig::remote::Proxy.
#include "rig/edge.h"

#include "rig/remote/proxy.h"

extern "C" {

int rig_proxy_room(rig_proxy* d, const rig_submission* s) {
  return rig::remote::Proxy::from_c(d)->room(*s);
}

int rig_proxy_submit(rig_proxy* d, const rig_submission* s, uint64_t value, const char** why) {
  return rig::remote::Proxy::from_c(d)->submit(*s, value, why);
}

void rig_proxy_commit(rig_proxy* d) { rig::remote::Proxy::from_c(d)->commit(); }

}  // extern "C"

// The C functions of rig/edge.h, over rig::remote::Proxy. No exception crosses them: each is a
// barrier that turns one into the function's own failure.
#include "rig/edge.h"

#include <exception>

#include "rig/remote/proxy.h"

extern "C" {

int rig_proxy_room(rig_proxy* d, const rig_submission* s) {
  try {
    return rig::remote::Proxy::from_c(d)->room(*s);
  } catch (...) {
    return RIG_NEVER;  // room allocates nothing and throws nothing: this cannot happen
  }
}

int rig_proxy_submit(rig_proxy* d, const rig_submission* s, uint64_t value, const char** why) {
  rig::remote::Proxy* p = rig::remote::Proxy::from_c(d);
  try {
    return p->submit(*s, value, why);
  } catch (const std::exception& e) {
    return p->fail_internally(why, e.what());
  } catch (...) {
    return p->fail_internally(why, "an unknown exception");
  }
}

void rig_proxy_commit(rig_proxy* d) {
  try {
    rig::remote::Proxy::from_c(d)->commit();
  } catch (...) {  // commit does nothing
  }
}

}  // extern "C"

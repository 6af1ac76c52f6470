// Progress lines on stderr while rig-bench runs (stdout carries only the table).
#pragma once

#include <cstdarg>
#include <cstdio>

namespace rig::bench {

__attribute__((format(printf, 1, 2))) inline void progress(const char* fmt, ...) {
  std::fputs("rig-bench: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace rig::bench

// rig-example: runs the example's driver (a shared object, libexample_driver.so) against a
// rig-agent.   rig-example HOST:PORT PROGRAM.rigp
#include <cstdio>

#include "driver.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HOST:PORT PROGRAM.rigp   (the agent prints its HOST:PORT)\n", argv[0]);
    return 2;
  }
  return rig_example_drive(argv[1], argv[2]);
}

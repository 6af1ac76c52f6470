/* The example's driver, as a runtime would put it in a shared object: C functions that drive the
 * devices of one rig-agent through proxies (driver.cc). This header compiles as C and C++. */
#ifndef RIG_EXAMPLE_DRIVER_H
#define RIG_EXAMPLE_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Drives the agent at `endpoint` ("HOST:PORT"): opens a job, makes a proxy of the machine's host
 * and of simulated device 1, allocates, copies both ways with rig_proxy_room/rig_proxy_submit,
 * runs the words program `fill` of the rig.program binary at `program`, waits on the timelines,
 * and then fails a second job on purpose (the program `poke`) and reports its root cause.
 * The secret is the environment's (RIG_SECRET_FILE, else RIG_SECRET). Prints what it does;
 * returns 0 when every check held, 1 otherwise. */
__attribute__((visibility("default"))) int rig_example_drive(const char* endpoint, const char* program);

#ifdef __cplusplus
}
#endif

#endif /* RIG_EXAMPLE_DRIVER_H */

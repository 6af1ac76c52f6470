/* A C11 program that drives device 1 of a rig-agent through the C ABI alone (rig/remote.h and
 * rig/edge.h): connect, print the accounts, make a proxy, allocate 1 MiB, copy it in and back
 * (contiguous, then two strided rows), show Invalid_argument for a second proxy of the same
 * device, free, stop, release, then show Fault ("the job is closed") after the job's close.
 *   rig-drive HOST:PORT   (the agent prints "rig-agent listening on HOST:PORT") */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rig/edge.h"
#include "rig/remote.h"

#define MIB ((uint64_t)1 << 20)

static char why_data[512];
static rig_text why = {why_data, sizeof why_data, 0};

/* Exits naming what failed, with the library's reason. */
static void check(int result, int expected, const char* what) {
  if (result == expected) return;
  fprintf(stderr, "rig-drive: %s: result %d (expected %d): %s\n", what, result, expected, why.data);
  exit(1);
}

/* Submits one copy as the work of `value` and waits until the proxy's word reaches it. */
static void copy_and_wait(rig_proxy* proxy, const rig_copy* copy, uint64_t value) {
  rig_part part;
  memset(&part, 0, sizeof part);
  part.kind = RIG_PART_COPY;
  part.queue = RIG_QUEUE_COPY;
  part.u.copy = *copy;
  rig_submission submission = {NULL, 0, 1, &part};
  int room;
  while ((room = rig_proxy_room(proxy, &submission)) == RIG_LATER)  /* earlier work first */
    check(rig_proxy_sleep(proxy, rig_proxy_signaled(proxy), 10, &why), RIG_OK, "sleep (room)");
  check(room, RIG_FITS, "room");
  const char* failed = "";
  if (rig_proxy_submit(proxy, &submission, value, &failed) != RIG_COMMITTED) {
    fprintf(stderr, "rig-drive: submit of value %llu: %s\n", (unsigned long long)value, failed);
    exit(1);
  }
  uint64_t seen;
  while ((seen = rig_proxy_signaled(proxy)) < value)
    check(rig_proxy_sleep(proxy, seen, 1000, &why), RIG_OK, "sleep");
}

/* One side of a copy: this process's memory, or the region's handle and an offset. */
static rig_side host_side(void* p) {
  rig_side side = {p, 0, 0};
  return side;
}
static rig_side region_side(uint64_t handle, uint64_t offset) {
  rig_side side = {NULL, handle, offset};
  return side;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: rig-drive HOST:PORT\n");
    return 2;
  }
  rig_job* job = NULL;
  rig_link* link = NULL;
  check(rig_job_create(&job, &why), RIG_OK, "job");
  rig_link_options options;
  rig_link_options_init(&options);  /* the secret: RIG_SECRET_FILE, as the agent's */
  check(rig_job_connect(job, argv[1], &options, &link, &why), RIG_OK, "connect");

  uint32_t count = 0;
  check(rig_link_account_count(link, &count), RIG_OK, "account count");
  int has_device_1 = 0;
  for (uint32_t i = 0; i < count; i++) {
    rig_account a;
    a.size = sizeof a;
    check(rig_link_account(link, i, &a), RIG_OK, "account");
    printf("account %u: %s (%s), kind %u, budget %llu bytes\n", a.id, a.name, a.arch, a.kind,
           (unsigned long long)a.budget);
    has_device_1 |= a.id == 1;
  }
  if (!has_device_1) {
    fprintf(stderr, "rig-drive: the agent opened no device 1 (rig-agent --devices 1)\n");
    return 1;
  }

  /* The proxy's timeline word: 8 aligned bytes that outlive the proxy (freed below only once
   * rig_proxy_release says nothing writes it any more). */
  uint64_t* word = aligned_alloc(8, sizeof *word);
  if (word == NULL) return 1;
  *word = 0;
  rig_device device = {sizeof device, link, 1, {RIG_CAPABILITY_DEVICE, 1}};
  rig_proxy* proxy = NULL;
  check(rig_device_make(&device, word, &proxy, &why), RIG_OK, "make");

  rig_region region;
  rig_location where;
  check(rig_proxy_alloc(proxy, RIG_MEMORY_DEVICE, MIB, &region, &why), RIG_OK, "alloc");
  check(rig_region_locate(&region, &where), RIG_OK, "locate");

  unsigned char* out = malloc(MIB);
  unsigned char* back = calloc(1, MIB);
  if (out == NULL || back == NULL) return 1;
  for (uint64_t i = 0; i < MIB; i++) out[i] = (unsigned char)(i * 7 + i / 4096);

  /* Contiguous: 1 MiB in, then back. */
  rig_copy in = {host_side(out), region_side(where.handle, 0), 1, MIB, 0, 0};
  copy_and_wait(proxy, &in, 1);
  rig_copy out_copy = {region_side(where.handle, 0), host_side(back), 1, MIB, 0, 0};
  copy_and_wait(proxy, &out_copy, 2);
  if (memcmp(out, back, MIB) != 0) {
    fprintf(stderr, "rig-drive: the bytes copied back differ\n");
    return 1;
  }
  printf("copied 1 MiB in and back: bytes exact\n");

  /* Strided: 2 rows of 256 KiB, 512 KiB apart on both sides; the gap between them stays. */
  const uint64_t row = MIB / 4, pitch = MIB / 2;
  for (uint64_t i = 0; i < MIB; i++) out[i] = (unsigned char)(255 - i % 251);
  memset(back, 0, MIB);
  rig_copy rows_in = {host_side(out), region_side(where.handle, 0), 2, row, pitch, pitch};
  copy_and_wait(proxy, &rows_in, 3);
  rig_copy rows_out = {region_side(where.handle, 0), host_side(back), 2, row, pitch, pitch};
  copy_and_wait(proxy, &rows_out, 4);
  for (uint64_t r = 0; r < 2; r++) {
    if (memcmp(out + r * pitch, back + r * pitch, row) != 0) {
      fprintf(stderr, "rig-drive: strided row %llu differs\n", (unsigned long long)r);
      return 1;
    }
    for (uint64_t i = r * pitch + row; i < (r + 1) * pitch; i++) {
      if (back[i] != 0) {
        fprintf(stderr, "rig-drive: the strided copy wrote between the rows\n");
        return 1;
      }
    }
  }
  printf("copied 2 rows of 256 KiB with a pitch of 512 KiB in and back: bytes exact\n");

  /* Invalid_argument: the link has a proxy of device 1 already. */
  uint64_t* word2 = aligned_alloc(8, sizeof *word2);
  if (word2 == NULL) return 1;
  *word2 = 0;
  rig_proxy* second = NULL;
  check(rig_device_make(&device, word2, &second, &why), RIG_INVALID_ARGUMENT, "second make");
  printf("a second make of device 1: RIG_INVALID_ARGUMENT (%s)\n", why.data);
  free(word2);  /* a make that fails registers nothing */

  check(rig_proxy_free(proxy, &region), RIG_OK, "free");
  check(rig_proxy_stop(proxy, NULL), RIG_OK, "stop");
  int quiet = rig_proxy_release(proxy);
  check(quiet < 0 ? quiet : RIG_OK, RIG_OK, "release");
  if (quiet == 1) free(word);  /* else the word stays: a copy's bytes may still land */

  /* Fault: once the job's close has begun, a call that asks an agent answers "the job is closed". */
  check(rig_job_close(job), RIG_OK, "close");
  rig_link* again = NULL;
  check(rig_job_connect(job, argv[1], &options, &again, &why), RIG_FAULT, "connect after close");
  if (strstr(why.data, "the job is closed") == NULL) {
    fprintf(stderr, "rig-drive: connect after close: %s\n", why.data);
    return 1;
  }
  printf("connect after the job's close: RIG_FAULT (%s)\n", why.data);
  rig_job_release(job);
  free(out);
  free(back);
  printf("done\n");
  return 0;
}

/* The visibility of rig-remote's names (docs/PACKAGING.md).
 *
 * Everything is compiled with hidden visibility; a name a runtime calls is marked RIG_API, so the
 * shared library (BUILD_SHARED_LIBS) exports rig's names and nothing of what it links (liburing,
 * mimalloc, OpenSSL) or instantiates from headers. Exception types that cross the library's edge
 * are marked too, so a throw in one shared object is caught by type in another. The objects are
 * the same in the static library: a runtime's shared object that links it and wants none of
 * rig's names in its own exports links with -Wl,--exclude-libs,librig_remote.a. This header
 * compiles as C11 and C++. */
#ifndef RIG_EXPORT_H
#define RIG_EXPORT_H

#define RIG_API __attribute__((visibility("default")))

#endif /* RIG_EXPORT_H */

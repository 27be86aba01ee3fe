/* A shim loaded with LD_PRELOAD by tests/durability.rs: it makes one kind
 * of call fail with EIO, as a disk or a network file system can, for the
 * files whose path contains RETILE_FAIL_PATH. RETILE_FAIL names the call:
 * fdatasync, fsync, syncfs, ftruncate or close. The call itself is still
 * made (a failed close has closed the descriptor all the same), so only
 * the report differs. Every failure injected is counted on stderr, so a
 * test can tell that the fault happened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int fails(const char *call, int fd) {
    const char *which = getenv("RETILE_FAIL");
    const char *part = getenv("RETILE_FAIL_PATH");
    if (!which || !part || strcmp(which, call) != 0) return 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    if (!strstr(path, part)) return 0;
    char line[PATH_MAX + 64];
    int len = snprintf(line, sizeof line, "fail_io: %s(%s) -> EIO\n", call, path);
    if (len > 0) (void)!write(2, line, (size_t)len);
    return 1;
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

int fdatasync(int fd) {
    int r = REAL("fdatasync", int (*)(int))(fd);
    if (r == 0 && fails("fdatasync", fd)) { errno = EIO; return -1; }
    return r;
}

int fsync(int fd) {
    int r = REAL("fsync", int (*)(int))(fd);
    if (r == 0 && fails("fsync", fd)) { errno = EIO; return -1; }
    return r;
}

int syncfs(int fd) {
    int r = REAL("syncfs", int (*)(int))(fd);
    if (r == 0 && fails("syncfs", fd)) { errno = EIO; return -1; }
    return r;
}

int ftruncate(int fd, off_t len) {
    if (fails("ftruncate", fd)) { errno = EIO; return -1; }
    return REAL("ftruncate", int (*)(int, off_t))(fd, len);
}

int ftruncate64(int fd, off_t len) {
    if (fails("ftruncate", fd)) { errno = EIO; return -1; }
    return REAL("ftruncate64", int (*)(int, off_t))(fd, len);
}

int close(int fd) {
    int fail = fails("close", fd);
    int r = REAL("close", int (*)(int))(fd);
    if (r == 0 && fail) { errno = EIO; return -1; }
    return r;
}

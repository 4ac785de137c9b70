/* disk — the sandbox's writable layer on a disk of its own, so that its
 * files live on the host's disk and never count against its memory.
 *
 * What it does: keeps a blank, unjournaled ext4 image per size in
 * STATE/cache/disk (made once with mkfs.ext4), copies it sparsely into an
 * unnamed file (O_TMPFILE) of STATE/disks, binds that to a loop device
 * with LOOP_CONFIGURE and autoclear, and mounts it detached (fsmount).
 * The caller gets the mount as an fd the sandbox child attaches in its own
 * mount namespace. Nothing of it has a name on the host: when the last
 * mount goes (the sandbox's namespace ends, or the fd is closed before
 * that), the kernel detaches the loop device and frees the file, so kill,
 * gc and every failure path release it without a step of their own.
 * What it does not do: pick sizes (local/), build the overlays on it
 * (mount/).
 * Runs in the CLI/daemon. Needs loop devices (LOOP_CONFIGURE: 5.8+), the
 * new mount API (5.2+), ext4 and mkfs.ext4. */
#ifndef ABOX_DISK_H
#define ABOX_DISK_H

#include <stdint.h>

#include "base/base.h"

/* A new disk of bytes (at least 1 MiB): a detached mount fd (close-on-
 * exec, nosuid, nodev) of an empty ext4 whose root holds the layer's
 * folders (upper/root, work/root, root) and is mode 0700. */
int disk_new(const char *state_dir, uint64_t bytes, abox_error *err);

/* Whether disks work on this host for state_dir (makes one of 1 MiB and
 * drops it); err says what is missing. For `abox doctor`. */
int disk_probe(const char *state_dir, abox_error *err);
/* Whether disk_new's error r means this host has no disks at all (no
 * loop devices, no ext4 or mkfs.ext4, no new mount API, not allowed),
 * rather than that this one disk failed. */
bool disk_unsupported(int r);

/* Drops the disk whose layer fd is given without writing it back: its
 * filesystem is shut down (dirty data discarded, every later write
 * fails), so the unmount when the sandbox ends is quick. Only for a
 * layer about to go; only on our own disks (an ext4 on a loop device
 * whose file lies in state_dir/disks): anything else is left alone, and
 * 0 returned. */
int disk_discard(const char *state_dir, int layer_fd);

/* Spares: a helper process (forked now: call before the process starts
 * threads) keeps count disks of bytes ready for state_dir. Once per
 * process. */
int disk_spares_start(const char *state_dir, uint64_t bytes, unsigned count, abox_error *err);
/* A ready spare (its mount fd), or -errno: -ENOENT when none are made for
 * this size and folder, -EAGAIN when none is ready now. Thread-safe. */
int disk_spare_take(const char *state_dir, uint64_t bytes);

#endif

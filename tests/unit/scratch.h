/* A scratch folder for unit tests that need files: made by mkdtemp,
 * filled one file at a time (parent folders made on the way), removed
 * with everything in it. */
#ifndef ABOX_TEST_SCRATCH_H
#define ABOX_TEST_SCRATCH_H

/* mkdtemp(dir), asserted; dir is a template ending in XXXXXX. */
void scratch_make(char *dir);
/* Writes content to dir/rel, making the folders rel names on the way. */
void scratch_put(const char *dir, const char *rel, const char *content);
/* dir/rel (rel may start with a slash) in one of four buffers that take
 * turns: valid until the fourth call after. */
const char *scratch_path(const char *dir, const char *rel);
/* Removes dir and everything below it (no symlink is followed). */
void scratch_remove(const char *dir);

#endif

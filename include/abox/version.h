/* abox — version and symbol visibility. */
#ifndef ABOX_VERSION_H
#define ABOX_VERSION_H

#define ABOX_VERSION_MAJOR 0
#define ABOX_VERSION_MINOR 1
#define ABOX_VERSION_PATCH 0
#define ABOX_VERSION_STRING "0.1.0"

#if defined(ABOX_BUILDING_LIBRARY) && defined(__GNUC__)
#define ABOX_EXPORT __attribute__((visibility("default")))
#else
#define ABOX_EXPORT
#endif

#endif

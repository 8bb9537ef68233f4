/* SPDX-License-Identifier: MIT */
/*
 * What librdmad and the preload shim export: built with
 * -fvisibility=hidden, so a function is public only when marked so, and
 * listed in the version script (librdmad.map, fork/shim.map).
 */
#ifndef RDMAD_EXPORT_H
#define RDMAD_EXPORT_H

#define RDMAD_EXPORT __attribute__((visibility("default")))

#endif

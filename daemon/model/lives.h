/* SPDX-License-Identifier: MIT */
/*
 * What the daemon remembers of every device identity it has seen, listed
 * now or not: its last incarnation and what it looked like then, so that
 * a device registering again is known as the same hardware coming back
 * (RETURNED, with the fields that differ) and keeps counting its lives
 * across the daemon's own restarts.  Bounded: past LIVES_MAX identities
 * the one seen longest ago is forgotten.  Pure data; the text form
 * (lives_format/lives_parse) is what main.c keeps in the state directory.
 */
#ifndef RDMAD_LIVES_H
#define RDMAD_LIVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sysfs.h"

#define LIVES_MAX 4096

/* What a life looked like, to say what changed when it comes back. */
struct life {
	char identity[sizeof(((struct device_record *)0)->id)];
	uint64_t incarnation;
	uint64_t reg_key;
	char uverbs[16];
	uint64_t last_seen; /* lives_note() order, for forgetting */
	bool noted;	    /* seen by this daemon, not only read back */
	char name[RECORD_NAME_MAX];
	char node_guid[20];
	char sys_image_guid[20];
	char fw_ver[64];
	char netdev[16];
	int numa_node;
};

/* Fields a RETURNED event names when they differ from the last life. */
enum life_field {
	LIFE_NAME = 1 << 0,
	LIFE_NODE_GUID = 1 << 1,
	LIFE_SYS_IMAGE_GUID = 1 << 2,
	LIFE_FW_VER = 1 << 3,
	LIFE_NETDEV = 1 << 4,
	LIFE_NUMA_NODE = 1 << 5,
};
#define LIFE_FIELDS 6
/* "name", "node_guid", ... for bit @i. */
const char *life_field_name(unsigned int i);

struct lives;
struct lives *lives_new(void);
void lives_free(struct lives *lives);
size_t lives_count(const struct lives *lives);

const struct life *lives_find(const struct lives *lives, const char *identity);
/* Remember @dev as incarnation @incarnation of its identity.  -ENOMEM. */
int lives_note(struct lives *lives, const struct device_record *dev,
	       uint64_t incarnation);
/* The life_field bits in which @dev differs from @life. */
unsigned int lives_diff(const struct life *life,
			const struct device_record *dev);

/* One line a life, oldest first; malloc'd text, NULL on ENOMEM. */
char *lives_format(const struct lives *lives);
/* Replace what is remembered with @text's lives.  Lines that do not parse
 * are skipped and counted in *ret_bad.  -ENOMEM. */
int lives_parse(struct lives *lives, const char *text, size_t *ret_bad);
/* Something was noted since the last lives_saved() (for debounced saves). */
int lives_dirty(const struct lives *lives);
void lives_saved(struct lives *lives);

#endif

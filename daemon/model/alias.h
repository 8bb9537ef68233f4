/* SPDX-License-Identifier: MIT */
/*
 * Aliases: names that rdmad.conf's [alias] section gives devices, matched
 * on what identifies the hardware, never on the kernel's name, so they
 * follow a device across renames and lives (and never rename the kernel
 * device, which would race with running openers).
 *
 *   [alias]
 *   storage0 = pci:0000:c1:00.0
 *   ib%d = link_layer:InfiniBand vf
 *
 * A value is one or more matchers, all of which must hold:
 *   pci:ADDR        the PCI function          id:IDENTITY  the identity
 *   guid:GUID       the node GUID             netdev:NAME  a port's netdev
 *   driver:NAME     the parent's driver       link_layer:InfiniBand|Ethernet
 *   vf / pf         a VF (device_record.vf) / not one
 * A name with "%d" numbers every matching device, 0, 1, ..., in identity
 * order (PCI order for PCI devices); without it the name goes to the first
 * matching device in that order.  Pure code: config.c parses, devices.c
 * assigns.
 */
#ifndef RDMAD_ALIAS_H
#define RDMAD_ALIAS_H

#include <stdbool.h>
#include <stddef.h>

#include "sysfs.h"

#define ALIAS_NAME_MAX 32  /* with its NUL, after numbering */
#define ALIAS_MAX_RULES 64 /* [alias] entries */
#define ALIAS_MAX_PER_DEVICE 4

struct alias_rule {
	char name[ALIAS_NAME_MAX]; /* may hold one %d */
	char pci[32];
	char id[sizeof(((struct device_record *)0)->id)];
	char guid[20];
	char netdev[16];
	char driver[32];
	char link_layer[16];
	int vf; /* -1 either, 0 pf, 1 vf */
};

/* A [lifecycle] grace rule: devices matching get @ms of grace. */
struct grace_rule {
	unsigned int ms;
	struct alias_rule match; /* its name unused */
};

/* Parse "MS MATCHER ...": 0, or -EINVAL with a reason in @why. */
int grace_rule_parse(const char *value, struct grace_rule *ret, char *why,
		     size_t why_size);

/* Parse "NAME = VALUE": 0, or -EINVAL with a reason in @why. */
int alias_rule_parse(const char *name, const char *value,
		     struct alias_rule *ret, char *why, size_t why_size);
bool alias_rule_matches(const struct alias_rule *rule,
			const struct device_record *dev);
/* The alias of the @index-th match (numbered rules), into @buf. */
void alias_rule_name(const struct alias_rule *rule, unsigned int index,
		     char buf[ALIAS_NAME_MAX]);

#endif

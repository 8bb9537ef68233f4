/* SPDX-License-Identifier: MIT */
/*
 * The identity memory: at most LIVES_MAX lives in one array, found through
 * an open-addressing index of twice that many slots, rebuilt whole on the
 * rare forgetting (a full table meeting a new identity).
 *
 * Text form, one life a line, fields separated by tabs (sysfs values are
 * printable ASCII and never hold one):
 *   identity incarnation reg_key uverbs last_seen name node_guid
 *   sys_image_guid fw_ver netdev numa_node
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "lives.h"

#define SLOTS (2 * LIVES_MAX) /* a power of two */
#define NFIELDS 11

struct lives {
	struct life *all; /* LIVES_MAX entries, n used */
	size_t n;
	uint16_t slot[SLOTS]; /* index + 1 into all, 0: empty */
	uint64_t clock;	      /* last_seen source */
	int dirty;
};

static const char *const field_names[LIFE_FIELDS] = {
	"name", "node_guid", "sys_image_guid", "fw_ver", "netdev", "numa_node",
};

const char *life_field_name(unsigned int i)
{
	return i < LIFE_FIELDS ? field_names[i] : "";
}

struct lives *lives_new(void)
{
	struct lives *lives = calloc(1, sizeof(*lives));

	if (lives && !(lives->all = calloc(LIVES_MAX, sizeof(*lives->all)))) {
		free(lives);
		return NULL;
	}
	return lives;
}

void lives_free(struct lives *lives)
{
	if (!lives)
		return;
	free(lives->all);
	free(lives);
}

size_t lives_count(const struct lives *lives)
{
	return lives->n;
}

/* The slot holding @identity, or the empty one where it would go. */
static uint16_t *slot_of(const struct lives *lives, const char *identity)
{
	size_t i = hash_str(identity) & (SLOTS - 1);

	for (;; i = (i + 1) & (SLOTS - 1)) {
		uint16_t s = lives->slot[i];

		if (!s || !strcmp(lives->all[s - 1].identity, identity))
			return (uint16_t *)&lives->slot[i];
	}
}

static void reindex(struct lives *lives)
{
	memset(lives->slot, 0, sizeof(lives->slot));
	for (size_t i = 0; i < lives->n; i++)
		*slot_of(lives, lives->all[i].identity) = i + 1;
}

const struct life *lives_find(const struct lives *lives, const char *identity)
{
	uint16_t s = *slot_of(lives, identity);

	return s ? &lives->all[s - 1] : NULL;
}

/* A place for a new identity: the next free entry, or the one seen
 * longest ago. */
static struct life *make_room(struct lives *lives)
{
	size_t oldest = 0;

	if (lives->n < LIVES_MAX)
		return &lives->all[lives->n++];
	for (size_t i = 1; i < lives->n; i++)
		if (lives->all[i].last_seen < lives->all[oldest].last_seen)
			oldest = i;
	lives->all[oldest].identity[0] = '\0';
	return &lives->all[oldest];
}

static const char *first_netdev(const struct device_record *dev)
{
	for (unsigned int i = 0; i < dev->nports; i++)
		if (dev->ports[i].netdev[0])
			return dev->ports[i].netdev;
	return "";
}

static void fill(struct life *life, const struct device_record *dev,
		 uint64_t incarnation)
{
	snprintf(life->identity, sizeof(life->identity), "%s", dev->id);
	snprintf(life->name, sizeof(life->name), "%s", dev->name);
	snprintf(life->node_guid, sizeof(life->node_guid), "%s",
		 dev->node_guid);
	snprintf(life->sys_image_guid, sizeof(life->sys_image_guid), "%s",
		 dev->sys_image_guid);
	snprintf(life->fw_ver, sizeof(life->fw_ver), "%s", dev->fw_ver);
	snprintf(life->netdev, sizeof(life->netdev), "%s", first_netdev(dev));
	life->numa_node = dev->numa_node;
	life->incarnation = incarnation;
	life->reg_key = dev->reg_key;
	snprintf(life->uverbs, sizeof(life->uverbs), "%s", dev->uverbs);
}

int lives_note(struct lives *lives, const struct device_record *dev,
	       uint64_t incarnation)
{
	uint16_t *s = slot_of(lives, dev->id);
	struct life *life;
	bool fresh = !*s;

	life = fresh ? make_room(lives) : &lives->all[*s - 1];
	fill(life, dev, incarnation);
	life->noted = true;
	life->last_seen = ++lives->clock;
	if (fresh)
		reindex(lives);
	lives->dirty = 1;
	return 0;
}

unsigned int lives_diff(const struct life *life,
			const struct device_record *dev)
{
	unsigned int mask = 0;

	mask |= strcmp(life->name, dev->name) ? LIFE_NAME : 0;
	mask |= strcmp(life->node_guid, dev->node_guid) ? LIFE_NODE_GUID : 0;
	mask |= strcmp(life->sys_image_guid, dev->sys_image_guid)
			? LIFE_SYS_IMAGE_GUID
			: 0;
	mask |= strcmp(life->fw_ver, dev->fw_ver) ? LIFE_FW_VER : 0;
	mask |= strcmp(life->netdev, first_netdev(dev)) ? LIFE_NETDEV : 0;
	mask |= life->numa_node != dev->numa_node ? LIFE_NUMA_NODE : 0;
	return mask;
}

static int compare_seen(const void *a, const void *b)
{
	const struct life *x = *(const struct life *const *)a;
	const struct life *y = *(const struct life *const *)b;

	return (x->last_seen > y->last_seen) - (x->last_seen < y->last_seen);
}

char *lives_format(const struct lives *lives)
{
	const struct life **order = calloc(lives->n + 1, sizeof(*order));
	size_t size = lives->n * 512 + 1, len = 0;
	char *text = malloc(size);

	if (!order || !text) {
		free(order);
		free(text);
		return NULL;
	}
	for (size_t i = 0; i < lives->n; i++)
		order[i] = &lives->all[i];
	qsort(order, lives->n, sizeof(*order), compare_seen);
	text[0] = '\0';
	for (size_t i = 0; i < lives->n && len < size; i++) {
		const struct life *l = order[i];

		len += snprintf(text + len, size - len,
				"%s\t%" PRIu64 "\t%" PRIu64 "\t%s\t%" PRIu64
				"\t%s\t%s\t%s\t%s\t%s\t%d\n",
				l->identity, l->incarnation, l->reg_key,
				l->uverbs, l->last_seen, l->name, l->node_guid,
				l->sys_image_guid, l->fw_ver, l->netdev,
				l->numa_node);
	}
	free(order);
	return text;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int copy_field(char *dst, size_t size, const char *src)
{
	if (strlen(src) >= size)
		return -EINVAL;
	strcpy(dst, src);
	return 0;
}

/* One line, split in place into @f; 0 or -EINVAL. */
static int parse_line(char *line, struct life *l)
{
	char *f[NFIELDS];
	char *end;
	long numa;
	size_t n = 0;

	while (n < NFIELDS && (f[n] = strsep(&line, "\t")))
		n++;
	if (n != NFIELDS || line || !f[0][0])
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	numa = strtol(f[10], &end, 10);
	if (parse_u64(f[1], &l->incarnation) < 0 ||
	    parse_u64(f[2], &l->reg_key) < 0 ||
	    parse_u64(f[4], &l->last_seen) < 0 || *end || end == f[10] ||
	    numa < -1 || numa > 65535 ||
	    copy_field(l->identity, sizeof(l->identity), f[0]) < 0 ||
	    copy_field(l->uverbs, sizeof(l->uverbs), f[3]) < 0 ||
	    copy_field(l->name, sizeof(l->name), f[5]) < 0 ||
	    copy_field(l->node_guid, sizeof(l->node_guid), f[6]) < 0 ||
	    copy_field(l->sys_image_guid, sizeof(l->sys_image_guid), f[7]) <
		    0 ||
	    copy_field(l->fw_ver, sizeof(l->fw_ver), f[8]) < 0 ||
	    copy_field(l->netdev, sizeof(l->netdev), f[9]) < 0)
		return -EINVAL;
	l->numa_node = (int)numa;
	return 0;
}

static void keep(struct lives *lives, const struct life *l)
{
	uint16_t *s = slot_of(lives, l->identity);
	bool fresh = !*s;

	*(fresh ? make_room(lives) : &lives->all[*s - 1]) = *l;
	if (fresh)
		reindex(lives);
	if (l->last_seen > lives->clock)
		lives->clock = l->last_seen;
}

int lives_parse(struct lives *lives, const char *text, size_t *ret_bad)
{
	char *copy = strdup(text), *cursor = copy, *line;
	struct life l;
	size_t bad = 0;

	if (!copy)
		return -ENOMEM;
	lives->n = 0;
	lives->clock = 0;
	memset(lives->slot, 0, sizeof(lives->slot));
	while ((line = strsep(&cursor, "\n"))) {
		if (!*line)
			continue;
		if (parse_line(line, &l) < 0)
			bad++;
		else
			keep(lives, &l);
	}
	free(copy);
	if (ret_bad)
		*ret_bad = bad;
	lives->dirty = 0;
	return 0;
}

int lives_dirty(const struct lives *lives)
{
	return lives->dirty;
}

void lives_saved(struct lives *lives)
{
	lives->dirty = 0;
}

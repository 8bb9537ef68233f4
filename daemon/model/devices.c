/* SPDX-License-Identifier: MIT */
/*
 * The device table.  Each listed device is one struct device, found three
 * ways: by id (a hash of present devices only: a removed device and its
 * re-plugged successor share an id), by name (a hash of every listed
 * device: names collide while an old removed device is still held), and
 * in name order (a sorted array of pointers, for iteration and snapshots).
 * A full rescan is O(n) hash work plus O(n log n) for the order; a
 * one-device change is a hash lookup and, on add, remove or rename, one
 * memmove of pointers.
 *
 * Every event bumps the generation by one before the listener hears it,
 * so a listener can publish the generation it is told about.  A listener
 * must not change the table's devices from inside the callback (a scan,
 * a hold, a release, an expiry: each would emit an event inside an
 * event).  It may move the generation alone (devices_bump_generation()):
 * the server does, in exclusive network-namespace mode, when it reads
 * other namespaces' tables from inside this listener and publishes their
 * events first (publish.c), each under a daemon generation of its own.
 * That is safe: emit() has stamped the device before the call and reads
 * nothing after it, and the counter only goes up, so no generation
 * published goes back.
 *
 * A device's life is one state, entered only through enter_life(), which
 * emits the event that says so.  The rules (PROTOCOL.md 8a draws the same):
 *
 *   from                  what rdmad learns                 to       event
 *   -                     a registration, usable            READY    ADDED,
 *   -                     ...not usable (no ACTIVE port,    UNREADY   RETURNED
 *                         no uverbs node, netdev down)
 *   AWAY                  its identity registers in time    READY,   RETURNED
 *                                                           UNREADY
 *   READY, UNREADY        a look, a netdev up or down,      READY,   READY,
 *                         its name changed                  UNREADY  UNREADY,
 *                                                                    CHANGED,
 *                                                                    RENAMED
 *   READY, UNREADY        its uverbs node went: the kernel  REMOVING REMOVING
 *                         is unregistering it (devices.h)
 *   REMOVING              its uverbs node is back           READY,   READY,
 *                         (ib_uverbs loaded again)          UNREADY  CHANGED
 *   READY, UNREADY,       gone, with a grace period         AWAY     REMOVED
 *   REMOVING
 *   READY, UNREADY,       gone (or its grace is over),      REMOVED  REMOVED
 *   REMOVING, AWAY        still held
 *   any                   gone, nobody holds it             GONE     REMOVED
 *   REMOVED               its last hold or reference goes   GONE     RELEASED
 *
 * GONE lasts for its event: the device is freed when the listener
 * returns.  Other events (CHANGED for a hold, EXPECTING and SETTLED of a
 * PF's VFs) leave the state as it is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "devices.h"
#include "hash.h"
#include "lives.h"
#include "netdevs.h"

#define INITIAL_BUCKETS 64

/* The states of the table at the top; what clients see of them is enum
 * device_state (devices.h). */
enum device_life {
	LIFE_READY,
	LIFE_UNREADY,
	LIFE_REMOVING,
	LIFE_AWAY,
	LIFE_REMOVED,
	LIFE_GONE,
};

struct device {
	struct device_record info;
	enum device_life life;
	uint64_t incarnation;
	uint64_t away_deadline; /* AWAY: realtime ms */
	unsigned int changed;	/* RETURNED: life_field bits */
	char aliases[ALIAS_MAX_PER_DEVICE][ALIAS_NAME_MAX];
	unsigned int naliases;
	/* A PF whose sriov_numvfs went up: the wait for its VFs. */
	unsigned int sriov_expected, sriov_ready;
	uint64_t sriov_deadline; /* realtime ms; 0: not waiting */
	uint64_t generation;
	uint64_t serial;   /* creation order: the last key of the sort */
	unsigned int refs; /* internal references */
	unsigned int seen; /* scan epoch that found this id */
	unsigned int applied;
	struct holder *holders;
	size_t nholders;
	struct device *id_next;	  /* chain in by_id (present or away) */
	struct device *name_next; /* chain in by_name (every listed one) */
};

struct devices {
	uint64_t generation;
	uint64_t next_serial;
	unsigned int epoch;
	devices_listener_fn fn;
	void *userdata;
	struct device **by_id;
	struct device **by_name;
	size_t nbuckets; /* a power of two, for both hashes */
	struct device **order;
	size_t n, cap;
	struct netdevs *netdevs; /* up/down, as rtnetlink last said */
	struct lives *lives;	 /* every identity seen, and its last life */
	uint64_t grace_vf_ms, grace_other_ms;
	uint64_t sriov_settle_ms;
	uint64_t (*now_ms)(void);
	struct alias_rule *rules;
	size_t nrules;
	struct grace_rule *grace_rules;
	size_t ngrace_rules;
};

static int assign_aliases(struct devices *t, const struct device *quiet);
static int settle(struct devices *t, int events);

/* Registered now: READY, UNREADY or REMOVING. */
static bool present(const struct device *d)
{
	return d->life <= LIFE_REMOVING;
}

/* Present or away: a device its identity may still come back to. */
static bool live(const struct device *d)
{
	return d->life <= LIFE_AWAY;
}

static struct device **id_slot(const struct devices *t, const char *id)
{
	return &t->by_id[hash_str(id) & (t->nbuckets - 1)];
}

static struct device **name_slot(const struct devices *t, const char *name)
{
	return &t->by_name[hash_str(name) & (t->nbuckets - 1)];
}

static void id_insert(struct devices *t, struct device *d)
{
	struct device **slot = id_slot(t, d->info.id);

	d->id_next = *slot;
	*slot = d;
}

static void name_insert(struct devices *t, struct device *d)
{
	struct device **slot = name_slot(t, d->info.name);

	d->name_next = *slot;
	*slot = d;
}

static void id_remove(struct devices *t, struct device *d)
{
	struct device **p = id_slot(t, d->info.id);

	while (*p && *p != d)
		p = &(*p)->id_next;
	if (*p)
		*p = d->id_next;
}

static void name_remove(struct devices *t, struct device *d)
{
	struct device **p = name_slot(t, d->info.name);

	while (*p && *p != d)
		p = &(*p)->name_next;
	if (*p)
		*p = d->name_next;
}

static struct device *find_live_id(const struct devices *t, const char *id)
{
	for (struct device *d = *id_slot(t, id); d; d = d->id_next)
		if (!strcmp(d->info.id, id))
			return d;
	return NULL;
}

static struct device *find_present_name(const struct devices *t,
					const char *name)
{
	for (struct device *d = *name_slot(t, name); d; d = d->name_next)
		if (present(d) && !strcmp(d->info.name, name))
			return d;
	return NULL;
}

/* Grow both hashes (and the order array) so one more device fits. */
static int reserve_one(struct devices *t)
{
	struct device **by_id, **by_name, **order;
	size_t nb = t->nbuckets * 2;

	if (t->n == t->cap) {
		order = realloc(t->order, (t->cap * 2) * sizeof(*order));
		if (!order)
			return -ENOMEM;
		t->order = order;
		t->cap *= 2;
	}
	if (t->n < t->nbuckets)
		return 0;
	by_id = calloc(nb, sizeof(*by_id));
	by_name = calloc(nb, sizeof(*by_name));
	if (!by_id || !by_name) {
		free(by_id);
		free(by_name);
		return -ENOMEM;
	}
	free(t->by_id);
	free(t->by_name);
	t->by_id = by_id;
	t->by_name = by_name;
	t->nbuckets = nb;
	for (size_t i = 0; i < t->n; i++) {
		name_insert(t, t->order[i]);
		if (live(t->order[i]))
			id_insert(t, t->order[i]);
	}
	return 0;
}

static int compare_device(const struct device *a, const struct device *b)
{
	int r = strcmp(a->info.name, b->info.name);

	if (!r)
		r = strcmp(a->info.id, b->info.id);
	if (!r)
		r = (a->serial > b->serial) - (a->serial < b->serial);
	return r;
}

/* First index whose device does not sort before @d. */
static size_t order_bound(const struct devices *t, const struct device *d)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (compare_device(t->order[mid], d) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void order_insert(struct devices *t, struct device *d)
{
	size_t i = order_bound(t, d);

	memmove(&t->order[i + 1], &t->order[i], (t->n - i) * sizeof(*t->order));
	t->order[i] = d;
	t->n++;
}

static void order_remove(struct devices *t, struct device *d)
{
	size_t i = order_bound(t, d);

	if (i == t->n || t->order[i] != d)
		return;
	memmove(&t->order[i], &t->order[i + 1],
		(t->n - i - 1) * sizeof(*t->order));
	t->n--;
}

static void emit(struct devices *t, enum devices_event event, struct device *d,
		 const char *old_name)
{
	/* Never back, never wrapped: at 2^64 - 1 it stays (main.c says so). */
	if (t->generation < UINT64_MAX)
		t->generation++;
	d->generation = t->generation;
	if (t->fn)
		t->fn(t->userdata, event, d, old_name);
}

/* The one way into a state: @d enters @life, and @event says so. */
static void enter_life(struct devices *t, struct device *d,
		       enum device_life life, enum devices_event event,
		       const char *old_name)
{
	d->life = life;
	if (life != LIFE_AWAY)
		d->away_deadline = 0;
	emit(t, event, d, old_name);
}

/* Take @info's contents; its ports now belong to @d. */
static void take_info(struct device *d, struct device_record *info)
{
	free(d->info.ports);
	d->info = *info;
	info->ports = NULL;
	info->nports = 0;
}

static void drop_info(struct device_record *info)
{
	free(info->ports);
	info->ports = NULL;
	info->nports = 0;
}

static void free_device(struct device *d)
{
	free(d->info.ports);
	free(d->holders);
	free(d);
}

/* Unlink a device from every index; the caller emits and frees. */
static void unlink_device(struct devices *t, struct device *d)
{
	if (live(d))
		id_remove(t, d);
	name_remove(t, d);
	order_remove(t, d);
}

static void drop_device(struct devices *t, struct device *d,
			enum devices_event event)
{
	unlink_device(t, d);
	/* What goes is no longer present: clients see it as removed. */
	enter_life(t, d, LIFE_GONE, event, NULL);
	free_device(d);
}

/* A removed device nobody references any more goes, with RELEASED. */
static bool maybe_release(struct devices *t, struct device *d)
{
	if (d->life != LIFE_REMOVED || d->nholders || d->refs)
		return false;
	drop_device(t, d, DEVICES_EVENT_RELEASED);
	return true;
}

/* Returns true when @d was freed. */
static bool remove_device(struct devices *t, struct device *d)
{
	if (!d->nholders && !d->refs) {
		drop_device(t, d, DEVICES_EVENT_REMOVED);
		return true;
	}
	id_remove(t, d);
	enter_life(t, d, LIFE_REMOVED, DEVICES_EVENT_REMOVED, NULL);
	return false;
}

static uint64_t grace_of(const struct devices *t, const struct device *d)
{
	for (size_t i = 0; i < t->ngrace_rules; i++)
		if (alias_rule_matches(&t->grace_rules[i].match, &d->info))
			return t->grace_rules[i].ms;
	return d->info.vf ? t->grace_vf_ms : t->grace_other_ms;
}

/*
 * A present device went.  With a grace period it is AWAY (listed, holds
 * kept, not usable) until it comes back or devices_expire() ends it; else
 * REMOVED as before.  Returns true when @d was freed.
 */
static bool device_gone(struct devices *t, struct device *d)
{
	uint64_t grace = grace_of(t, d);

	if (!grace || !present(d))
		return remove_device(t, d);
	d->away_deadline = t->now_ms() + grace;
	enter_life(t, d, LIFE_AWAY, DEVICES_EVENT_REMOVED, NULL);
	return false;
}

/* A scan does not know link state: fill it in from rtnetlink's. */
static void fill_netdev_up(const struct devices *t, struct device_record *info)
{
	bool up;

	for (unsigned int i = 0; i < info->nports; i++) {
		struct port_record *p = &info->ports[i];

		p->netdev_up = -1;
		if (p->netdev[0] && netdevs_get(t->netdevs, p->netdev, &up))
			p->netdev_up = up;
	}
}

static bool port_ready(const struct port_record *p)
{
	return !strcmp(p->state, "ACTIVE") && p->gid0_zero != 1 &&
	       !(p->netdev[0] && p->netdev_up == 0);
}

/* READY when usable: its uverbs node exists and a port is ACTIVE, with a
 * GID 0 that is not all zeros and a net device not known to be down;
 * else UNREADY. */
static enum device_life registered_life(const struct device_record *info)
{
	if (!info->uverbs[0])
		return LIFE_UNREADY;
	for (unsigned int i = 0; i < info->nports; i++)
		if (port_ready(&info->ports[i]))
			return LIFE_READY;
	return LIFE_UNREADY;
}

/* The incarnation @info starts, and whether its identity is known (so
 * the event is RETURNED, with what changed since its last life). */
static bool next_life(struct devices *t, const struct device_record *info,
		      uint64_t *ret_incarnation, unsigned int *ret_changed)
{
	const struct life *life = lives_find(t->lives, info->id);

	*ret_changed = 0;
	if (!life) {
		*ret_incarnation = 1;
		return false;
	}
	/* The daemon restarted: the same registration, the same life.  A
	 * life this daemon saw end never continues. */
	if (!life->noted &&
	    record_same_registration(life->reg_key, life->uverbs, info->reg_key,
				     info->uverbs)) {
		*ret_incarnation = life->incarnation;
		return false;
	}
	*ret_incarnation = life->incarnation + 1;
	*ret_changed = lives_diff(life, info);
	return true;
}

static int add_device(struct devices *t, struct device_record *info)
{
	struct device *d;
	bool returned;

	d = reserve_one(t) < 0 ? NULL : calloc(1, sizeof(*d));
	if (!d) {
		drop_info(info);
		return -ENOMEM;
	}
	returned = next_life(t, info, &d->incarnation, &d->changed);
	lives_note(t->lives, info, d->incarnation);
	take_info(d, info);
	d->serial = t->next_serial++;
	d->seen = d->applied = t->epoch;
	id_insert(t, d);
	name_insert(t, d);
	order_insert(t, d);
	assign_aliases(t, d);
	enter_life(t, d, registered_life(&d->info),
		   returned ? DEVICES_EVENT_RETURNED : DEVICES_EVENT_ADDED,
		   NULL);
	return 1;
}

/* An AWAY device's identity registered again in time: the same entry
 * (holds, aliases) in its next life. */
static int revive_device(struct devices *t, struct device *d,
			 struct device_record *info)
{
	next_life(t, info, &d->incarnation, &d->changed);
	lives_note(t->lives, info, d->incarnation);
	d->applied = t->epoch;
	name_remove(t, d);
	order_remove(t, d);
	take_info(d, info);
	name_insert(t, d);
	order_insert(t, d);
	assign_aliases(t, d);
	enter_life(t, d, registered_life(&d->info), DEVICES_EVENT_RETURNED,
		   NULL);
	return 1;
}

static void rename_device(struct devices *t, struct device *d,
			  struct device_record *info)
{
	char old[RECORD_NAME_MAX];

	strcpy(old, d->info.name);
	name_remove(t, d);
	order_remove(t, d);
	take_info(d, info);
	name_insert(t, d);
	order_insert(t, d);
	enter_life(t, d, registered_life(&d->info), DEVICES_EVENT_RENAMED, old);
}

/* The kernel is unregistering present device @d (devices.h). */
static int mark_removing(struct devices *t, struct device *d)
{
	enter_life(t, d, LIFE_REMOVING, DEVICES_EVENT_REMOVING, NULL);
	return 1;
}

/* What a present device's new look makes of it: READY or UNREADY, and
 * the event that says so (CHANGED where usability is as it was). */
static void enter_registered(struct devices *t, struct device *d)
{
	enum device_life life = registered_life(&d->info);
	enum devices_event event = DEVICES_EVENT_CHANGED;

	if ((life == LIFE_READY) != (d->life == LIFE_READY))
		event = life == LIFE_READY ? DEVICES_EVENT_READY
					   : DEVICES_EVENT_UNREADY;
	enter_life(t, d, life, event, NULL);
}

/* A new scan of a present device: RENAMED, CHANGED or nothing.  A rename
 * that also changed other fields is one RENAMED event: it carries the
 * whole new device, so a separate CHANGED would say nothing new. */
static int update_device(struct devices *t, struct device *d,
			 struct device_record *info)
{
	bool removing = d->life == LIFE_REMOVING;

	d->applied = t->epoch;
	d->changed = 0;
	if (!info->uverbs[0] && (removing || d->info.uverbs[0])) {
		/* Torn down bit by bit: the last complete look stays. */
		drop_info(info);
		return removing ? 0 : mark_removing(t, d);
	}
	/* From here on its uverbs is there (back, if REMOVING: ib_uverbs
	 * loaded again). */
	if (strcmp(d->info.name, info->name)) {
		lives_note(t->lives, info, d->incarnation);
		rename_device(t, d, info);
		return 1;
	}
	if (!removing && record_equal(&d->info, info)) {
		drop_info(info);
		return 0;
	}
	lives_note(t->lives, info, d->incarnation);
	take_info(d, info);
	enter_registered(t, d);
	return 1;
}

/* A registration ended under a present device (unplugged and plugged
 * again between two looks): its life ends here, the new one returns. */
static int replace_device(struct devices *t, struct device *d,
			  struct device_record *info)
{
	int r;

	remove_device(t, d);
	r = add_device(t, info);
	return r < 0 ? r : 1 + r;
}

static int apply_entry(struct devices *t, struct device_record *info)
{
	struct device *d;

	if (!info->id[0] || !info->name[0]) {
		drop_info(info);
		return 0;
	}
	fill_netdev_up(t, info);
	d = find_live_id(t, info->id);
	if (!d)
		return add_device(t, info);
	if (d->applied == t->epoch) {
		drop_info(info); /* the same id twice in one scan */
		return 0;
	}
	if (d->life == LIFE_AWAY)
		return revive_device(t, d, info);
	if (d->info.reg_key && info->reg_key &&
	    !record_same_registration(d->info.reg_key, d->info.uverbs,
				      info->reg_key, info->uverbs))
		return replace_device(t, d, info);
	return update_device(t, d, info);
}

/* Present devices whose id the scan lacks are gone. */
static int remove_unseen(struct devices *t)
{
	int events = 0;

	for (size_t i = 0; i < t->n;) {
		struct device *d = t->order[i];

		if (present(d) && d->seen != t->epoch) {
			events++;
			if (device_gone(t, d))
				continue;
		}
		i++;
	}
	return events;
}

/*
 * Removals go first so that a name freed by a vanished device is free
 * before a new device takes it; then adds, renames and changes in the
 * scan's order.
 */
int devices_apply_scan(struct devices *table, struct device_record *scan,
		       size_t n)
{
	int events, r = 0;
	struct device *d;

	table->epoch++;
	for (size_t i = 0; i < n; i++) {
		d = find_live_id(table, scan[i].id);
		if (d)
			d->seen = table->epoch;
	}
	events = remove_unseen(table);
	for (size_t i = 0; i < n; i++) {
		if (r < 0) {
			drop_info(&scan[i]);
			continue;
		}
		r = apply_entry(table, &scan[i]);
		if (r > 0)
			events += r;
	}
	return r < 0 ? r : settle(table, events);
}

/*
 * One device's rescan.  A present device that still carries @info's name
 * under another id has been replaced (the name was reused): it goes.  If
 * that was a swap of names rather than a replacement, the other device's
 * own rescan adds it back.
 */
int devices_apply_one(struct devices *table, const char *name,
		      struct device_record *info)
{
	struct device *old;
	int events = 0, r;

	if (!info) {
		old = find_present_name(table, name);
		if (!old)
			return 0;
		device_gone(table, old);
		return settle(table, 1);
	}
	if (!info->id[0] || !info->name[0]) {
		drop_info(info);
		return -EINVAL;
	}
	table->epoch++;
	old = find_present_name(table, info->name);
	if (old && strcmp(old->info.id, info->id)) {
		device_gone(table, old);
		events++;
	}
	r = apply_entry(table, info);
	return r < 0 ? r : settle(table, events + r);
}

int devices_uverbs_gone(struct devices *table, const char *uverbs)
{
	for (size_t i = 0; i < table->n; i++) {
		struct device *d = table->order[i];

		if (present(d) && d->life != LIFE_REMOVING &&
		    !strcmp(d->info.uverbs, uverbs))
			return settle(table, mark_removing(table, d));
	}
	return 0;
}

static bool set_ports_up(struct device *d, const char *ifname, bool up)
{
	bool changed = false;

	for (unsigned int i = 0; i < d->info.nports; i++) {
		struct port_record *p = &d->info.ports[i];

		if (!strcmp(p->netdev, ifname) && p->netdev_up != up) {
			p->netdev_up = up;
			changed = true;
		}
	}
	return changed;
}

int devices_set_netdev_state(struct devices *table, const char *ifname, bool up)
{
	int events = 0;
	int r = netdevs_set(table->netdevs, ifname, up);

	if (r < 0)
		return r;
	for (size_t i = 0; i < table->n; i++) {
		struct device *d = table->order[i];

		/* A device being unregistered keeps its last look. */
		if (present(d) && d->life != LIFE_REMOVING &&
		    set_ports_up(d, ifname, up)) {
			enter_registered(table, d);
			events++;
		}
	}
	return settle(table, events);
}

int devices_netdev_gone(struct devices *table, const char *ifname)
{
	int events = devices_set_netdev_state(table, ifname, false);

	netdevs_forget(table->netdevs, ifname);
	return events;
}

static ssize_t holder_index(const struct device *d, const void *owner)
{
	for (size_t i = 0; i < d->nholders; i++)
		if (d->holders[i].owner == owner)
			return i;
	return -1;
}

int devices_hold(struct devices *table, const char *name,
		 const struct holder *h)
{
	struct device *d = find_present_name(table, name);
	struct holder *grown;

	if (!d)
		return -ENODEV;
	if (holder_index(d, h->owner) >= 0)
		return -EALREADY;
	grown = realloc(d->holders, (d->nholders + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	d->holders = grown;
	d->holders[d->nholders++] = *h;
	emit(table, DEVICES_EVENT_CHANGED, d, NULL);
	return 0;
}

/* Drop hold @index of @d: CHANGED, or RELEASED if that was the last
 * reference of a removed device. */
static void unhold(struct devices *t, struct device *d, size_t index)
{
	memmove(&d->holders[index], &d->holders[index + 1],
		(d->nholders - index - 1) * sizeof(*d->holders));
	d->nholders--;
	if (!maybe_release(t, d))
		emit(t, DEVICES_EVENT_CHANGED, d, NULL);
}

/*
 * The owner may hold both a removed device and its re-plugged successor
 * under one name; the removed one is released first, since that is the
 * hold keeping a stale entry listed.
 */
int devices_release(struct devices *table, const char *name, const void *owner)
{
	struct device *found = NULL, *d;
	bool known = false;
	ssize_t i;

	for (d = *name_slot(table, name); d; d = d->name_next) {
		if (strcmp(d->info.name, name))
			continue;
		known = true;
		if (holder_index(d, owner) >= 0 &&
		    (!found || d->life == LIFE_REMOVED))
			found = d;
	}
	if (!found)
		return known ? -ENOENT : -ENODEV;
	i = holder_index(found, owner);
	unhold(table, found, i);
	return 0;
}

void devices_release_owner(struct devices *table, const void *owner)
{
	for (size_t i = 0; i < table->n;) {
		struct device *d = table->order[i];
		ssize_t h = holder_index(d, owner);

		if (h < 0) {
			i++;
			continue;
		}
		/* unhold() may free d and close the gap at i. */
		if (present(d) || d->nholders > 1 || d->refs)
			i++;
		unhold(table, d, h);
	}
}

struct device *device_ref(struct device *dev)
{
	dev->refs++;
	return dev;
}

void device_unref(struct devices *table, struct device *dev)
{
	if (!dev || !dev->refs)
		return;
	dev->refs--;
	maybe_release(table, dev);
}

struct devices *devices_new(uint64_t generation)
{
	struct devices *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->generation = generation;
	t->nbuckets = INITIAL_BUCKETS;
	t->cap = INITIAL_BUCKETS;
	t->by_id = calloc(t->nbuckets, sizeof(*t->by_id));
	t->by_name = calloc(t->nbuckets, sizeof(*t->by_name));
	t->order = calloc(t->cap, sizeof(*t->order));
	t->netdevs = netdevs_new();
	t->lives = lives_new();
	t->now_ms = clock_realtime_ms;
	t->sriov_settle_ms = 120000;
	if (!t->by_id || !t->by_name || !t->order || !t->netdevs || !t->lives) {
		devices_free(t);
		return NULL;
	}
	return t;
}

void devices_free(struct devices *table)
{
	if (!table)
		return;
	for (size_t i = 0; i < table->n; i++)
		free_device(table->order[i]);
	netdevs_free(table->netdevs);
	lives_free(table->lives);
	free(table->rules);
	free(table->grace_rules);
	free(table->by_id);
	free(table->by_name);
	free(table->order);
	free(table);
}

void devices_set_listener(struct devices *table, devices_listener_fn fn,
			  void *userdata)
{
	table->fn = fn;
	table->userdata = userdata;
}

const char *devices_event_name(enum devices_event event)
{
	static const char *const names[DEVICES_EVENT_COUNT] = {
		[DEVICES_EVENT_ADDED] = "added",
		[DEVICES_EVENT_REMOVED] = "removed",
		[DEVICES_EVENT_CHANGED] = "changed",
		[DEVICES_EVENT_RENAMED] = "renamed",
		[DEVICES_EVENT_RELEASED] = "released",
		[DEVICES_EVENT_RETURNED] = "returned",
		[DEVICES_EVENT_READY] = "ready",
		[DEVICES_EVENT_UNREADY] = "unready",
		[DEVICES_EVENT_EXPECTING] = "expecting",
		[DEVICES_EVENT_SETTLED] = "settled",
		[DEVICES_EVENT_REMOVING] = "removing",
	};

	return (unsigned int)event < DEVICES_EVENT_COUNT ? names[event]
							 : "unknown";
}

struct lives *devices_lives(struct devices *table)
{
	return table->lives;
}

void devices_set_grace(struct devices *table, uint64_t vf_ms, uint64_t other_ms,
		       uint64_t (*now_ms)(void))
{
	table->grace_vf_ms = vf_ms;
	table->grace_other_ms = other_ms;
	table->now_ms = now_ms ? now_ms : clock_realtime_ms;
}

/* A malloc'd copy of @n items of @size in *@ret (NULL for none).  -ENOMEM. */
static int dup_items(const void *src, size_t n, size_t size, void **ret)
{
	*ret = n ? malloc(n * size) : NULL;
	if (n && !*ret)
		return -ENOMEM;
	if (n)
		memcpy(*ret, src, n * size);
	return 0;
}

int devices_set_grace_rules(struct devices *table,
			    const struct grace_rule *rules, size_t n)
{
	void *copy;

	if (dup_items(rules, n, sizeof(*rules), &copy) < 0)
		return -ENOMEM;
	free(table->grace_rules);
	table->grace_rules = copy;
	table->ngrace_rules = n;
	return 0;
}

uint64_t devices_now_ms(const struct devices *table)
{
	return table->now_ms();
}

/* An AWAY device that did not come back in time: removed as any other
 * (and dropped at once when nobody holds it). */
int devices_expire(struct devices *table, uint64_t *ret_next)
{
	uint64_t now = table->now_ms(), next = 0;
	int events = 0;

	for (size_t i = 0; i < table->n;) {
		struct device *d = table->order[i];

		if (d->life == LIFE_AWAY && d->away_deadline <= now) {
			events++;
			if (remove_device(table, d))
				continue;
		}
		i++;
	}
	events = settle(table, events);
	for (size_t i = 0; i < table->n; i++) {
		uint64_t when = device_deadline(table->order[i]);

		if (when && (!next || when < next))
			next = when;
	}
	if (ret_next)
		*ret_next = next;
	return events;
}

/* ---- aliases ---- */

static int compare_identity(const void *a, const void *b)
{
	const struct device *x = *(const struct device *const *)a;
	const struct device *y = *(const struct device *const *)b;

	return strcmp(x->info.id, y->info.id);
}

struct alias_set {
	char names[ALIAS_MAX_PER_DEVICE][ALIAS_NAME_MAX];
	unsigned int n;
};

static void add_alias(struct alias_set *set, const char *name)
{
	if (set->n < ALIAS_MAX_PER_DEVICE)
		snprintf(set->names[set->n++], ALIAS_NAME_MAX, "%s", name);
}

/* One rule over the live devices in identity order. */
static void apply_rule(const struct alias_rule *rule, struct device **devs,
		       struct alias_set *sets, size_t n)
{
	char name[ALIAS_NAME_MAX];
	unsigned int index = 0;

	for (size_t i = 0; i < n; i++) {
		if (!alias_rule_matches(rule, &devs[i]->info))
			continue;
		alias_rule_name(rule, index++, name);
		add_alias(&sets[i], name);
		if (!strstr(rule->name, "%d"))
			return;
	}
}

/* Take @set; true when it differs from what @d had. */
static bool take_aliases(struct device *d, const struct alias_set *set)
{
	bool same = d->naliases == set->n &&
		    !memcmp(d->aliases, set->names, sizeof(set->names));

	memcpy(d->aliases, set->names, sizeof(set->names));
	d->naliases = set->n;
	return !same;
}

/*
 * Assign every alias anew; a device whose aliases changed gets CHANGED,
 * except @quiet (a device about to be announced with them).  Removed
 * devices lose theirs: an alias names usable or returning hardware.
 */
static int assign_aliases(struct devices *t, const struct device *quiet)
{
	struct alias_set *sets;
	struct device **devs;
	size_t n = 0;
	int events = 0;

	if (!t->nrules)
		return 0;
	devs = calloc(t->n ? t->n : 1, sizeof(*devs));
	sets = calloc(t->n ? t->n : 1, sizeof(*sets));
	if (!devs || !sets) {
		free(devs);
		free(sets);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++) {
		if (live(t->order[i]))
			devs[n++] = t->order[i];
		else
			t->order[i]->naliases = 0;
	}
	qsort(devs, n, sizeof(*devs), compare_identity);
	for (size_t r = 0; r < t->nrules; r++)
		apply_rule(&t->rules[r], devs, sets, n);
	for (size_t i = 0; i < n; i++) {
		if (take_aliases(devs[i], &sets[i]) && devs[i] != quiet) {
			emit(t, DEVICES_EVENT_CHANGED, devs[i], NULL);
			events++;
		}
	}
	free(devs);
	free(sets);
	return events;
}

int devices_set_aliases(struct devices *table, const struct alias_rule *rules,
			size_t n)
{
	void *copy;

	if (dup_items(rules, n, sizeof(*rules), &copy) < 0)
		return -ENOMEM;
	free(table->rules);
	table->rules = copy;
	table->nrules = n;
	return assign_aliases(table, NULL);
}

/* ---- SR-IOV: a PF's VFs trickling in ---- */

static unsigned int ready_vfs(const struct devices *t, const struct device *pf)
{
	unsigned int n = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct device *d = t->order[i];

		n += d->life == LIFE_READY &&
		     !strcmp(d->info.sriov_pf, pf->info.pci_address);
	}
	return n;
}

/* EXPECTING when a PF's sriov_numvfs went up; SETTLED when that many VFs
 * are ready or the wait is over (@now past the deadline). */
static int check_pf(struct devices *t, struct device *pf, uint64_t now)
{
	int numvfs = pf->info.sriov_numvfs;

	if (numvfs <= 0 || (unsigned int)numvfs < pf->sriov_expected) {
		pf->sriov_expected = numvfs > 0 ? numvfs : 0;
		pf->sriov_deadline = 0;
		return 0;
	}
	if ((unsigned int)numvfs > pf->sriov_expected) {
		pf->sriov_expected = numvfs;
		pf->sriov_ready = ready_vfs(t, pf);
		pf->sriov_deadline = now + t->sriov_settle_ms;
		emit(t, DEVICES_EVENT_EXPECTING, pf, NULL);
		return 1 + check_pf(t, pf, now);
	}
	if (!pf->sriov_deadline)
		return 0;
	pf->sriov_ready = ready_vfs(t, pf);
	if (pf->sriov_ready < pf->sriov_expected && now < pf->sriov_deadline)
		return 0;
	pf->sriov_deadline = 0;
	emit(t, DEVICES_EVENT_SETTLED, pf, NULL);
	return 1;
}

static int check_sriov(struct devices *t)
{
	uint64_t now = t->now_ms();
	int events = 0;

	for (size_t i = 0; i < t->n; i++)
		if (present(t->order[i]))
			events += check_pf(t, t->order[i], now);
	return events;
}

void devices_set_sriov_settle(struct devices *table, uint64_t ms)
{
	table->sriov_settle_ms = ms;
}

/* After every change: aliases follow the devices, PFs their VFs. */
static int settle(struct devices *t, int events)
{
	int r;

	if (events < 0)
		return events;
	r = assign_aliases(t, NULL);
	if (r < 0)
		return r;
	return events + r + check_sriov(t);
}

uint64_t devices_generation(const struct devices *table)
{
	return table->generation;
}

uint64_t devices_bump_generation(struct devices *table)
{
	if (table->generation < UINT64_MAX)
		table->generation++;
	return table->generation;
}

size_t devices_count(const struct devices *table)
{
	return table->n;
}

const struct device *devices_first(const struct devices *table)
{
	return table->n ? table->order[0] : NULL;
}

const struct device *devices_next(const struct devices *table,
				  const struct device *dev)
{
	size_t i = order_bound(table, dev);

	return i + 1 < table->n ? table->order[i + 1] : NULL;
}

/* The present device of that name, else a removed one still listed. */
const struct device *devices_find_identity(const struct devices *table,
					   const char *identity)
{
	return find_live_id(table, identity);
}

const struct device *devices_find(const struct devices *table, const char *name)
{
	const struct device *removed = NULL;

	for (struct device *d = *name_slot(table, name); d; d = d->name_next) {
		if (strcmp(d->info.name, name))
			continue;
		if (present(d))
			return d;
		removed = d;
	}
	return removed;
}

const struct device_record *device_info(const struct device *dev)
{
	return &dev->info;
}

uint64_t device_incarnation(const struct device *dev)
{
	return dev->incarnation;
}

bool device_ready(const struct device *dev)
{
	return dev->life == LIFE_READY;
}

bool device_removing(const struct device *dev)
{
	return dev->life == LIFE_REMOVING;
}

uint64_t device_away_deadline(const struct device *dev)
{
	return dev->away_deadline;
}

uint64_t device_deadline(const struct device *dev)
{
	uint64_t away = dev->away_deadline, vfs = dev->sriov_deadline;

	if (!away || !vfs)
		return away ? away : vfs;
	return away < vfs ? away : vfs;
}

unsigned int device_changed(const struct device *dev)
{
	return dev->changed;
}

size_t device_alias_count(const struct device *dev)
{
	return dev->naliases;
}

const char *device_alias(const struct device *dev, size_t index)
{
	return index < dev->naliases ? dev->aliases[index] : NULL;
}

void device_sriov(const struct device *dev, unsigned int *ret_expected,
		  unsigned int *ret_ready)
{
	*ret_expected = dev->sriov_expected;
	*ret_ready = dev->sriov_ready;
}

enum device_state device_state(const struct device *dev)
{
	switch (dev->life) {
	case LIFE_READY:
	case LIFE_UNREADY:
	case LIFE_REMOVING:
		return DEVICE_STATE_PRESENT;
	case LIFE_AWAY:
		return DEVICE_STATE_AWAY;
	case LIFE_REMOVED:
	case LIFE_GONE:
		return DEVICE_STATE_REMOVED;
	}
	return DEVICE_STATE_REMOVED;
}

bool device_going(const struct device *dev)
{
	return dev->life == LIFE_GONE;
}

uint64_t device_generation(const struct device *dev)
{
	return dev->generation;
}

size_t device_holder_count(const struct device *dev)
{
	return dev->nholders;
}

const struct holder *device_holder(const struct device *dev, size_t index)
{
	return index < dev->nholders ? &dev->holders[index] : NULL;
}

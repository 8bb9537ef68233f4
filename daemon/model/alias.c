/* SPDX-License-Identifier: MIT */
/* [alias] rules: parsing and matching (alias.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alias.h"

/* Letters, digits, '_', '-', '.', and at most one "%d". */
static bool valid_pattern(const char *name)
{
	const char *pct = strchr(name, '%');
	size_t len = strlen(name);

	if (len == 0 || len >= ALIAS_NAME_MAX - 10 || name[0] == '.')
		return false;
	if (pct && (pct[1] != 'd' || strchr(pct + 1, '%')))
		return false;
	for (const char *c = name; *c; c++)
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') &&
		    !(*c >= '0' && *c <= '9') && !strchr("_-.", *c) &&
		    !(c == pct || (pct && c == pct + 1)))
			return false;
	return true;
}

static int set_field(char *field, size_t size, const char *value)
{
	if (!*value || strlen(value) >= size)
		return -EINVAL;
	strcpy(field, value);
	return 0;
}

/* One "key:value" or "vf"/"pf" into @rule. */
static int parse_matcher(char *word, struct alias_rule *rule)
{
	static const struct {
		const char *key;
		size_t offset, size;
	} fields[] = {
#define F(k, f)                                                                \
	{k, offsetof(struct alias_rule, f), sizeof(((struct alias_rule *)0)->f)}
		F("pci", pci),	     F("id", id),
		F("guid", guid),     F("netdev", netdev),
		F("driver", driver), F("link_layer", link_layer),
#undef F
	};
	char *colon;

	if (!strcmp(word, "vf") || !strcmp(word, "pf")) {
		rule->vf = word[0] == 'v';
		return 0;
	}
	colon = strchr(word, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(word, fields[i].key))
			return set_field((char *)rule + fields[i].offset,
					 fields[i].size, colon + 1);
	return -EINVAL;
}

int alias_rule_parse(const char *name, const char *value,
		     struct alias_rule *ret, char *why, size_t why_size)
{
	char copy[512], *cursor = copy, *word;
	int n = 0;

	memset(ret, 0, sizeof(*ret));
	ret->vf = -1;
	if (!valid_pattern(name)) {
		snprintf(why, why_size,
			 "alias '%s': letters, digits, '_', '-', '.' and one "
			 "%%d, at most %d characters",
			 name, ALIAS_NAME_MAX - 11);
		return -EINVAL;
	}
	strcpy(ret->name, name);
	snprintf(copy, sizeof(copy), "%s", value);
	while ((word = strsep(&cursor, " \t"))) {
		if (!*word)
			continue;
		if (parse_matcher(word, ret) < 0) {
			snprintf(why, why_size,
				 "alias %s: '%.64s' is not pci:, id:, guid:, "
				 "netdev:, driver:, link_layer:, vf or pf",
				 name, word);
			return -EINVAL;
		}
		n++;
	}
	if (!n) {
		snprintf(why, why_size, "alias %s: nothing to match", name);
		return -EINVAL;
	}
	return 0;
}

int grace_rule_parse(const char *value, struct grace_rule *ret, char *why,
		     size_t why_size)
{
	unsigned long ms;
	char *end;

	errno = 0;
	ms = strtoul(value, &end, 10);
	if (end == value || errno || ms > 86400000 || (*end != ' ' && *end)) {
		snprintf(why, why_size,
			 "grace: '%.64s' is not MS (0..86400000) then "
			 "matchers",
			 value);
		return -EINVAL;
	}
	ret->ms = ms;
	return alias_rule_parse("grace", end, &ret->match, why, why_size);
}

static bool any_link_layer(const struct device_record *dev, const char *ll)
{
	for (unsigned int i = 0; i < dev->nports; i++)
		if (!strcasecmp(dev->ports[i].link_layer, ll))
			return true;
	return false;
}

bool alias_rule_matches(const struct alias_rule *r,
			const struct device_record *dev)
{
	return (!r->pci[0] || !strcmp(r->pci, dev->pci_address)) &&
	       (!r->id[0] || !strcmp(r->id, dev->id)) &&
	       (!r->guid[0] || !strcasecmp(r->guid, dev->node_guid)) &&
	       (!r->netdev[0] || record_has_netdev(dev, r->netdev)) &&
	       (!r->driver[0] || !strcmp(r->driver, dev->driver)) &&
	       (!r->link_layer[0] || any_link_layer(dev, r->link_layer)) &&
	       (r->vf < 0 || r->vf == dev->vf);
}

void alias_rule_name(const struct alias_rule *rule, unsigned int index,
		     char buf[ALIAS_NAME_MAX])
{
	const char *pct = strstr(rule->name, "%d");

	if (!pct) {
		snprintf(buf, ALIAS_NAME_MAX, "%s", rule->name);
		return;
	}
	snprintf(buf, ALIAS_NAME_MAX, "%.*s%u%s", (int)(pct - rule->name),
		 rule->name, index, pct + 2);
}

/* SPDX-License-Identifier: MIT */
/*
 * rdmad.conf parser.  inih does the INI syntax; one table below lists
 * every key with its section, type, range and place in struct config, so
 * the parser, the restart check and the documentation cannot drift apart
 * silently (rdmad.conf(5) and etc/rdmad.conf mirror this table).
 *
 * Debian builds inih without INI_HANDLER_LINENO, so line numbers come
 * from our own reader, which feeds inih one line at a time and also
 * catches unknown [sections] (inih reports sections only through keys).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "rdmad-config.h"

enum config_type {
	CONFIG_TYPE_UINT,
	CONFIG_TYPE_PATH,
	CONFIG_TYPE_MODE,
	CONFIG_TYPE_GROUP,
	CONFIG_TYPE_LOG_LEVEL,
	CONFIG_TYPE_LISTEN,
};

struct config_key {
	const char *section;
	const char *name;
	enum config_type type;
	size_t offset;
	size_t size;		/* strings: buffer size */
	unsigned long min, max; /* numbers */
	bool restart;		/* a change needs a restart */
};

/* clang-format off */ /* 14 and 19 differ here: check-format.sh */
#define KEY_UINT(sec, key, field, lo, hi, rst)                                 \
	{sec, key, CONFIG_TYPE_UINT, offsetof(struct config, field),           \
	 sizeof(unsigned int), lo, hi, rst}
#define KEY_STR(sec, key, type, field, rst)                                    \
	{sec, key, type, offsetof(struct config, field),                       \
	 sizeof(((struct config *)0)->field), 0, 0, rst}
/* clang-format on */

static const struct config_key keys[] = {
	KEY_STR("daemon", "log_level", CONFIG_TYPE_LOG_LEVEL, log_level, false),
	KEY_STR("daemon", "state_dir", CONFIG_TYPE_PATH, state_dir, true),
	KEY_STR("daemon", "sysfs_root", CONFIG_TYPE_PATH, sysfs_root, true),
	KEY_STR("socket", "path", CONFIG_TYPE_PATH, socket_path, true),
	KEY_STR("socket", "mode", CONFIG_TYPE_MODE, socket_mode, true),
	KEY_STR("socket", "group", CONFIG_TYPE_GROUP, socket_group, true),
	KEY_STR("socket", "admin_group", CONFIG_TYPE_GROUP, admin_group, false),
	KEY_UINT("socket", "max_clients", max_clients, 1, 65536, false),
	KEY_UINT("socket", "max_clients_per_uid", max_clients_per_uid, 1, 65536,
		 false),
	KEY_UINT("socket", "max_clients_per_namespace",
		 max_clients_per_namespace, 1, 65536, false),
	KEY_UINT("socket", "reserved_clients", reserved_clients, 0, 65535,
		 false),
	KEY_UINT("socket", "hello_timeout_ms", hello_timeout_ms, 100, 600000,
		 false),
	KEY_UINT("socket", "max_holds_per_client", max_holds, 1, 65536, false),
	KEY_UINT("socket", "max_holds_per_uid", max_holds_per_uid, 1, 1048576,
		 false),
	KEY_UINT("socket", "max_queue", max_queue, 4, 65536, false),
	KEY_UINT("scan", "debounce_ms", debounce_ms, 0, 10000, true),
	KEY_UINT("scan", "storm_threshold", storm_threshold, 1, 1000000, true),
	KEY_STR("metrics", "listen", CONFIG_TYPE_LISTEN, metrics_listen, false),
	KEY_UINT("lifecycle", "grace_vf_ms", grace_vf_ms, 0, 86400000, false),
	KEY_UINT("lifecycle", "grace_ms", grace_ms, 0, 86400000, false),
	KEY_UINT("lifecycle", "sriov_settle_ms", sriov_settle_ms, 100, 3600000,
		 false),
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const sections[] = {"daemon",  "socket",    "scan",
				       "metrics", "lifecycle", "alias"};

/* What the reader and the handler share while one file is parsed. */
struct parse {
	const char *name;
	const char *text; /* string input, or NULL */
	unsigned int line;
	bool at_line_start;
	struct config *cfg;
	char *error;
	void (*on_error)(const char *msg, void *userdata);
	void *userdata;
	unsigned int first_error_line;
	unsigned int nerrors;
};

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = LOG_INFO;
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s",
		 RDMAD_DEFAULT_STATE_DIR);
	snprintf(cfg->sysfs_root, sizeof(cfg->sysfs_root), "/sys");
	cfg->socket_mode = 0666;
	cfg->socket_group = (gid_t)-1;
	cfg->admin_group = (gid_t)-1;
	cfg->max_clients = 4096;
	cfg->max_clients_per_uid = 1024;
	cfg->max_clients_per_namespace = 256;
	cfg->reserved_clients = 64;
	cfg->hello_timeout_ms = 10000;
	cfg->max_holds = 1024;
	cfg->max_holds_per_uid = 4096;
	cfg->max_queue = 256;
	cfg->debounce_ms = 10;
	cfg->storm_threshold = 64;
	cfg->grace_vf_ms = 120000;
	cfg->grace_ms = 0;
	cfg->sriov_settle_ms = 120000;
}

static void __attribute__((format(printf, 2, 3)))
parse_error(struct parse *p, const char *fmt, ...)
{
	char msg[CONFIG_ERROR_MAX];
	va_list ap;

	char line[CONFIG_ERROR_MAX];

	p->nerrors++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "%s:%u: %.400s", p->name, p->line, msg);
	if (p->on_error)
		p->on_error(line, p->userdata);
	if (p->first_error_line)
		return;
	memcpy(p->error, line, sizeof(line));
	p->first_error_line = p->line;
}

int config_parse_log_level(const char *text, int *ret_level)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
		{"err", LOG_ERR},	  {"error", LOG_ERR},
		{"warning", LOG_WARNING}, {"warn", LOG_WARNING},
		{"notice", LOG_NOTICE},	  {"info", LOG_INFO},
		{"debug", LOG_DEBUG},
	};

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (strcasecmp(text, levels[i].name) == 0) {
			*ret_level = levels[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

/* Strict unsigned decimal: digits only, no sign, no overflow. */
static int parse_ulong(const char *text, int base, unsigned long *ret)
{
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	*ret = strtoul(text, &end, base);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	return 0;
}

int config_parse_listen(const char *text, char *ret_host, size_t host_len,
			unsigned int *ret_port)
{
	const char *colon = strrchr(text, ':');
	const char *host = text;
	size_t len;
	unsigned long port;

	if (!colon || parse_ulong(colon + 1, 10, &port) < 0 || port == 0 ||
	    port > 65535)
		return -EINVAL;
	len = colon - text;
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		host++;
		len -= 2;
	} else if (memchr(host, ':', len)) {
		return -EINVAL; /* an IPv6 address needs brackets */
	}
	if (len == 0 || len >= host_len || memchr(host, ' ', len))
		return -EINVAL;
	memcpy(ret_host, host, len);
	ret_host[len] = '\0';
	*ret_port = port;
	return 0;
}

static int parse_group(const char *text, gid_t *ret_gid)
{
	unsigned long gid;
	struct group *gr;

	if (parse_ulong(text, 10, &gid) == 0) {
		if (gid >= (gid_t)-1)
			return -ERANGE;
		*ret_gid = gid;
		return 0;
	}
	errno = 0;
	gr = getgrnam(text);
	if (!gr)
		return errno ? -errno : -ENOENT;
	*ret_gid = gr->gr_gid;
	return 0;
}

static void set_uint(struct parse *p, const struct config_key *k,
		     const char *value, void *field)
{
	unsigned long v;
	int r = parse_ulong(value, 10, &v);

	if (r == -EINVAL) {
		parse_error(p, "%s: '%s' is not a number", k->name, value);
		return;
	}
	if (r < 0 || v < k->min || v > k->max) {
		parse_error(p, "%s: %s is out of range (%lu..%lu)", k->name,
			    value, k->min, k->max);
		return;
	}
	*(unsigned int *)field = v;
}

static void set_path(struct parse *p, const struct config_key *k,
		     const char *value, void *field)
{
	if (value[0] != '/') {
		parse_error(p, "%s: '%s' is not an absolute path", k->name,
			    value);
		return;
	}
	if (strlen(value) >= k->size) {
		parse_error(p, "%s: path longer than %zu bytes", k->name,
			    k->size - 1);
		return;
	}
	snprintf(field, k->size, "%s", value);
}

static void set_mode(struct parse *p, const struct config_key *k,
		     const char *value, void *field)
{
	unsigned long mode;

	if (parse_ulong(value, 8, &mode) < 0 || mode > 0777) {
		parse_error(p, "%s: '%s' is not an octal mode (0..0777)",
			    k->name, value);
		return;
	}
	*(mode_t *)field = mode;
}

static void set_group(struct parse *p, const struct config_key *k,
		      const char *value, void *field)
{
	if (value[0] == '\0') {
		*(gid_t *)field = (gid_t)-1;
		return;
	}
	if (parse_group(value, field) < 0)
		parse_error(p, "%s: unknown group '%s'", k->name, value);
}

static void set_log_level(struct parse *p, const struct config_key *k,
			  const char *value, void *field)
{
	if (config_parse_log_level(value, field) < 0)
		parse_error(p,
			    "%s: '%s' is not one of err, warning, notice, "
			    "info, debug",
			    k->name, value);
}

static void set_listen(struct parse *p, const struct config_key *k,
		       const char *value, void *field)
{
	char host[64];
	unsigned int port;

	if (value[0] == '\0' || strcmp(value, "off") == 0) {
		((char *)field)[0] = '\0';
		return;
	}
	if (strlen(value) >= k->size ||
	    config_parse_listen(value, host, sizeof(host), &port) < 0) {
		parse_error(p, "%s: '%s' is not HOST:PORT, [IPV6]:PORT or off",
			    k->name, value);
		return;
	}
	snprintf(field, k->size, "%s", value);
}

static void set_value(struct parse *p, const struct config_key *k,
		      const char *value)
{
	void *field = (char *)p->cfg + k->offset;

	switch (k->type) {
	case CONFIG_TYPE_UINT:
		set_uint(p, k, value, field);
		break;
	case CONFIG_TYPE_PATH:
		set_path(p, k, value, field);
		break;
	case CONFIG_TYPE_MODE:
		set_mode(p, k, value, field);
		break;
	case CONFIG_TYPE_GROUP:
		set_group(p, k, value, field);
		break;
	case CONFIG_TYPE_LOG_LEVEL:
		set_log_level(p, k, value, field);
		break;
	case CONFIG_TYPE_LISTEN:
		set_listen(p, k, value, field);
		break;
	}
}

static bool known_section(const char *name)
{
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (strcmp(name, sections[i]) == 0)
			return true;
	return false;
}

/* [alias] NAME = MATCHERS (alias.h). */
static int add_alias(struct parse *p, const char *name, const char *value)
{
	struct config *cfg = p->cfg;
	char why[CONFIG_ERROR_MAX];

	if (cfg->naliases == ALIAS_MAX_RULES) {
		parse_error(p, "more than %d aliases", ALIAS_MAX_RULES);
		return 1;
	}
	if (alias_rule_parse(name, value, &cfg->aliases[cfg->naliases], why,
			     sizeof(why)) < 0) {
		parse_error(p, "%s", why);
		return 1;
	}
	for (unsigned int i = 0; i < cfg->naliases; i++) {
		if (!strcmp(cfg->aliases[i].name, name)) {
			parse_error(p, "alias %s given twice", name);
			return 1;
		}
	}
	cfg->naliases++;
	return 1;
}

/* [lifecycle] grace = MS MATCHERS, as often as needed; first match wins. */
static int add_grace_rule(struct parse *p, const char *value)
{
	struct config *cfg = p->cfg;
	char why[CONFIG_ERROR_MAX];

	if (cfg->ngrace_rules == CONFIG_MAX_GRACE_RULES) {
		parse_error(p, "more than %d grace rules",
			    CONFIG_MAX_GRACE_RULES);
		return 1;
	}
	if (grace_rule_parse(value, &cfg->grace_rules[cfg->ngrace_rules], why,
			     sizeof(why)) < 0) {
		parse_error(p, "%s", why);
		return 1;
	}
	cfg->ngrace_rules++;
	return 1;
}

/* inih's callback; always returns 1 since we count errors ourselves. */
static int on_key(void *user, const char *section, const char *name,
		  const char *value)
{
	struct parse *p = user;

	if (section[0] == '\0') {
		parse_error(p, "'%s' is outside any [section]", name);
		return 1;
	}
	if (!known_section(section))
		return 1; /* reported once, at its header, by the reader */
	if (!strcmp(section, "alias"))
		return add_alias(p, name, value);
	if (!strcmp(section, "lifecycle") && !strcmp(name, "grace"))
		return add_grace_rule(p, value);
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(keys[i].section, section) == 0 &&
		    strcmp(keys[i].name, name) == 0) {
			set_value(p, &keys[i], value);
			return 1;
		}
	}
	parse_error(p, "unknown key '%s' in [%s]", name, section);
	return 1;
}

/* Report "[name]" headers we do not know, as inih would not. */
static void check_section_header(struct parse *p, const char *line)
{
	const char *start, *end;
	char name[64];

	while (isspace((unsigned char)*line))
		line++;
	if (*line != '[')
		return;
	start = line + 1;
	end = strchr(start, ']');
	if (!end)
		return; /* inih reports the syntax error */
	snprintf(name, sizeof(name), "%.*s", (int)(end - start), start);
	if (!known_section(name))
		parse_error(p, "unknown section [%s]", name);
}

/* Read one line (fgets semantics) from the text. */
static char *read_chunk(struct parse *p, char *buf, int size)
{
	size_t n = 0;

	if (*p->text == '\0')
		return NULL;
	while (p->text[n] && p->text[n] != '\n' && n + 2 < (size_t)size)
		n++;
	if (p->text[n] == '\n')
		n++;
	memcpy(buf, p->text, n);
	buf[n] = '\0';
	p->text += n;
	return buf;
}

static char *reader(char *buf, int size, void *stream)
{
	struct parse *p = stream;
	size_t len;

	if (!read_chunk(p, buf, size))
		return NULL;
	if (p->at_line_start) {
		p->line++;
		check_section_header(p, buf);
	}
	len = strlen(buf);
	p->at_line_start = len > 0 && buf[len - 1] == '\n';
	return buf;
}

static int run_parse(struct parse *p, struct config *ret_cfg, char *ret_error,
		     unsigned int *ret_nerrors)
{
	int line;

	config_defaults(ret_cfg);
	p->cfg = ret_cfg;
	p->error = ret_error;
	p->at_line_start = true;
	ret_error[0] = '\0';
	line = ini_parse_stream(reader, p, on_key, p);
	if (line > 0) {
		/* inih tells only its first syntax error; it leads if it
		 * comes before the first of ours. */
		if ((unsigned int)line < p->first_error_line)
			p->first_error_line = 0;
		p->line = line;
		parse_error(p, "syntax error (expected [section] or "
			       "key = value)");
	} else if (line < 0) {
		p->line = 0;
		snprintf(ret_error, CONFIG_ERROR_MAX, "%s: out of memory",
			 p->name);
		return -ENOMEM;
	}
	if (ret_nerrors)
		*ret_nerrors = p->nerrors;
	return p->nerrors ? -EINVAL : 0;
}

int config_load_string(const char *name, const char *text,
		       struct config *ret_cfg, char ret_error[CONFIG_ERROR_MAX],
		       unsigned int *ret_nerrors)
{
	struct parse p = {.name = name, .text = text};

	return run_parse(&p, ret_cfg, ret_error, ret_nerrors);
}

int config_load(const char *path, struct config *ret_cfg,
		char ret_error[CONFIG_ERROR_MAX], unsigned int *ret_nerrors)
{
	return config_check(path, ret_cfg, ret_error, ret_nerrors, NULL, NULL);
}

/* Largest configuration file read (a sane one is a few hundred bytes). */
#define CONFIG_FILE_MAX (1024 * 1024)

static int read_error(char ret_error[CONFIG_ERROR_MAX], const char *path,
		      int err, const char *what)
{
	snprintf(ret_error, CONFIG_ERROR_MAX, "%s: %s", path,
		 what ? what : strerror(-err));
	return err;
}

/*
 * The whole of a regular file of at most CONFIG_FILE_MAX bytes, NUL
 * terminated, in *ret_text.  A directory, a FIFO or a device (/dev/zero)
 * is an error at once, never a hang: opened O_NONBLOCK and checked
 * before it is read.  A NUL byte inside is an error with its line.
 */
static int read_whole(const char *path, char **ret_text,
		      char ret_error[CONFIG_ERROR_MAX])
{
	struct stat st;
	char *text, *nul;
	ssize_t n;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return read_error(ret_error, path, -errno, NULL);
	if (fstat(fd, &st) < 0)
		r = read_error(ret_error, path, -errno, NULL);
	else if (!S_ISREG(st.st_mode))
		r = read_error(ret_error, path, -EINVAL, "not a regular file");
	else if (st.st_size > CONFIG_FILE_MAX)
		r = read_error(ret_error, path, -EFBIG, "larger than 1 MiB");
	text = r ? NULL : malloc((size_t)st.st_size + 1);
	if (!r && !text)
		r = read_error(ret_error, path, -ENOMEM, NULL);
	n = r ? 0 : read(fd, text, (size_t)st.st_size);
	close(fd);
	if (!r && n < 0)
		r = read_error(ret_error, path, -errno, NULL);
	if (r) {
		free(text);
		return r;
	}
	text[n] = '\0';
	nul = memchr(text, '\0', (size_t)n);
	if (nul) {
		unsigned int line = 1;

		for (const char *c = text; c < nul; c++)
			line += *c == '\n';
		snprintf(ret_error, CONFIG_ERROR_MAX,
			 "%s:%u: a NUL byte in the file", path, line);
		free(text);
		return -EBADMSG;
	}
	*ret_text = text;
	return 0;
}

int config_check(const char *path, struct config *ret_cfg,
		 char ret_error[CONFIG_ERROR_MAX], unsigned int *ret_nerrors,
		 void (*on_error)(const char *msg, void *userdata),
		 void *userdata)
{
	struct parse p = {
		.name = path, .on_error = on_error, .userdata = userdata};
	char *text = NULL;
	int r;

	r = read_whole(path, &text, ret_error);
	if (r < 0) {
		if (ret_nerrors)
			*ret_nerrors = 1;
		return r;
	}
	p.text = text;
	r = run_parse(&p, ret_cfg, ret_error, ret_nerrors);
	free(text);
	return r;
}

static bool key_equal(const struct config_key *k, const struct config *a,
		      const struct config *b)
{
	const char *fa = (const char *)a + k->offset;
	const char *fb = (const char *)b + k->offset;

	switch (k->type) {
	case CONFIG_TYPE_PATH:
	case CONFIG_TYPE_LISTEN:
		return strcmp(fa, fb) == 0;
	case CONFIG_TYPE_UINT:
	case CONFIG_TYPE_MODE:
	case CONFIG_TYPE_GROUP:
	case CONFIG_TYPE_LOG_LEVEL:
		return memcmp(fa, fb, k->size) == 0;
	}
	return false;
}

void config_each_restart_change(const struct config *old,
				const struct config *new_cfg,
				void (*fn)(const char *section, const char *key,
					   void *userdata),
				void *userdata)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (keys[i].restart && !key_equal(&keys[i], old, new_cfg))
			fn(keys[i].section, keys[i].name, userdata);
	}
}

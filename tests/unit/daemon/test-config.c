/* SPDX-License-Identifier: MIT */
/*
 * config.c: a table of good files with the values they must give, and of
 * bad files with the exact "FILE:LINE: " each error must point at.  Also
 * checks that the shipped etc/rdmad.conf, with every key uncommented,
 * parses to the built-in defaults (so the file documents them truly).
 */
#include <errno.h>
#include <sys/stat.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "check.h"

struct good_case {
	const char *text;
	int log_level;
	unsigned int max_clients, max_holds, max_queue;
	unsigned int max_clients_per_uid, reserved_clients, hello_timeout_ms;
	unsigned int max_clients_per_namespace;
	unsigned int max_holds_per_uid;
	unsigned int debounce_ms, storm_threshold;
	unsigned int socket_mode;
	const char *socket_path, *state_dir, *metrics_listen;
	gid_t admin_group;
};

/* Fields not set in a case keep these (the built-in defaults). */
/* Each row starts from the defaults (DEF) and overrides what it sets. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define DEF                                                                    \
	.log_level = LOG_INFO, .max_clients = 4096, .max_holds = 1024,         \
	.max_clients_per_uid = 1024, .reserved_clients = 64,                   \
	.max_clients_per_namespace = 256, .hello_timeout_ms = 10000,           \
	.max_queue = 256, .debounce_ms = 10, .storm_threshold = 64,            \
	.socket_mode = 0666, .socket_path = "", .state_dir = "/run/rdmad",     \
	.metrics_listen = "", .admin_group = (gid_t)(-1),                      \
	.max_holds_per_uid = 4096

static const struct good_case good[] = {
	{"", DEF},
	{"; only a comment\n\n# another\n", DEF},
	{"[daemon]\nlog_level = debug\n", DEF, .log_level = LOG_DEBUG},
	{"[daemon]\nlog_level=WARNING\nstate_dir=/var/lib/x\n", DEF,
	 .log_level = LOG_WARNING, .state_dir = "/var/lib/x"},
	{"[socket]\nmax_clients = 1\nmax_holds_per_client = 65536\n"
	 "max_queue = 4\nmode = 0600\npath = /tmp/r.sock\n",
	 DEF, .max_clients = 1, .max_holds = 65536, .max_queue = 4,
	 .socket_mode = 0600, .socket_path = "/tmp/r.sock"},
	{"[socket]\nadmin_group = 0\n", DEF, .admin_group = 0},
	{"[socket]\nmax_clients_per_uid = 3\nreserved_clients = 0\n"
	 "hello_timeout_ms = 100\nmax_holds_per_uid = 7\n",
	 DEF, .max_clients_per_uid = 3, .reserved_clients = 0,
	 .hello_timeout_ms = 100, .max_holds_per_uid = 7},
	{"[socket]\nadmin_group = root\n", DEF, .admin_group = 0},
	{"[socket]\nmax_clients_per_namespace = 4\n", DEF,
	 .max_clients_per_namespace = 4},
	{"[scan]\ndebounce_ms = 0\nstorm_threshold = 1000000\n", DEF,
	 .debounce_ms = 0, .storm_threshold = 1000000},
	{"[metrics]\nlisten = 127.0.0.1:9477\n", DEF,
	 .metrics_listen = "127.0.0.1:9477"},
	{"[metrics]\nlisten = [::1]:9477\n", DEF,
	 .metrics_listen = "[::1]:9477"},
	{"[metrics]\nlisten = off\n", DEF},
	/* Later keys win; sections may repeat. */
	{"[socket]\nmax_queue=8\n[scan]\n[socket]\nmax_queue = 9\n", DEF,
	 .max_queue = 9},
	{"[socket]\nmax_queue = 16 ; inline comment\n", DEF, .max_queue = 16},
};

struct bad_case {
	const char *text;
	const char *error; /* the whole first message, after "t.conf:" */
	unsigned int nerrors;
};

static const struct bad_case bad[] = {
	{"[deamon]\nlog_level = info\n", "1: unknown section [deamon]", 1},
	{"[daemon]\nloglevel = info\n", "2: unknown key 'loglevel' in [daemon]",
	 1},
	{"log_level = info\n", "1: 'log_level' is outside any [section]", 1},
	{"[daemon]\nlog_level = loud\n",
	 "2: log_level: 'loud' is not one of err, warning, notice, info, "
	 "debug",
	 1},
	{"[socket]\n\n\nmax_clients = many\n",
	 "4: max_clients: 'many' is not a number", 1},
	{"[socket]\nmax_clients = 0\n",
	 "2: max_clients: 0 is out of range (1..65536)", 1},
	{"[socket]\nmax_clients = -1\n", "2: max_clients: '-1' is not a number",
	 1},
	{"[socket]\nmax_clients = 99999999999999999999999\n",
	 "2: max_clients: 99999999999999999999999 is out of range "
	 "(1..65536)",
	 1},
	{"[socket]\nmax_queue = 3\n",
	 "2: max_queue: 3 is out of range (4..65536)", 1},
	{"[socket]\nmax_queue = 12x\n", "2: max_queue: '12x' is not a number",
	 1},
	{"[scan]\ndebounce_ms = 10001\n",
	 "2: debounce_ms: 10001 is out of range (0..10000)", 1},
	{"[socket]\nmode = 0999\n",
	 "2: mode: '0999' is not an octal mode (0..0777)", 1},
	{"[socket]\nmode = 01777\n",
	 "2: mode: '01777' is not an octal mode (0..0777)", 1},
	{"[socket]\ngroup = no-such-group-rdmad\n",
	 "2: group: unknown group 'no-such-group-rdmad'", 1},
	{"[socket]\nadmin_group = no-such-group-rdmad\n",
	 "2: admin_group: unknown group 'no-such-group-rdmad'", 1},
	{"[daemon]\nstate_dir = run/rdmad\n",
	 "2: state_dir: 'run/rdmad' is not an absolute path", 1},
	{"[socket]\npath = "
	 "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	 "2: path: path longer than 107 bytes", 1},
	{"[metrics]\nlisten = 9477\n",
	 "2: listen: '9477' is not HOST:PORT, [IPV6]:PORT or off", 1},
	{"[metrics]\nlisten = ::1:9477\n",
	 "2: listen: '::1:9477' is not HOST:PORT, [IPV6]:PORT or off", 1},
	{"[metrics]\nlisten = host:70000\n",
	 "2: listen: 'host:70000' is not HOST:PORT, [IPV6]:PORT or off", 1},
	{"[daemon]\nthis line has no equals sign\n",
	 "2: syntax error (expected [section] or key = value)", 1},
	/* A broken header leaves its keys outside any section. */
	{"[daemon\nlog_level = info\n",
	 "1: syntax error (expected [section] or key = value)", 2},
	/* Every error counts; the first one is the message. */
	{"[socket]\nmax_queue = 1\nmax_clients = 0\n[x]\n",
	 "2: max_queue: 1 is out of range (4..65536)", 3},
	/* A syntax error inih finds after one of ours stays second. */
	{"[socket]\nmax_queue = 1\nnonsense\n",
	 "2: max_queue: 1 is out of range (4..65536)", 2},
	/* ...and leads when it comes first. */
	{"nonsense\n[socket]\nmax_queue = 1\n",
	 "1: syntax error (expected [section] or key = value)", 2},
};

static void check_good(size_t i, const struct good_case *t)
{
	char err[CONFIG_ERROR_MAX];
	struct config cfg;
	unsigned int n = 99;
	int r = config_load_string("t.conf", t->text, &cfg, err, &n);

	CHECK(r == 0 && n == 0, "good[%zu]: r=%d n=%u err=%s", i, r, n, err);
	CHECK(cfg.log_level == t->log_level, "good[%zu]: log_level %d", i,
	      cfg.log_level);
	CHECK(cfg.max_holds_per_uid == t->max_holds_per_uid,
	      "good[%zu]: max_holds_per_uid %u", i, cfg.max_holds_per_uid);
	CHECK(cfg.max_clients_per_namespace == t->max_clients_per_namespace,
	      "good[%zu]: max_clients_per_namespace %u", i,
	      cfg.max_clients_per_namespace);
	CHECK(cfg.max_clients_per_uid == t->max_clients_per_uid &&
		      cfg.reserved_clients == t->reserved_clients &&
		      cfg.hello_timeout_ms == t->hello_timeout_ms,
	      "good[%zu]: admission %u %u %u", i, cfg.max_clients_per_uid,
	      cfg.reserved_clients, cfg.hello_timeout_ms);
	CHECK(cfg.max_clients == t->max_clients &&
		      cfg.max_holds == t->max_holds &&
		      cfg.max_queue == t->max_queue,
	      "good[%zu]: limits %u %u %u", i, cfg.max_clients, cfg.max_holds,
	      cfg.max_queue);
	CHECK(cfg.debounce_ms == t->debounce_ms &&
		      cfg.storm_threshold == t->storm_threshold,
	      "good[%zu]: scan %u %u", i, cfg.debounce_ms, cfg.storm_threshold);
	CHECK(cfg.socket_mode == t->socket_mode, "good[%zu]: mode %o", i,
	      cfg.socket_mode);
	CHECK(strcmp(cfg.socket_path, t->socket_path) == 0,
	      "good[%zu]: path '%s'", i, cfg.socket_path);
	CHECK(strcmp(cfg.state_dir, t->state_dir) == 0,
	      "good[%zu]: state_dir '%s'", i, cfg.state_dir);
	CHECK(strcmp(cfg.metrics_listen, t->metrics_listen) == 0,
	      "good[%zu]: listen '%s'", i, cfg.metrics_listen);
	CHECK(cfg.admin_group == t->admin_group, "good[%zu]: admin_group %d", i,
	      (int)cfg.admin_group);
}

static void check_bad(size_t i, const struct bad_case *t)
{
	char err[CONFIG_ERROR_MAX], want[CONFIG_ERROR_MAX];
	struct config cfg;
	unsigned int n = 0;
	int r = config_load_string("t.conf", t->text, &cfg, err, &n);

	snprintf(want, sizeof(want), "t.conf:%s", t->error);
	CHECK(r == -EINVAL, "bad[%zu]: r=%d", i, r);
	CHECK(strcmp(err, want) == 0, "bad[%zu]: got '%s' want '%s'", i, err,
	      want);
	CHECK(n == t->nerrors, "bad[%zu]: %u errors, want %u", i, n,
	      t->nerrors);
}

static void check_files(const char *shipped)
{
	char err[CONFIG_ERROR_MAX], cmd[512], path[] = "/tmp/test-configXXXXXX";
	struct config cfg, def;
	int fd = mkstemp(path), r;

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	r = config_load("/nonexistent/rdmad.conf", &cfg, err, NULL);
	CHECK(r == -ENOENT, "missing file: r=%d", r);
	CHECK(strcmp(err, "/nonexistent/rdmad.conf: No such file or "
			  "directory") == 0,
	      "missing file: '%s'", err);
	/* Every "#key = default" line of the shipped file, uncommented. */
	snprintf(cmd, sizeof(cmd), "sed 's/^#\\([a-z_]* =\\)/\\1/' '%s' > '%s'",
		 shipped, path);
	CHECK(system(cmd) == 0, "%s", cmd);
	r = config_load(path, &cfg, err, NULL);
	CHECK(r == 0, "shipped rdmad.conf uncommented: %s", err);
	config_defaults(&def);
	CHECK(cfg.log_level == def.log_level &&
		      cfg.max_clients == def.max_clients &&
		      cfg.max_holds == def.max_holds &&
		      cfg.max_queue == def.max_queue &&
		      cfg.debounce_ms == def.debounce_ms &&
		      cfg.storm_threshold == def.storm_threshold &&
		      cfg.socket_mode == def.socket_mode &&
		      cfg.admin_group == def.admin_group &&
		      strcmp(cfg.state_dir, def.state_dir) == 0 &&
		      strcmp(cfg.sysfs_root, def.sysfs_root) == 0,
	      "shipped rdmad.conf documents other defaults than config.c");
	unlink(path);
}

/* What is not a configuration file is an error at once, never a hang: a
 * directory, a FIFO nobody writes to, /dev/zero; and a NUL byte. */
static void check_not_files(void)
{
	static const struct {
		const char *path;
		const char *want; /* the error, after "PATH: " */
	} rows[] = {
		{"/tmp", "not a regular file"},
		{"/dev/zero", "not a regular file"},
		{NULL, "not a regular file"}, /* a FIFO, made below */
	};
	char err[CONFIG_ERROR_MAX], want[CONFIG_ERROR_MAX], fifo[64], nul[64];
	struct config cfg;
	FILE *f;
	int fd;

	snprintf(fifo, sizeof(fifo), "/tmp/test-config-fifo-%d", getpid());
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *path = rows[i].path ? rows[i].path : fifo;

		CHECK(config_load(path, &cfg, err, NULL) < 0, "%s loaded",
		      path);
		snprintf(want, sizeof(want), "%s: %s", path, rows[i].want);
		CHECK(!strcmp(err, want), "%s: '%s'", path, err);
	}
	unlink(fifo);
	snprintf(nul, sizeof(nul), "/tmp/test-config-nul-XXXXXX");
	fd = mkstemp(nul);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	CHECK(f != NULL, "mkstemp");
	if (!f)
		return;
	fwrite("[daemon]\nlog_level = info\0debug\n", 1, 33, f);
	fclose(f);
	CHECK(config_load(nul, &cfg, err, NULL) == -EBADMSG, "NUL accepted");
	snprintf(want, sizeof(want), "%s:2: a NUL byte in the file", nul);
	CHECK(!strcmp(err, want), "NUL: '%s'", err);
	unlink(nul);
}

static void count_key(const char *section, const char *key, void *arg)
{
	(*(int *)arg)++;
}

static void check_restart_keys(void)
{
	char err[CONFIG_ERROR_MAX];
	struct config a, b;
	int n = 0;

	config_load_string("a", "[socket]\nmax_clients=5\n", &a, err, NULL);
	config_load_string("b",
			   "[socket]\nmax_clients=6\nmode=0600\n"
			   "[daemon]\nlog_level=debug\nstate_dir=/x\n",
			   &b, err, NULL);
	config_each_restart_change(&a, &b, count_key, &n);
	/* mode and state_dir need a restart; max_clients and log_level
	 * apply on reload. */
	CHECK(n == 2, "restart keys: %d, want 2", n);
}

int main(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		check_good(i, &good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_bad(i, &bad[i]);
	if (argc > 1)
		check_files(argv[1]);
	check_restart_keys();
	check_not_files();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok: %zu good and %zu bad files\n",
	       sizeof(good) / sizeof(good[0]), sizeof(bad) / sizeof(bad[0]));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * rdmad start-up and tear-down, and what belongs to the process as a
 * whole: the command line and config, the signals (stop, reload), and
 * three timers that no module owns: the save of the devices' lives (a
 * second after a change), the next AWAY or SR-IOV deadline, and STATUS=.
 * The device table's listener is publish_table_listener() (publish.c); it
 * hands each change back here (after_table_event()) for the verbs source,
 * the metrics and those timers (metrics.c includes server.h: the server
 * must not call it by name).
 *
 * In start-up the order matters: the generation store before the table
 * (so generations never go back), the udev monitor before the first full
 * scan (so no uevent slips between), the first scan before the socket
 * listens (so the first client sees the real list), and READY=1 last.
 * Tear-down runs the same list backwards through the goto labels at the
 * end of rdmad_run().
 *
 * rdmad does not fork: under systemd (Type=notify) it runs in the
 * foreground, and started by hand without --foreground it only switches
 * its log to syslog.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <syslog.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "config.h"
#include "devices.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "rdmad-config.h"
#include "publish.h"
#include "server.h"
#include "async.h"
#include "netlink.h"
#include "scan.h"
#include "udev.h"
#include "genstore.h"
#include "lives.h"
#include "statefile.h"

/* Past this, a stuck tear-down is cut short by SIGALRM's default action. */
#define SHUTDOWN_TIMEOUT_SEC 10
/* STATUS= is refreshed at most this often during event bursts. */
#define STATUS_DELAY_MSEC 200

/* What the command line says; it overrides the config file. */
struct cmdline {
	bool foreground;
	bool debug;
	bool check_config;
	const char *socket_path;
	const char *config_path;
	bool config_explicit;
	const char *sysfs_root;
	const char *state_dir;
};

struct rdmad {
	struct cmdline cmd;
	struct config cfg;
	const char *socket_path;
	struct event_base *base;
	struct notify *notify;
	struct genstore *genstore;
	struct devices *table;
	struct scan *scan;
	struct udev_source *udev;
	struct netlink_source *netlink;
	struct async_source *async;
	struct server *server;
	struct publish_relay relay; /* the table's listener (server.h) */
	struct metrics *metrics;
	struct event *ev_term, *ev_int, *ev_hup, *ev_status;
	struct event *ev_lives;	    /* saves the identities, a second after */
	struct event *ev_expire;    /* the next AWAY or SR-IOV deadline */
	uint64_t expire_at;	    /* realtime ms it is set for; 0: not set */
	int state_fd;		    /* the state directory */
	struct timespec start_time; /* for metrics */
	bool genstore_failed;
};

enum {
	OPT_SOCKET = 256,
	OPT_CONFIG,
	OPT_CHECK_CONFIG,
	OPT_SYSFS,
	OPT_STATE_DIR,
	OPT_VERSION,
};

static const struct option long_options[] = {
	{"foreground", no_argument, NULL, 'f'},
	{"debug", no_argument, NULL, 'd'},
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"check-config", no_argument, NULL, OPT_CHECK_CONFIG},
	{"sysfs", required_argument, NULL, OPT_SYSFS},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{"version", no_argument, NULL, OPT_VERSION},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: rdmad [--foreground] [--debug] [--socket PATH] "
		"[--config FILE]\n"
		"             [--sysfs ROOT] [--state-dir DIR]\n"
		"       rdmad --check-config [--config FILE]\n"
		"       rdmad --version | --help\n"
		"\n"
		"  -f, --foreground   log to stderr (the norm under systemd)\n"
		"  -d, --debug        log at debug level\n"
		"      --socket PATH  listen here (else $RDMAD_SOCKET, else "
		"%s)\n"
		"      --config FILE  configuration file (default %s)\n"
		"      --check-config parse the configuration and exit\n"
		"      --sysfs ROOT   sysfs mount point (default /sys)\n"
		"      --state-dir DIR  where the generation is kept "
		"(default %s)\n",
		RDMAD_DEFAULT_SOCKET, RDMAD_DEFAULT_CONFIG,
		RDMAD_DEFAULT_STATE_DIR);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct cmdline *cmd)
{
	int opt;

	cmd->config_path = RDMAD_DEFAULT_CONFIG;
	while ((opt = getopt_long(argc, argv, "fdh", long_options, NULL)) !=
	       -1) {
		switch (opt) {
		case 'f':
			cmd->foreground = true;
			break;
		case 'd':
			cmd->debug = true;
			break;
		case OPT_SOCKET:
			cmd->socket_path = optarg;
			break;
		case OPT_CONFIG:
			cmd->config_path = optarg;
			cmd->config_explicit = true;
			break;
		case OPT_CHECK_CONFIG:
			cmd->check_config = true;
			break;
		case OPT_SYSFS:
			cmd->sysfs_root = optarg;
			break;
		case OPT_STATE_DIR:
			cmd->state_dir = optarg;
			break;
		case OPT_VERSION:
			printf("rdmad %s\n", RDMAD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmad: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	return -1;
}

/* ---- configuration ---- */

static void apply_cmdline(const struct cmdline *cmd, struct config *cfg)
{
	if (cmd->debug)
		cfg->log_level = LOG_DEBUG;
	if (cmd->sysfs_root)
		snprintf(cfg->sysfs_root, sizeof(cfg->sysfs_root), "%s",
			 cmd->sysfs_root);
	if (cmd->state_dir)
		snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s",
			 cmd->state_dir);
}

/* A missing default file means built-in defaults; a missing explicit
 * one is an error. */
static int load_config(const struct cmdline *cmd, struct config *ret_cfg,
		       char err[CONFIG_ERROR_MAX])
{
	int r = config_load(cmd->config_path, ret_cfg, err, NULL);

	if (r == -ENOENT && !cmd->config_explicit) {
		config_defaults(ret_cfg);
		r = 0;
	}
	if (r == 0)
		apply_cmdline(cmd, ret_cfg);
	return r;
}

static void print_error(const char *msg, void *userdata)
{
	fprintf(stderr, "%s\n", msg);
}

static int check_config(const struct cmdline *cmd)
{
	char err[CONFIG_ERROR_MAX];
	struct config cfg;
	unsigned int n;
	int r;

	r = config_check(cmd->config_path, &cfg, err, &n, print_error, NULL);
	if (r == -ENOENT && !cmd->config_explicit) {
		printf("%s: not found; built-in defaults apply\n",
		       cmd->config_path);
		return 0;
	}
	if (r == 0) {
		printf("%s: OK\n", cmd->config_path);
		return 0;
	}
	if (r != -EINVAL)
		fprintf(stderr, "%s\n", err);
	return 1;
}

static const char *socket_path(const struct rdmad *d)
{
	const char *env = getenv("RDMAD_SOCKET");

	if (d->cmd.socket_path)
		return d->cmd.socket_path;
	if (env && env[0])
		return env;
	if (d->cfg.socket_path[0])
		return d->cfg.socket_path;
	return RDMAD_DEFAULT_SOCKET;
}

/* ---- status ---- */

static void format_status(const struct rdmad *d, char *buf, size_t size)
{
	snprintf(buf, size, "%zu devices, generation %llu, %u clients",
		 devices_count(d->table),
		 (unsigned long long)devices_generation(d->table),
		 d->server ? server_client_count(d->server) : 0);
}

static void on_status_timer(evutil_socket_t fd, short what, void *arg)
{
	struct rdmad *d = arg;
	char status[128];

	format_status(d, status, sizeof(status));
	notify_status(d->notify, "%s", status);
}

static void schedule_status(struct rdmad *d)
{
	struct timeval tv = {.tv_usec = STATUS_DELAY_MSEC * 1000};

	if (d->ev_status && !evtimer_pending(d->ev_status, NULL))
		evtimer_add(d->ev_status, &tv);
}

/* ---- devices' lives: the identities kept, the deadlines kept ---- */

#define LIVES_FILE "lives"
#define LIVES_MAX_BYTES (4u << 20)

static void load_lives(struct rdmad *d)
{
	char *text = NULL;
	size_t bad = 0;
	int r;

	r = statefile_read(d->state_fd, LIVES_FILE, LIVES_MAX_BYTES, &text);
	if (r == -ENOENT)
		return;
	if (r == 0)
		r = lives_parse(devices_lives(d->table), text, &bad);
	free(text);
	if (r < 0)
		log_warnc(r, "%s/%s: devices come back as new",
			  d->cfg.state_dir, LIVES_FILE);
	else if (bad)
		log_warnx("%s/%s: %zu unreadable lines skipped",
			  d->cfg.state_dir, LIVES_FILE, bad);
}

static void save_lives(struct rdmad *d)
{
	struct lives *lives = devices_lives(d->table);
	char *text;
	int r = -ENOMEM;

	if (!lives_dirty(lives))
		return;
	text = lives_format(lives);
	if (text)
		r = statefile_write(d->state_fd, LIVES_FILE, text,
				    strlen(text));
	free(text);
	if (r < 0)
		log_warnc(r, "cannot save %s/%s", d->cfg.state_dir, LIVES_FILE);
	else
		lives_saved(lives);
}

static void on_lives_timer(evutil_socket_t fd, short what, void *arg)
{
	save_lives(arg);
}

/* At most one save a second, however many devices change. */
static void schedule_save(struct rdmad *d)
{
	struct timeval tv = {.tv_sec = 1};

	if (lives_dirty(devices_lives(d->table)) &&
	    !evtimer_pending(d->ev_lives, NULL))
		evtimer_add(d->ev_lives, &tv);
}

static void arm_expiry(struct rdmad *d, uint64_t when)
{
	uint64_t now = devices_now_ms(d->table), wait;
	struct timeval tv;

	if (!when || (d->expire_at && d->expire_at <= when))
		return;
	wait = when > now ? when - now : 0;
	tv.tv_sec = wait / 1000;
	tv.tv_usec = wait % 1000 * 1000;
	d->expire_at = when;
	evtimer_add(d->ev_expire, &tv);
}

static void on_expire(evutil_socket_t fd, short what, void *arg)
{
	struct rdmad *d = arg;
	uint64_t next = 0;

	d->expire_at = 0;
	devices_expire(d->table, &next);
	arm_expiry(d, next);
}

/* [lifecycle] and [alias], at start and at every reload. */
static void apply_lifecycle(struct rdmad *d, const struct config *cfg)
{
	int r;

	devices_set_grace(d->table, cfg->grace_vf_ms, cfg->grace_ms, NULL);
	if (devices_set_grace_rules(d->table, cfg->grace_rules,
				    cfg->ngrace_rules) < 0)
		log_warnx("grace rules: out of memory; the defaults apply");
	devices_set_sriov_settle(d->table, cfg->sriov_settle_ms);
	r = devices_set_aliases(d->table, cfg->aliases, cfg->naliases);
	if (r < 0)
		log_warnc(r, "aliases");
}

/* Every generation goes to the store before it is published. */
static void note_generation(void *userdata, uint64_t generation)
{
	struct rdmad *d = userdata;
	int r = genstore_note(d->genstore, generation);

	if (r < 0 && !d->genstore_failed)
		log_warnc(r, "cannot persist the generation under %s",
			  d->cfg.state_dir);
	d->genstore_failed = r < 0;
}

/* After the store and the clients (publish_table_listener()): the verbs
 * source, the metrics and the timers hear each table change. */
static void after_table_event(void *userdata, enum devices_event event,
			      const struct device *dev)
{
	struct rdmad *d = userdata;

	if (d->async)
		async_source_device_event(d->async, event, dev);
	metrics_note_event(d->metrics, event);
	arm_expiry(d, device_deadline(dev));
	schedule_save(d);
	schedule_status(d);
}

/* ---- signals ---- */

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
	struct rdmad *d = arg;
	sigset_t stop_signals;

	/* Tearing down restores the default actions of the signals; a second
	 * SIGTERM meanwhile must not kill us, so block them from now on (the
	 * alarm bounds the tear-down, and exit discards what is pending). */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop_signals, NULL);
	log_info("signal %d: stopping", (int)sig);
	notify_stopping(d->notify);
	alarm(SHUTDOWN_TIMEOUT_SEC);
	event_base_loopbreak(d->base);
}

static void log_restart_key(const char *section, const char *key, void *arg)
{
	log_warnx("reload: [%s] %s changed; it takes effect on restart",
		  section, key);
}

/* @want clients, or fewer when the open file limit would run out first:
 * then a client's accept() fails before anything else does. */
static unsigned int clients_within_fd_limit(unsigned int want)
{
	struct rlimit rl;
	rlim_t room;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return want;
	/* The public socket's room (server-int.h) less one receive. */
	room = rl.rlim_cur >= SERVER_FDS_MIN
		       ? (server_fd_ceiling(rl.rlim_cur) - SERVER_CONTROL_ROOM -
			  WIRE_MAX_PASSED_FDS) /
				 SERVER_FDS_PER_CLIENT
		       : 0;
	if (want <= room)
		return want;
	log_warnx("max_clients = %u, but the open file limit is %llu: "
		  "serving at most %llu clients",
		  want, (unsigned long long)rl.rlim_cur,
		  (unsigned long long)room);
	return (unsigned int)room;
}

/* An owner's share of the clients, as rdmad.conf sets it
 * (max_clients_per_uid of max_clients), kept where the open file limit
 * leaves fewer clients (@got of @want): one owner never takes more of
 * what is left than the configuration gives it of the whole. */
static unsigned int per_uid_within(unsigned int per_uid, unsigned int want,
				   unsigned int got)
{
	unsigned long long share;

	if (got >= want || want == 0)
		return per_uid;
	share = (unsigned long long)per_uid * got / want;
	return share ? (unsigned int)share : 1;
}

/* The kernel's RDMA namespace mode; $RDMAD_NETNS_MODE (shared or
 * exclusive) stands in for a kernel that cannot say (rdmad(8)). */
static enum views_netns_mode netns_mode(const struct rdmad *d)
{
	const char *env = getenv("RDMAD_NETNS_MODE");

	if (env && !strcmp(env, "exclusive"))
		return VIEWS_NETNS_EXCLUSIVE;
	if (env && !strcmp(env, "shared"))
		return VIEWS_NETNS_SHARED;
	return netlink_netns_mode(d->netlink);
}

static struct server_options server_options(const struct rdmad *d,
					    const struct config *cfg)
{
	unsigned int clients = clients_within_fd_limit(cfg->max_clients);
	struct server_options o = {
		.socket_path = d->socket_path,
		.socket_mode = cfg->socket_mode,
		.socket_group = cfg->socket_group,
		.admin_group = cfg->admin_group,
		.max_clients = clients,
		.max_clients_per_uid = per_uid_within(
			cfg->max_clients_per_uid, cfg->max_clients, clients),
		.max_clients_per_namespace = cfg->max_clients_per_namespace,
		.reserved_clients = cfg->reserved_clients,
		.hello_timeout_ms = cfg->hello_timeout_ms,
		.max_holds = cfg->max_holds,
		.max_holds_per_uid = cfg->max_holds_per_uid,
		.max_queue = cfg->max_queue,
		.listen_fd = -1,
		.control_fd = -1,
		.netns_mode = netns_mode(d),
		.note_generation = note_generation,
		.userdata = (void *)d,
	};

	return o;
}

static int start_metrics(struct rdmad *d, const char *listen)
{
	char host[64];
	unsigned int port;
	struct metrics_sources src = {
		.table = d->table,
		.srv = d->server,
		.scan = d->scan,
		.netlink = d->netlink,
		.start_time = d->start_time,
	};

	if (!listen[0])
		return 0;
	if (config_parse_listen(listen, host, sizeof(host), &port) < 0) {
		log_warnx("metrics on %s: not host:port", listen);
		return -EINVAL;
	}
	d->metrics = metrics_new(d->base, host, port, &src);
	if (!d->metrics) {
		log_warn("metrics on %s", listen);
		return -errno;
	}
	log_info("metrics on http://%s/metrics", listen);
	return 0;
}

/* 0, or the metrics endpoint's -errno when it could not be started. */
static int apply_reload(struct rdmad *d, const struct config *cfg)
{
	struct server_options o = server_options(d, cfg);
	int r = 0;

	config_each_restart_change(&d->cfg, cfg, log_restart_key, NULL);
	log_set_level(cfg->log_level);
	server_set_limits(d->server, &o);
	apply_lifecycle(d, cfg);
	/* A listener that could not bind before is tried again, changed or
	 * not (the port may be free now). */
	if (strcmp(cfg->metrics_listen, d->cfg.metrics_listen) != 0 ||
	    !d->metrics) {
		metrics_free(d->metrics);
		d->metrics = NULL;
		r = start_metrics(d, cfg->metrics_listen);
	}
	d->cfg = *cfg;
	return r;
}

static void on_reload(evutil_socket_t sig, short what, void *arg)
{
	struct rdmad *d = arg;
	char err[CONFIG_ERROR_MAX], status[128];
	struct config cfg;
	int r;

	notify_reloading(d->notify);
	r = load_config(&d->cmd, &cfg, err);
	if (r < 0)
		log_warnx("reload: %s; keeping the old configuration", err);
	else if (apply_reload(d, &cfg) < 0)
		log_warnx("reload: configuration %s applied but for the "
			  "metrics endpoint (tried again at the next reload)",
			  d->cmd.config_path);
	else
		log_info("reload: configuration %s applied",
			 d->cmd.config_path);
	r = scan_full_now(d->scan);
	if (r < 0) {
		log_warnc(r, "reload: rescan");
	}
	format_status(d, status, sizeof(status));
	notify_ready(d->notify, status);
}

static int setup_signals(struct rdmad *d)
{
	d->ev_term = evsignal_new(d->base, SIGTERM, on_stop, d);
	d->ev_int = evsignal_new(d->base, SIGINT, on_stop, d);
	d->ev_hup = evsignal_new(d->base, SIGHUP, on_reload, d);
	d->ev_status = evtimer_new(d->base, on_status_timer, d);
	if (!d->ev_term || !d->ev_int || !d->ev_hup || !d->ev_status ||
	    evsignal_add(d->ev_term, NULL) < 0 ||
	    evsignal_add(d->ev_int, NULL) < 0 ||
	    evsignal_add(d->ev_hup, NULL) < 0)
		return -ENOMEM;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static void free_signals(struct rdmad *d)
{
	if (d->ev_term)
		event_free(d->ev_term);
	if (d->ev_int)
		event_free(d->ev_int);
	if (d->ev_hup)
		event_free(d->ev_hup);
	if (d->ev_status)
		event_free(d->ev_status);
}

/* ---- start-up ---- */

static const char *const family_names[] = {
	[AF_UNIX] = "AF_UNIX",
	[AF_INET] = "AF_INET",
	[AF_INET6] = "AF_INET6",
	[AF_NETLINK] = "AF_NETLINK",
};
static const char *const type_names[] = {
	[SOCK_STREAM] = "SOCK_STREAM",
	[SOCK_DGRAM] = "SOCK_DGRAM",
	[SOCK_SEQPACKET] = "SOCK_SEQPACKET",
};

static const char *name_of(const char *const *names, size_t n, int i)
{
	return i >= 0 && (size_t)i < n && names[i] ? names[i] : "other";
}

/* "AF_INET SOCK_STREAM, listening", or "not a socket", for the message
 * that refuses it. */
static void describe_socket(int fd, char *buf, size_t size)
{
	int family, type, listening;
	socklen_t len = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) {
		snprintf(buf, size, "not a socket");
		return;
	}
	snprintf(buf, size, "%s %s, %s",
		 name_of(family_names,
			 sizeof(family_names) / sizeof(*family_names), family),
		 name_of(type_names, sizeof(type_names) / sizeof(*type_names),
			 type),
		 listening ? "listening" : "not listening");
}

/* Is the passed descriptor @fd a listening AF_UNIX SOCK_SEQPACKET
 * socket?  Else say what it is. */
static int check_passed(int fd)
{
	char what[96];

	if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) > 0)
		return fd;
	describe_socket(fd, what, sizeof(what));
	log_warnx("socket activation: the passed descriptor is %s; rdmad "
		  "needs a listening AF_UNIX SOCK_SEQPACKET socket "
		  "(ListenSequentialPacket=)",
		  what);
	return -EPROTOTYPE;
}

/* The control socket's name among those passed: FileDescriptorName= of
 * rdmad-control.socket, or that unit's name where it sets none. */
static bool control_name(const char *name)
{
	return name && (!strcmp(name, "control") ||
			!strcmp(name, "rdmad-control.socket"));
}

/*
 * The sockets systemd passed us (rdmad.socket, rdmad-control.socket):
 * the public one in *@public, the control one in *@control (-1 when not
 * passed; rdmad binds it beside the public one).  0, -ENOENT when none
 * was passed, or another -errno when what was passed cannot be served.
 * Then rdmad must not bind a path of its own instead: clients of the
 * passed sockets would wait for replies that never come.
 */
static int activated_sockets(int *public, int *control)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names), r = 0;

	*public = *control = -1;
	if (n <= 0) {
		if (n < 0)
			log_warnc(n,
				  "socket activation: LISTEN_FDS is unusable");
		return n ? n : -ENOENT;
	}
	for (int i = 0; i < n && r == 0; i++) {
		int *slot = control_name(names ? names[i] : NULL) ? control
								  : public;

		if (*slot >= 0) {
			log_warnx("socket activation: %d sockets passed; rdmad "
				  "serves one public socket (rdmad.socket) and "
				  "one control socket (rdmad-control.socket, "
				  "FileDescriptorName=control)",
				  n);
			r = -EINVAL;
		} else {
			r = check_passed(SD_LISTEN_FDS_START + i);
			*slot = r;
			r = r < 0 ? r : 0;
		}
	}
	if (r == 0 && *public < 0) {
		log_warnx("socket activation: no public socket passed "
			  "(rdmad.socket)");
		r = -EINVAL;
	}
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

static int start_server(struct rdmad *d)
{
	struct server_options o = server_options(d, &d->cfg);
	int r = activated_sockets(&o.listen_fd, &o.control_fd);

	if (r < 0 && r != -ENOENT)
		return r;
	d->server = server_new(d->base, d->table, d->scan, &o);
	if (!d->server)
		return -errno;
	d->relay.server = d->server;
	if (o.listen_fd >= 0)
		log_info("listening on the socket passed by systemd%s",
			 o.control_fd >= 0 ? ", and its control socket" : "");
	else
		log_info("listening on %s and %s%s", d->socket_path,
			 d->socket_path, WIRE_CONTROL_SUFFIX);
	return 0;
}

static int start_table(struct rdmad *d)
{
	uint64_t start;
	int r;

	r = genstore_open(d->cfg.state_dir, &d->genstore, &start);
	if (r < 0) {
		log_warnc(r, "state directory %s", d->cfg.state_dir);
		return r;
	}
	if (r > 0)
		log_warnx("%s/generation is unreadable: starting from %llu "
			  "(the clock), above any generation published before",
			  d->cfg.state_dir, (unsigned long long)start);
	if (start == UINT64_MAX)
		log_warnx(
			"the generation is at its ceiling (2^64 - 1): changes "
			"will carry the same generation; remove %s/generation "
			"and restart all clients to start over",
			d->cfg.state_dir);
	d->table = devices_new(start);
	d->state_fd = open(d->cfg.state_dir,
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	d->ev_lives = evtimer_new(d->base, on_lives_timer, d);
	d->ev_expire = evtimer_new(d->base, on_expire, d);
	if (!d->table || d->state_fd < 0 || !d->ev_lives || !d->ev_expire)
		return d->state_fd < 0 ? -errno : -ENOMEM;
	load_lives(d);
	apply_lifecycle(d, &d->cfg);
	d->relay = (struct publish_relay){.table = d->table,
					  .note_generation = note_generation,
					  .then = after_table_event,
					  .userdata = d};
	devices_set_listener(d->table, publish_table_listener, &d->relay);
	log_debug("generation starts after %llu", (unsigned long long)start);
	return 0;
}

static int start_sources(struct rdmad *d)
{
	struct scan_options so = {
		.sysroot = d->cfg.sysfs_root,
		.debounce_ms = d->cfg.debounce_ms,
		.storm_threshold = d->cfg.storm_threshold,
	};
	int r;

	d->scan = scan_new(d->base, d->table, &so);
	if (!d->scan)
		return -errno;
	d->udev = udev_source_new(d->base, d->scan);
	if (!d->udev) {
		log_warn("udev monitor");
		return -errno;
	}
	r = scan_full_now(d->scan);
	if (r < 0) {
		log_warnc(r, "first scan of %s", d->cfg.sysfs_root);
	}
	d->netlink = netlink_source_new(d->base, d->table, d->scan);
	if (!d->netlink)
		log_warn("netlink: link state changes come from sysfs only");
	d->async = async_source_new(d->base, d->table, d->scan);
	if (!d->async)
		log_warn("verbs async events are off");
	return 0;
}

static void stop_sources(struct rdmad *d)
{
	async_source_free(d->async);
	netlink_source_free(d->netlink);
	udev_source_free(d->udev);
	scan_free(d->scan);
}

/*
 * Every client is a descriptor, and a scan must never fail for lack of
 * one (a device would look removed): take the hard limit as our soft one,
 * as systemd advises for services that need many (its default soft limit
 * is 1024 while max_clients is 4096).
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("cannot raise the open file limit");
}

/* Below SERVER_FDS_MIN rdmad could not keep its promises (the control
 * socket's room, the budget for passed descriptors): it says so and
 * does not start, rather than run deaf. */
static int check_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= SERVER_FDS_MIN)
		return 0;
	log_warnx("the open file limit is %llu (hard %llu); rdmad needs at "
		  "least %d: raise it (LimitNOFILE= in rdmad.service, or "
		  "ulimit -n)",
		  (unsigned long long)rl.rlim_cur,
		  (unsigned long long)rl.rlim_max, SERVER_FDS_MIN);
	return -EMFILE;
}

static int rdmad_run(struct rdmad *d)
{
	char status[128];
	int r = -ENOMEM;

	raise_fd_limit();
	r = check_fd_limit();
	if (r < 0)
		goto out;
	r = -ENOMEM;
	d->base = event_base_new();
	/* Two priorities: the control socket's events first
	 * (server-options.h). */
	if (!d->base || event_base_priority_init(d->base, SERVER_PRIORITIES))
		goto out;
	d->notify = notify_new(d->base);
	if (!d->notify || setup_signals(d) < 0)
		goto out_base;
	r = start_table(d);
	if (r < 0)
		goto out_table;
	r = start_sources(d);
	if (r < 0)
		goto out_sources;
	r = start_server(d);
	if (r < 0)
		goto out_sources;
	start_metrics(d, d->cfg.metrics_listen);
	format_status(d, status, sizeof(status));
	notify_ready(d->notify, status);
	log_info("rdmad %s ready: %s", RDMAD_VERSION, status);
	r = event_base_dispatch(d->base) < 0 ? -EIO : 0;

	/* Closing the clients releases their holds: table events nobody is
	 * left to hear, and the modules they would reach are going away. */
	devices_set_listener(d->table, NULL, NULL);
	d->relay.server = NULL;
	server_free(d->server);
	d->server = NULL;
	metrics_free(d->metrics);
	d->metrics = NULL;
out_sources:
	stop_sources(d);
out_table:
	if (d->table)
		save_lives(d);
	if (d->ev_lives)
		event_free(d->ev_lives);
	if (d->ev_expire)
		event_free(d->ev_expire);
	if (d->state_fd >= 0)
		close(d->state_fd);
	devices_free(d->table);
	genstore_close(d->genstore);
out_base:
	free_signals(d);
	notify_free(d->notify);
	event_base_free(d->base);
out:
	return r;
}

int main(int argc, char **argv)
{
	struct rdmad d = {.state_fd = -1};
	char err[CONFIG_ERROR_MAX];
	int r;

	clock_gettime(CLOCK_REALTIME, &d.start_time);
	r = parse_args(argc, argv, &d.cmd);
	if (r >= 0)
		return r;
	if (d.cmd.check_config)
		return check_config(&d.cmd);
	log_init(d.cmd.foreground, d.cmd.debug ? LOG_DEBUG : LOG_INFO);
	if (load_config(&d.cmd, &d.cfg, err) < 0) {
		log_warnx("%s", err);
		return 1;
	}
	log_set_level(d.cfg.log_level);
	d.socket_path = socket_path(&d);
	r = rdmad_run(&d);
	if (r < 0) {
		log_warnc(r, "start-up failed");
		return 1;
	}
	log_info("stopped");
	return 0;
}

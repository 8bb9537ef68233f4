/* SPDX-License-Identifier: MIT */
/*
 * rdmad.conf: an INI file (inih) with [daemon], [socket], [scan] and
 * [metrics] sections.  Loading never exits and never logs: it returns
 * -errno and a "FILE:LINE: message" text, so the caller decides whether a
 * bad file is fatal (start-up, --check-config) or ignored (SIGHUP).
 */
#ifndef RDMAD_CONFIG_H
#define RDMAD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "alias.h"

#define CONFIG_MAX_GRACE_RULES 16

#define CONFIG_PATH_MAX 256
/* sun_path is 108 bytes including the NUL. */
#define CONFIG_SOCKET_PATH_MAX 108
#define CONFIG_ERROR_MAX 512

struct config {
	/* [daemon] */
	int log_level; /* LOG_ERR .. LOG_DEBUG */
	char state_dir[CONFIG_PATH_MAX];
	char sysfs_root[CONFIG_PATH_MAX];
	/* [socket] */
	char socket_path[CONFIG_SOCKET_PATH_MAX]; /* "" : built-in default */
	mode_t socket_mode;
	gid_t socket_group; /* (gid_t)-1: unset */
	gid_t admin_group;  /* (gid_t)-1: root only */
	unsigned int max_clients;
	unsigned int max_clients_per_uid;
	unsigned int max_clients_per_namespace;
	unsigned int reserved_clients;
	unsigned int hello_timeout_ms;
	unsigned int max_holds; /* max_holds_per_client */
	unsigned int max_holds_per_uid;
	unsigned int max_queue;
	/* [scan] */
	unsigned int debounce_ms;
	unsigned int storm_threshold;
	/* [metrics] */
	char metrics_listen[64]; /* "" : off; "host:port" */
	/* [lifecycle] */
	unsigned int grace_vf_ms;
	unsigned int grace_ms;
	unsigned int sriov_settle_ms;
	struct grace_rule grace_rules[CONFIG_MAX_GRACE_RULES]; /* grace = */
	unsigned int ngrace_rules;
	/* [alias] */
	struct alias_rule aliases[ALIAS_MAX_RULES];
	unsigned int naliases;
};

/* The built-in defaults, documented in rdmad.conf(5). */
void config_defaults(struct config *cfg);

/*
 * Parse @path over the defaults into @ret_cfg.  On failure returns -errno
 * (-ENOENT and friends when the file cannot be opened, -EINVAL for a bad
 * file) and leaves the first error, "FILE:LINE: text" or "FILE: text", in
 * @ret_error; @ret_cfg is then unspecified.  Every error in the file is
 * counted; only the first is kept in @ret_error, the total in *ret_nerrors
 * (may be NULL).
 */
int config_load(const char *path, struct config *ret_cfg,
		char ret_error[CONFIG_ERROR_MAX], unsigned int *ret_nerrors);

/* config_load() that also calls @on_error with every error message. */
int config_check(const char *path, struct config *ret_cfg,
		 char ret_error[CONFIG_ERROR_MAX], unsigned int *ret_nerrors,
		 void (*on_error)(const char *msg, void *userdata),
		 void *userdata);

/* Like config_load() on an in-memory text (tests, fuzzing); @name stands
 * in for the file name in messages. */
int config_load_string(const char *name, const char *text,
		       struct config *ret_cfg, char ret_error[CONFIG_ERROR_MAX],
		       unsigned int *ret_nerrors);

/* Parse "debug", "info", "notice", "warning", "err" into LOG_*; -EINVAL. */
int config_parse_log_level(const char *text, int *ret_level);

/* Split "host:port" or "[v6]:port" (-EINVAL when malformed). */
int config_parse_listen(const char *text, char *ret_host, size_t host_len,
			unsigned int *ret_port);

/* Calls @fn for each key that differs and only takes effect on restart. */
void config_each_restart_change(const struct config *old,
				const struct config *new_cfg,
				void (*fn)(const char *section, const char *key,
					   void *userdata),
				void *userdata);

#endif

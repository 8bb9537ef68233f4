/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's print layer, shaped like iproute2's json_print.h: a field is
 * printed by one call that serves both forms, print_string(p, PRINT_ANY,
 * key, fmt, value) adding "key": value to the JSON object being built
 * or, in the text form, printing @fmt with the value.  PRINT_JSON and
 * PRINT_FP print in one form only, for what the forms say differently.
 * The JSON is built with json-c (escaping is never ours to get wrong)
 * and printed by print_end(); the text goes straight to the stream, each
 * string made safe for a terminal (print_escaped()).
 */
#ifndef RDMACTL_PRINT_H
#define RDMACTL_PRINT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

enum print_type {
	PRINT_FP = 1,	/* the text form only */
	PRINT_JSON = 2, /* the JSON form only */
	PRINT_ANY = PRINT_FP | PRINT_JSON,
};

/* Objects and arrays open at once, at most: status, devices, a device,
 * its holders, a holder, and room to spare. */
#define PRINT_MAX_DEPTH 8

struct print {
	FILE *f; /* where the text form, or print_end()'s JSON, goes */
	bool json;
	/* The JSON objects and arrays open, open[0] the outermost, which
	 * stays when closed, for print_end() or print_take(). */
	struct json_object *open[PRINT_MAX_DEPTH];
	unsigned int depth;
	struct json_object *root;
};

/* Start printing to @f, as JSON when @json. */
void print_start(struct print *p, FILE *f, bool json);
/* JSON: print the value built on one line (@pretty: indented), flush
 * and release it; text: flush.  -EIO if the output cannot be written. */
int print_end(struct print *p, bool pretty);
/* JSON: hand over the value built instead of printing it (NULL in the
 * text form). */
struct json_object *print_take(struct print *p);
bool print_is_json(const struct print *p);
/* Print @value as print_end() does, and release it. */
int print_json_value(FILE *f, struct json_object *value, bool pretty);

/* An object or array: the value of @key in the object open, or (@key
 * NULL) the next element of the array open, or the outermost value.
 * JSON only: the text form has its own headings. */
void print_open_object(struct print *p, const char *key);
void print_close_object(struct print *p);
void print_open_array(struct print *p, const char *key);
void print_close_array(struct print *p);

void print_string(struct print *p, enum print_type t, const char *key,
		  const char *fmt, const char *value);
void print_uint(struct print *p, enum print_type t, const char *key,
		const char *fmt, uint64_t value);
void print_int(struct print *p, enum print_type t, const char *key,
	       const char *fmt, int64_t value);
/* The text form prints @fmt with "true" or "false", as JSON does. */
void print_bool(struct print *p, enum print_type t, const char *key,
		const char *fmt, bool value);
/* Text only, printf()'s way: headings, separators, plurals.  What the
 * daemon relays goes through print_string() or print_escaped(). */
void print_fp(struct print *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * @s for the terminal: "-" when empty (sysfs leaves some values empty, a
 * virtual device has no PCI address), and every byte that is not
 * printable ASCII as \xNN, so that nothing the daemon relays (a process
 * name, a sysfs value) can send escape sequences to the administrator's
 * terminal.  The result lives until the fourth call after this one.
 */
const char *print_escaped(const char *s);

#endif

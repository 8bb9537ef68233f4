/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's print layer (print.h): one call a field for both forms, as
 * iproute2's lib/json_print.c, with json-c's objects in place of its
 * streaming writer.  json-c keeps an object's keys in the order they are
 * added, so the JSON keys come in the order of the calls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

void print_start(struct print *p, FILE *f, bool json)
{
	*p = (struct print){.f = f, .json = json};
}

bool print_is_json(const struct print *p)
{
	return p->json;
}

static bool in_json(const struct print *p, enum print_type t)
{
	return p->json && (t & PRINT_JSON);
}

static bool in_text(const struct print *p, enum print_type t)
{
	return !p->json && (t & PRINT_FP);
}

/* Put @value where print_open_object() says; takes it. */
static void add(struct print *p, const char *key, struct json_object *value)
{
	struct json_object *open = p->depth ? p->open[p->depth - 1] : NULL;

	if (!open) {
		json_object_put(p->root);
		p->root = value;
	} else if (json_object_is_type(open, json_type_array)) {
		json_object_array_add(open, value);
	} else {
		json_object_object_add(open, key, value);
	}
}

/* Open @value (an empty object or array) under @key. */
static void open_value(struct print *p, const char *key,
		       struct json_object *value)
{
	add(p, key, value);
	/* Deeper than any of rdmactl's objects: the bug is ours. */
	if (p->depth == PRINT_MAX_DEPTH)
		abort();
	p->open[p->depth++] = value;
}

void print_open_object(struct print *p, const char *key)
{
	if (p->json)
		open_value(p, key, json_object_new_object());
}

void print_open_array(struct print *p, const char *key)
{
	if (p->json)
		open_value(p, key, json_object_new_array());
}

void print_close_object(struct print *p)
{
	if (p->json && p->depth)
		p->depth--;
}

void print_close_array(struct print *p)
{
	print_close_object(p);
}

/* The formats of the four below are their callers' literals, each with
 * one conversion for the one value (as iproute2's print_*()): the
 * compiler cannot check them here, rdmactl's tests print every one. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

void print_string(struct print *p, enum print_type t, const char *key,
		  const char *fmt, const char *value)
{
	if (in_json(p, t))
		add(p, key, json_object_new_string(value ? value : ""));
	else if (in_text(p, t))
		fprintf(p->f, fmt, print_escaped(value));
}

void print_uint(struct print *p, enum print_type t, const char *key,
		const char *fmt, uint64_t value)
{
	if (in_json(p, t))
		add(p, key, json_object_new_uint64(value));
	else if (in_text(p, t))
		fprintf(p->f, fmt, value);
}

void print_int(struct print *p, enum print_type t, const char *key,
	       const char *fmt, int64_t value)
{
	if (in_json(p, t))
		add(p, key, json_object_new_int64(value));
	else if (in_text(p, t))
		fprintf(p->f, fmt, value);
}

void print_bool(struct print *p, enum print_type t, const char *key,
		const char *fmt, bool value)
{
	if (in_json(p, t))
		add(p, key, json_object_new_boolean(value));
	else if (in_text(p, t))
		fprintf(p->f, fmt, value ? "true" : "false");
}

#pragma GCC diagnostic pop

void print_fp(struct print *p, const char *fmt, ...)
{
	va_list ap;

	if (p->json)
		return;
	va_start(ap, fmt);
	vfprintf(p->f, fmt, ap);
	va_end(ap);
}

struct json_object *print_take(struct print *p)
{
	struct json_object *root = p->root;

	p->root = NULL;
	p->depth = 0;
	return root;
}

int print_json_value(FILE *f, struct json_object *value, bool pretty)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;
	int r;

	if (pretty)
		flags |= JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED;
	else
		flags |= JSON_C_TO_STRING_PLAIN;
	r = fprintf(f, "%s\n", json_object_to_json_string_ext(value, flags));
	json_object_put(value);
	/* A monitor's reader must see each line as it happens. */
	if (fflush(f) != 0 || r < 0)
		return -EIO;
	return 0;
}

int print_end(struct print *p, bool pretty)
{
	if (p->json)
		return print_json_value(p->f, print_take(p), pretty);
	return fflush(p->f) == 0 ? 0 : -EIO;
}

const char *print_escaped(const char *s)
{
	static char ring[4][4 * 64 + 1];
	static unsigned int next;
	char *out = ring[next++ % 4];
	size_t n = 0;

	if (!s || !*s)
		return "-";
	for (; *s && n + 5 <= sizeof(ring[0]); s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[n++] = (char)ch;
		else
			n += (size_t)snprintf(out + n, 5, "\\x%02x", ch);
	}
	out[n] = '\0';
	return out;
}

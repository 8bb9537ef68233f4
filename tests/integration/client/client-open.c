/* SPDX-License-Identifier: MIT */
/*
 * client-open STEP...: run steps on one client, one output line each, so
 * a test can look at the daemon's holders between them:
 *   open NAME     rdmad_client_open_device(): "opened NAME" or "error ..."
 *   close INDEX   rdmad_client_close_device() of the INDEXth open: "closed"
 *   hold NAME     rdmad_client_hold(): "held NAME" or "error ..."
 *   release NAME  rdmad_client_release(): "released NAME" or "error ..."
 *   wait          print "waiting", then read a line from stdin
 * No kernel stands behind umockdev's devices, so ibv_open_device() and
 * ibv_close_device() are faked at link time (-Wl,--wrap): the library's
 * own code and the real daemon do everything else.
 */
#include <stdlib.h>

#include <infiniband/verbs.h>

#include "client-common.h"

struct ibv_context *__wrap_ibv_open_device(struct ibv_device *device);
int __wrap_ibv_close_device(struct ibv_context *context);

struct ibv_context *__wrap_ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *context = calloc(1, sizeof(*context));

	if (context)
		context->device = device;
	return context;
}

int __wrap_ibv_close_device(struct ibv_context *context)
{
	free(context);
	return 0;
}

static struct ibv_context *opened[16];
static int n_opened;

static int report(const char *done, const char *what, int err)
{
	if (err < 0)
		printf("error %s %s %s\n", done, what, strerror(-err));
	else
		printf("%s %s\n", done, what);
	fflush(stdout);
	return err < 0;
}

static int step(struct rdmad_client *c, const char *verb, const char *arg)
{
	struct ibv_context *context;

	if (strcmp(verb, "open") == 0 && n_opened < 16) {
		context = rdmad_client_open_device(c, arg);
		if (context)
			opened[n_opened++] = context;
		return report("opened", arg, context ? 0 : -errno);
	}
	if (strcmp(verb, "close") == 0 && atoi(arg) < n_opened)
		return report("closed", arg,
			      rdmad_client_close_device(c, opened[atoi(arg)]));
	if (strcmp(verb, "hold") == 0)
		return report("held", arg, rdmad_client_hold(c, arg));
	if (strcmp(verb, "release") == 0)
		return report("released", arg, rdmad_client_release(c, arg));
	return report("bad-step", verb, -EINVAL);
}

int main(int argc, char **argv)
{
	struct rdmad_client *client = rdmad_client_new(NULL);
	char line[16];
	int i, failed = 0;

	if (!client)
		return 2;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "wait") == 0) {
			printf("waiting\n");
			fflush(stdout);
			if (!fgets(line, sizeof(line), stdin))
				break;
			continue;
		}
		if (i + 1 == argc)
			return 2;
		failed |= step(client, argv[i], argv[i + 1]);
		i++;
	}
	rdmad_client_unref(client);
	return failed;
}

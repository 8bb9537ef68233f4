/* SPDX-License-Identifier: MIT */
/*
 * A domain of libfabric's verbs provider on one device, as the real-kernel
 * suite's mrcache-fabric-app and bench-mrcache's fabric mode open it:
 * FI_EP_MSG with FI_MSG and FI_RMA, the MR modes the verbs provider asks,
 * API 1.17 (Debian 12's libfabric).  The registration cache and its
 * monitor are libfabric's, chosen by FI_MR_CACHE_MONITOR.
 */
#ifndef RDMAD_FABRIC_DOMAIN_H
#define RDMAD_FABRIC_DOMAIN_H

#include <errno.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

/* 0 with *@ret_domain open and *@ret_info what it was opened with (the
 * caller's to free); -ENOMEM or -ENODEV. */
static inline int fabric_verbs_domain(const char *device,
				      struct fid_domain **ret_domain,
				      struct fi_info **ret_info)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	int err = -ENODEV;

	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs");
	hints->domain_attr->name = strdup(device);
	if (!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info) &&
	    !fi_fabric(info->fabric_attr, &fabric, NULL) &&
	    !fi_domain(fabric, info, ret_domain, NULL)) {
		*ret_info = info;
		err = 0;
	} else if (info) {
		fi_freeinfo(info);
	}
	fi_freeinfo(hints);
	return err;
}

#endif

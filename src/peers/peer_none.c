/* Many nodes, built without MPI: every node runs alone. See peer.h. */
#include "launch.h"
#include "peer.h"

#include <stdio.h>
#include <syslog.h>

#include <stdlib.h>
#include <string.h>

int dlfs_peer_open(const struct dlfs_peer_conf *conf, struct dlfs_peer **out,
		   struct dlfs_err *err)
{
	*out = NULL;
	if (conf->force)
		return dlfs_err_set(err, -ENOTSUP,
				    "-o mpi: this dlfs was built without MPI "
				    "(install libopenmpi-dev or libmpich-dev and rebuild)");
	if (dlfs_launch_size() > 1 && conf->log)
		conf->log(conf->arg, LOG_WARNING,
			  "started by an MPI launcher, but this dlfs was built "
			  "without MPI: this node runs alone");
	return 0;
}

void dlfs_peer_share_result(const struct dlfs_peer *p,
			    struct dlfs_peer_share_result *r)
{
	(void)p;
	memset(r, 0, sizeof(*r));
}

void dlfs_peer_set_layout(struct dlfs_peer *p, uint64_t n_chunks,
			  size_t chunk_size)
{
	(void)p;
	(void)n_chunks;
	(void)chunk_size;
}

int dlfs_peer_start(struct dlfs_peer *p, struct dlfs_err *err)
{
	(void)p;
	(void)err;
	return 0;
}

void dlfs_peer_close(struct dlfs_peer *p)
{
	(void)p;
}

unsigned dlfs_peer_rank(const struct dlfs_peer *p)
{
	(void)p;
	return 0;
}

unsigned dlfs_peer_size(const struct dlfs_peer *p)
{
	(void)p;
	return 1;
}

uint64_t dlfs_peer_seed(const struct dlfs_peer *p)
{
	(void)p;
	return 0;
}

unsigned dlfs_peer_home(const struct dlfs_peer *p, uint64_t g)
{
	(void)p;
	(void)g;
	return 0;
}

int dlfs_peer_get(struct dlfs_peer *p, uint64_t g, void *buf, size_t cap,
		  size_t *len)
{
	(void)p;
	(void)g;
	(void)buf;
	(void)cap;
	(void)len;
	return -EHOSTDOWN;
}

void dlfs_peer_get_stats(struct dlfs_peer *p, struct dlfs_peer_stats *s)
{
	(void)p;
	memset(s, 0, sizeof(*s));
}

void dlfs_peer_mpi_library(char *buf, size_t len)
{
	snprintf(buf, len, "none (built without MPI)");
}

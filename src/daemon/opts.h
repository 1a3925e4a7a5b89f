/*
 * The daemon's command line: dlfs DATASET MOUNTPOINT [-o opt,...] and the
 * FUSE options libfuse knows. Every dlfs -o option is one row of a table
 * (opts.c): its name, its kind and bounds, where it goes, its help line,
 * and another option it needs. A bad value is refused with one line,
 * "dlfs: -o NAME=VALUE: what is wrong", and exit status 2.
 *
 * Ownership: dlfs_opts_parse fills a struct dlfs_opts whose strings it
 * owns; dlfs_opts_free releases them. Not thread-safe (main only).
 */
#ifndef DLFS_OPTS_H
#define DLFS_OPTS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdint.h>

#include "reader.h"
#include "order.h"

/* Where the epoch orders' seed comes from: the dataset's id (the
 * default, so a restarted job gets the same orders), -o seed=N, or
 * -o seed=random (drawn at mount). */
enum dlfs_seed_from { DLFS_SEED_DATASET, DLFS_SEED_GIVEN, DLFS_SEED_RANDOM };

struct dlfs_opts {
	char *dataset;
	char *mountpoint;            /* as given; libfuse parses its own */
	struct dlfs_reader_conf rd;  /* the read core's settings */
	unsigned max_threads;        /* FUSE workers; 0: the default */
	uint64_t kernel_readahead;   /* bytes; 0: the kernel's own */
	int kernel_readahead_given;
	enum dlfs_shuffle shuffle;
	uint32_t shuffle_window;
	uint64_t seed;               /* DLFS_SEED_DATASET: not yet known */
	enum dlfs_seed_from seed_from;
	int mpi;
	int nonempty;                /* mount over entries or a mount */
	unsigned peer_timeout_ms;
	unsigned join_timeout_s;
	int show_help;
	/* "allow_other" or "allow_root" when given (a FUSE option, which a
	 * user who is not root may use only with user_allow_other in
	 * /etc/fuse.conf), else NULL. */
	const char *allow_other;
	/* Strings owned here (what rd points to). */
	char *cache_dir;
	char *ctl_dir;               /* the control directory's name, or NULL */
};

/*
 * Parse args (libfuse's, which keeps the options it knows) into o with
 * the defaults for what is not given. @return 0, 1 (help was asked for:
 * print dlfs_opts_usage), or 2 after printing the one-line error.
 */
int dlfs_opts_parse(struct fuse_args *args, struct dlfs_opts *o);

/* Print dlfs's options, one per line, to stdout. */
void dlfs_opts_usage(void);

void dlfs_opts_free(struct dlfs_opts *o);

/* "dataset", "option", "random": as .dlfs/info says where the seed came
 * from. */
const char *dlfs_seed_from_name(enum dlfs_seed_from f);

/* "none", "auto", "home", "all"; parse @return 0 or -EINVAL. */
const char *dlfs_fill_mode_name(enum dlfs_fill_mode m);

#endif

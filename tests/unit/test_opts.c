/*
 * The daemon's options (src/daemon/opts.c, compiled into this test): the
 * defaults, each kind of row (size, number, enum, string, flag), the
 * bounds, the options that need another, and that every refusal is the
 * one line "dlfs: -o NAME=VALUE: ..." with status 2; and that allow_other
 * is noticed, though it is libfuse's.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opts.h"
#include "tutil.h"

static char said[4096]; /* what the last parse wrote to stderr */

/* Parse "dlfs ds mnt -o OPTS" (no -o when opts is NULL). */
static int parse(const char *opts, struct dlfs_opts *o)
{
	char *argv[] = {"dlfs", "ds", "mnt", "-o", (char *)opts, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(opts ? 5 : 3, argv);
	char path[] = "/tmp/test_opts.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	fflush(stderr);
	dup2(fd, 2);
	int ret = dlfs_opts_parse(&args, o);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t n = pread(fd, said, sizeof(said) - 1, 0);
	said[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	fuse_opt_free_args(&args);
	return ret;
}

/* opts is refused, with a message that starts with want. */
static void refused(const char *opts, const char *want)
{
	struct dlfs_opts o;
	CHECK_EQ(parse(opts, &o), 2);
	if (strncmp(said, want, strlen(want)) || !strchr(said, '\n') ||
	    strchr(said, '\n')[1]) {
		fprintf(stderr, "-o %s: said '%s', want one line '%s...'\n",
			opts, said, want);
		t_failures++;
	}
	dlfs_opts_free(&o);
}

int main(void)
{
	struct dlfs_opts o;
	CHECK_EQ(parse(NULL, &o), 0);
	/* The dataset's path is absolute, as typed (issue 39). */
	char want[8192], *cwd = getcwd(NULL, 0);
	snprintf(want, sizeof(want), "%s/ds", cwd);
	CHECK(!strcmp(o.dataset, want) && !strcmp(o.mountpoint, "mnt"));
	free(cwd);
	CHECK(o.rd.ram_cache == UINT64_C(1) << 30);
	CHECK(o.rd.readahead == UINT64_C(64) << 20);
	CHECK(o.kernel_readahead == UINT64_C(1) << 20);
	CHECK_EQ(o.rd.pfs_depth, 8);
	CHECK_EQ(o.rd.pfs_direct, 1);
	CHECK_EQ(o.rd.fill, DLFS_FILL_AUTO);
	CHECK_EQ(o.shuffle, DLFS_SHUFFLE_GLOBAL);
	CHECK_EQ(o.shuffle_window, 16);
	CHECK_EQ(o.peer_timeout_ms, 60000);
	CHECK_EQ(o.join_timeout_s, 120);
	CHECK(o.seed_from == DLFS_SEED_DATASET && !o.kernel_readahead_given &&
	      !o.mpi);
	CHECK(!o.cache_dir && !o.rd.cache_dir && !o.ctl_dir);
	CHECK(!o.allow_other);
	CHECK_EQ(said[0], '\0');
	dlfs_opts_free(&o);

	/* FUSE's allow_other and allow_root stay libfuse's, and are seen
	 * (a mount that fails says what a user needs for them). */
	CHECK_EQ(parse("ram_cache=64M,allow_other", &o), 0);
	CHECK(o.allow_other && !strcmp(o.allow_other, "allow_other"));
	dlfs_opts_free(&o);
	CHECK_EQ(parse("allow_root", &o), 0);
	CHECK(o.allow_other && !strcmp(o.allow_other, "allow_root"));
	dlfs_opts_free(&o);

	CHECK_EQ(parse("ram_cache=512M,max_threads=8,shuffle=chunked,"
		       "shuffle_window=4,seed=7,mpi,cache_dir=/nvme/x,"
		       "cache_size=2G,cache_policy=lru,stage=home,"
		       "pfs_io=buffered,read_unit=file,readahead=0,"
		       "kernel_readahead=0,ctl_dir=.ctl,prefetch_threads=3",
		       &o),
		 0);
	CHECK(o.rd.ram_cache == UINT64_C(512) << 20);
	CHECK_EQ(o.max_threads, 8);
	CHECK_EQ(o.shuffle, DLFS_SHUFFLE_CHUNKED);
	CHECK_EQ(o.shuffle_window, 4);
	CHECK(o.seed == 7 && o.seed_from == DLFS_SEED_GIVEN);
	CHECK_EQ(o.mpi, 1);
	CHECK(o.cache_dir && !strcmp(o.cache_dir, "/nvme/x"));
	CHECK(o.rd.cache_dir == o.cache_dir);
	CHECK(o.rd.cache_size == UINT64_C(2) << 30);
	CHECK_EQ(o.rd.cache_policy, DLFS_POLICY_LRU);
	CHECK_EQ(o.rd.fill, DLFS_FILL_HOME);
	CHECK_EQ(o.rd.pfs_direct, 0);
	CHECK_EQ(o.rd.read_unit, DLFS_UNIT_FILE);
	CHECK_EQ(o.rd.readahead, 0);
	CHECK(o.kernel_readahead == 0 && o.kernel_readahead_given);
	CHECK(o.ctl_dir && !strcmp(o.ctl_dir, ".ctl"));
	CHECK_EQ(o.rd.pfs_depth, 3);
	dlfs_opts_free(&o);

	/* seed=random draws one; a later seed=N wins, as options do. */
	CHECK_EQ(parse("seed=random", &o), 0);
	CHECK_EQ(o.seed_from, DLFS_SEED_RANDOM);
	CHECK(!strcmp(dlfs_seed_from_name(o.seed_from), "random"));
	dlfs_opts_free(&o);
	CHECK_EQ(parse("seed=random,seed=0", &o), 0);
	CHECK(o.seed == 0 && o.seed_from == DLFS_SEED_GIVEN);
	dlfs_opts_free(&o);
	CHECK_EQ(parse("seed=18446744073709551615", &o), 0);
	CHECK(o.seed == UINT64_MAX);
	dlfs_opts_free(&o);

	CHECK_EQ(parse("-h", &o), 1);
	dlfs_opts_free(&o);

	refused("ram_cache=0", "dlfs: -o ram_cache=0: ");
	refused("ram_cache=lots", "dlfs: -o ram_cache=lots: not a size");
	refused("max_threads=0", "dlfs: -o max_threads=0: ");
	refused("max_threads=1025", "dlfs: -o max_threads=1025: ");
	refused("max_threads=-1", "dlfs: -o max_threads=-1: ");
	refused("pfs_depth=65", "dlfs: -o pfs_depth=65: ");
	refused("kernel_readahead=2G", "dlfs: -o kernel_readahead=2G: ");
	refused("shuffle=random", "dlfs: -o shuffle=random: global, chunked");
	refused("shuffle_window=0", "dlfs: -o shuffle_window=0: ");
	refused("seed=x", "dlfs: -o seed=x: a number from 0 to "
			  "18446744073709551615, or random");
	refused("seed=18446744073709551616", "dlfs: -o seed=1844674407370955161");
	refused("seed=-1", "dlfs: -o seed=-1: a number");
	refused("seed=Random", "dlfs: -o seed=Random: a number");
	refused("cache_dir=", "dlfs: -o cache_dir=: empty path");
	refused("cache_size=10G", "dlfs: -o cache_size=10G: needs -o cache_dir");
	refused("cache_policy=lru", "dlfs: -o cache_policy=lru: needs -o "
				    "cache_dir");
	refused("stage=all", "dlfs: -o stage=all: needs -o cache_dir");
	refused("ctl_dir=a/b", "dlfs: -o ctl_dir=a/b: a name");
	refused("ctl_dir=..", "dlfs: -o ctl_dir=..: a name");
	refused("peer_timeout=0", "dlfs: -o peer_timeout=0: ");
	refused("join_timeout=86401", "dlfs: -o join_timeout=86401: ");
	/* A typo names the option meant; a name that is nobody's is named;
	 * libfuse's own options and fstab's x- ones pass. */
	refused("ram_cahce=2G", "dlfs: unknown option -o ram_cahce: did you "
				"mean ram_cache?");
	refused("ram_cache=1G,cache_dri=/x", "dlfs: unknown option -o "
					     "cache_dri: did you mean "
					     "cache_dir?");
	refused("shufle=chunked", "dlfs: unknown option -o shufle: did you "
				  "mean shuffle?");
	refused("alow_other", "dlfs: unknown option -o alow_other: did you "
			      "mean allow_other?");
	refused("frobnicate", "dlfs: unknown option -o frobnicate (dlfs "
			      "--help");
	CHECK_EQ(parse("allow_other,noatime,fsname=x,x-systemd.automount", &o),
		 0);
	dlfs_opts_free(&o);
	CHECK_EQ(parse("nonempty", &o), 0);
	CHECK_EQ(o.nonempty, 1);
	dlfs_opts_free(&o);
	CHECK_EQ(parse(NULL, &o), 0);
	CHECK_EQ(o.nonempty, 0);
	dlfs_opts_free(&o);
	return t_done("test_opts");
}

/*
 * dlfs: mount a packed dataset. Everything that can be checked is
 * checked before mounting; the command returns (without -f) only once
 * the mount is live, because the mount happens before daemonizing.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "dlfs/pack.h"
#include "fuse_ll.h"

struct conf {
	char *dataset;
	char *mountpoint; /* seen here only to check it before libfuse does */
	char *ram_cache;
	unsigned max_threads;
	char *cache_dir;
	char *cache_size;
	char *cache_policy;
	char *readahead;
	char *prefetch_threads;
	char *pfs_io;
	char *shuffle;
	char *shuffle_window;
	char *seed;
	char *stage;
	unsigned peer_timeout;
	int mpi;
	int show_help;
};

#define OPT(t, p) {t, offsetof(struct conf, p), 1}
static const struct fuse_opt dlfs_opts[] = {
	OPT("ram_cache=%s", ram_cache),
	OPT("max_threads=%u", max_threads),
	OPT("cache_dir=%s", cache_dir),
	OPT("cache_size=%s", cache_size),
	OPT("cache_policy=%s", cache_policy),
	OPT("readahead=%s", readahead),
	OPT("prefetch_threads=%s", prefetch_threads),
	OPT("pfs_io=%s", pfs_io),
	OPT("shuffle=%s", shuffle),
	OPT("shuffle_window=%s", shuffle_window),
	OPT("seed=%s", seed),
	OPT("stage=%s", stage),
	OPT("peer_timeout=%u", peer_timeout),
	OPT("mpi", mpi),
	FUSE_OPT_END,
};

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct conf *c = data;
	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && !c->dataset) {
		c->dataset = strdup(arg);
		return 0;
	}
	if (key == FUSE_OPT_KEY_NONOPT && !c->mountpoint)
		c->mountpoint = strdup(arg);
	if (key == FUSE_OPT_KEY_OPT &&
	    (!strcmp(arg, "-h") || !strcmp(arg, "--help")))
		c->show_help = 1;
	return 1;
}

/*
 * FUSE workers: 2 per CPU, 4 to 64. The work per request is CPU and
 * wakeups, and loads wait on their own threads (read-ahead, peers), so
 * more workers than that only add context switches: on 2 CPUs,
 * tools/bench/epoch read epoch 2 from the NVMe tier 14% faster with 4
 * workers than with 16, and epoch 1 from the PFS as fast.
 */
static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned t = n > 0 ? 2 * (unsigned)n : 4;
	return t < 4 ? 4 : t > 64 ? 64 : t;
}

/* A whole decimal number. @return 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

static void usage(const char *prog)
{
	printf("usage: %s DATASET MOUNTPOINT [-f] [-d] [-s] [-o opt,...]\n"
	       "dlfs options:\n"
	       "    -o ram_cache=SIZE      RAM chunk cache (default 1G)\n"
	       "    -o max_threads=N       FUSE worker threads (default: 2 "
	       "per CPU, 4 to 64)\n"
	       "    -o cache_dir=DIR       node-local NVMe cache tier in DIR\n"
	       "    -o cache_size=SIZE     its bound (default: the dataset, "
	       "within 90%% of DIR's free space)\n"
	       "    -o cache_policy=keep|lru  admission/eviction (default "
	       "keep)\n"
	       "    -o readahead=SIZE      sequential read-ahead window, 0 = "
	       "off (default 64M)\n"
	       "    -o prefetch_threads=N  read-ahead threads (default 2)\n"
	       "    -o pfs_io=direct|buffered  container reads (default "
	       "direct)\n"
	       "    -o shuffle=global|chunked|local  epoch views' order "
	       "(default global)\n"
	       "    -o shuffle_window=N    chunks per window, chunked "
	       "(default 16)\n"
	       "    -o seed=N              epoch order seed (default: "
	       "random, see .dlfs/info)\n"
	       "    -o mpi                 join an MPI job even without a "
	       "launcher\n"
	       "    -o stage=none|home|all fill the NVMe tier in the "
	       "background\n"
	       "    -o peer_timeout=MS     wait for a peer, then the PFS "
	       "(default 5000)\n"
	       "See dlfs(1). FUSE options:\n",
	       prog);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = {0};
	struct conf conf = {0};
	struct dlfs_err err = {0};
	struct dlfs_ds *ds = NULL;
	struct fuse_session *se = NULL;
	struct fuse_loop_config *lc = NULL;
	struct dlfs_fs fs;
	int fs_ready = 0, ret = 1;
	uint64_t ram = UINT64_C(1) << 30;
	uint64_t v64 = 0;
	struct dlfs_fs_conf fsc = {
		.shuffle = DLFS_SHUFFLE_GLOBAL,
		.shuffle_window = 16,
		.cache_policy = DLFS_NVME_KEEP,
		.readahead = UINT64_C(64) << 20,
		.prefetch_threads = 2,
	};

	if (fuse_opt_parse(&args, &conf, dlfs_opts, opt_proc) < 0) {
		ret = 2;
		goto out;
	}
	/* libfuse would call a missing mountpoint a usage error. */
	struct stat st;
	if (conf.mountpoint && !conf.show_help && stat(conf.mountpoint, &st) < 0) {
		fprintf(stderr, "dlfs: mountpoint %s: %s\n", conf.mountpoint,
			strerror(errno));
		goto out;
	}
	if (fuse_parse_cmdline(&args, &cmd) != 0) {
		ret = 2;
		goto out;
	}
	if (cmd.show_help || conf.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out;
	}
	if (cmd.show_version) {
		printf("dlfs %s\n", DLFS_VERSION);
		fuse_lowlevel_version();
		ret = 0;
		goto out;
	}
	if (!conf.dataset || !cmd.mountpoint) {
		fprintf(stderr, "dlfs: usage: dlfs DATASET MOUNTPOINT [-f] "
				"[-o opt,...] (see dlfs --help)\n");
		ret = 2;
		goto out;
	}
	if (conf.ram_cache && dlfs_parse_size(conf.ram_cache, &ram)) {
		fprintf(stderr,
			"dlfs: -o ram_cache=%s: not a size (e.g. 512M, 4G)\n",
			conf.ram_cache);
		ret = 2;
		goto out;
	}

	if (conf.cache_size && (dlfs_parse_size(conf.cache_size, &fsc.cache_size) ||
				!fsc.cache_size)) {
		fprintf(stderr,
			"dlfs: -o cache_size=%s: not a size (e.g. 100G)\n",
			conf.cache_size);
		ret = 2;
		goto out;
	}
	if ((conf.cache_size || conf.cache_policy) && !conf.cache_dir) {
		fprintf(stderr, "dlfs: -o %s=%s: needs -o cache_dir=DIR\n",
			conf.cache_size ? "cache_size" : "cache_policy",
			conf.cache_size ? conf.cache_size : conf.cache_policy);
		ret = 2;
		goto out;
	}
	if (conf.cache_dir && !conf.cache_dir[0]) {
		fprintf(stderr, "dlfs: -o cache_dir=: empty path\n");
		ret = 2;
		goto out;
	}
	if (conf.cache_policy &&
	    dlfs_nvme_policy_parse(conf.cache_policy, &fsc.cache_policy)) {
		fprintf(stderr,
			"dlfs: -o cache_policy=%s: unknown policy (keep or "
			"lru)\n",
			conf.cache_policy);
		ret = 2;
		goto out;
	}
	if (conf.readahead && dlfs_parse_size(conf.readahead, &fsc.readahead)) {
		fprintf(stderr,
			"dlfs: -o readahead=%s: not a size (e.g. 64M, or 0 "
			"for none)\n",
			conf.readahead);
		ret = 2;
		goto out;
	}
	if (conf.prefetch_threads) {
		char *end;
		unsigned long v = strtoul(conf.prefetch_threads, &end, 10);
		if (!*conf.prefetch_threads || *end || v > 64) {
			fprintf(stderr,
				"dlfs: -o prefetch_threads=%s: not a number "
				"from 0 to 64\n",
				conf.prefetch_threads);
			ret = 2;
			goto out;
		}
		fsc.prefetch_threads = (unsigned)v;
	}
	if (conf.pfs_io && strcmp(conf.pfs_io, "buffered") &&
	    strcmp(conf.pfs_io, "direct")) {
		fprintf(stderr,
			"dlfs: -o pfs_io=%s: buffered or direct\n",
			conf.pfs_io);
		ret = 2;
		goto out;
	}
	/* O_DIRECT by default: measured faster by tools/bench/epoch. */
	fsc.pfs_direct = !conf.pfs_io || !strcmp(conf.pfs_io, "direct");
	if (conf.shuffle && dlfs_shuffle_parse(conf.shuffle, &fsc.shuffle)) {
		fprintf(stderr,
			"dlfs: -o shuffle=%s: global, chunked or local\n",
			conf.shuffle);
		ret = 2;
		goto out;
	}
	if (conf.shuffle_window &&
	    (parse_u64(conf.shuffle_window, &v64) || !v64 || v64 > 1u << 20)) {
		fprintf(stderr,
			"dlfs: -o shuffle_window=%s: a number of chunks from "
			"1 to 1048576\n",
			conf.shuffle_window);
		ret = 2;
		goto out;
	}
	if (conf.shuffle_window)
		fsc.shuffle_window = (uint32_t)v64;
	if (conf.seed && parse_u64(conf.seed, &fsc.seed)) {
		fprintf(stderr, "dlfs: -o seed=%s: a number\n", conf.seed);
		ret = 2;
		goto out;
	}
	fsc.seed_given = conf.seed != NULL;
	if (conf.stage && dlfs_stage_parse(conf.stage, &fsc.stage)) {
		fprintf(stderr, "dlfs: -o stage=%s: none, home or all\n",
			conf.stage);
		ret = 2;
		goto out;
	}
	if (fsc.stage != DLFS_STAGE_NONE && !conf.cache_dir) {
		fprintf(stderr,
			"dlfs: -o stage=%s: needs -o cache_dir=DIR (it fills "
			"the NVMe tier)\n",
			conf.stage);
		ret = 2;
		goto out;
	}
	fsc.mpi = conf.mpi;
	fsc.peer_timeout_ms = conf.peer_timeout ? conf.peer_timeout : 5000;
	if (!conf.seed && getrandom(&fsc.seed, sizeof(fsc.seed), 0) < 0)
		fsc.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	fsc.cache_dir = conf.cache_dir;

	if (stat(cmd.mountpoint, &st) < 0) {
		fprintf(stderr, "dlfs: mountpoint %s: %s\n", cmd.mountpoint,
			strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dlfs: mountpoint %s: not a directory\n",
			cmd.mountpoint);
		goto out;
	}
	if (dlfs_ds_open(conf.dataset, &ds, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		goto out;
	}
	dlfs_ds_set_chunk_io(ds, fsc.pfs_direct ? DLFS_CHUNK_IO_DIRECT
						: DLFS_CHUNK_IO_RANDOM);
	const struct dlfs_info *info = dlfs_ds_info(ds);
	if (ram < 2 * info->super.chunk_size) {
		fprintf(stderr,
			"dlfs: -o ram_cache=%s: must hold at least two chunks "
			"(%llu bytes)\n",
			conf.ram_cache,
			(unsigned long long)(2 * info->super.chunk_size));
		ret = 2;
		goto out;
	}
	/* Read every container's header now: a bad one is named at mount
	 * time, though only its own files will fail later. */
	for (uint32_t c = 0; c < info->super.n_containers; c++) {
		int fd;
		struct dlfs_err e = {0};
		if (dlfs_ds_container_fd(ds, c, &fd, &e))
			fprintf(stderr, "dlfs: warning: %s\n", e.msg);
	}
	fsc.ram_cache = ram;
	if (dlfs_fs_init(&fs, ds, &fsc, cmd.mountpoint, cmd.foreground, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		goto out;
	}
	fs_ready = 1;

	/* The dataset is immutable: mount read-only and let the kernel check
	 * permissions from the stored modes. */
	/* Name the mount after the dataset in /proc/mounts and df, when the
	 * path needs no escaping in an option list. */
	if (!strpbrk(conf.dataset, ",\\")) {
		char *fsname;
		if (asprintf(&fsname, "-ofsname=%s", conf.dataset) < 0) {
			fprintf(stderr, "dlfs: out of memory\n");
			goto out;
		}
		int bad = fuse_opt_insert_arg(&args, 1, fsname);
		free(fsname);
		if (bad) {
			fprintf(stderr, "dlfs: out of memory\n");
			goto out;
		}
	}
	if (fuse_opt_add_arg(&args, "-oro,default_permissions,subtype=dlfs")) {
		fprintf(stderr, "dlfs: out of memory\n");
		goto out;
	}
	se = fuse_session_new(&args, &dlfs_ll_ops, sizeof(dlfs_ll_ops), &fs);
	if (!se) {
		ret = 2; /* libfuse said which option it did not know */
		goto out;
	}
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, cmd.mountpoint) != 0) {
		fprintf(stderr, "dlfs: cannot mount on %s\n", cmd.mountpoint);
		goto out_signals;
	}
	/* Under an MPI launcher the launcher owns this process: stay in the
	 * foreground, and never fork once MPI is initialised. */
	if (fsc.mpi || dlfs_peer_launched())
		cmd.foreground = fs.foreground = 1;
	if (dlfs_fs_join(&fs, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		ret = 1;
		goto out_unmount;
	}
	if (!cmd.foreground)
		openlog("dlfs", LOG_PID, LOG_DAEMON);
	fuse_daemonize(cmd.foreground);
	/* Threads only now: they would not survive the fork above. */
	if (dlfs_fs_start(&fs, &err)) {
		dlfs_log(&fs, LOG_ERR, "%s", err.msg);
		goto out_unmount;
	}

	if (cmd.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc) {
			ret = 1;
			goto out_unmount;
		}
		fuse_loop_cfg_set_clone_fd(lc, cmd.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, conf.max_threads
							  ? conf.max_threads
							  : default_threads());
		if (cmd.max_idle_threads != UINT_MAX)
			fuse_loop_cfg_set_idle_threads(lc,
						       cmd.max_idle_threads);
		ret = fuse_session_loop_mt(se, lc);
	}
	/* libfuse returns the signal that ended the loop: a clean exit. */
	ret = (ret == 0 || ret == SIGTERM || ret == SIGINT || ret == SIGHUP)
		      ? 0
		      : 1;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	if (lc)
		fuse_loop_cfg_destroy(lc);
	if (se)
		fuse_session_destroy(se);
	if (fs_ready)
		dlfs_fs_destroy(&fs);
	dlfs_ds_close(ds);
	free(cmd.mountpoint);
	free(conf.dataset);
	free(conf.mountpoint);
	free(conf.ram_cache);
	free(conf.cache_dir);
	free(conf.cache_size);
	free(conf.cache_policy);
	free(conf.readahead);
	free(conf.prefetch_threads);
	free(conf.pfs_io);
	free(conf.shuffle);
	free(conf.shuffle_window);
	free(conf.seed);
	free(conf.stage);
	fuse_opt_free_args(&args);
	return ret;
}

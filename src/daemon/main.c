/*
 * dlfs: mount a packed dataset. Everything that can be checked is
 * checked before mounting; the command returns (without -f) only once
 * the mount is live, because the mount happens before daemonizing.
 */
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "fatal.h"
#include "fuse_ll.h"
#include "ixsrc.h"
#include "mounthint.h"
#include "mountpoint.h"
#include "opts.h"
#include "serve.h"
#include "users.h"

/*
 * FUSE workers: 2 per CPU, 4 to 64. The work per request is CPU and
 * wakeups, and loads wait on their own threads (background reads, peers),
 * so more workers than that only add context switches: on 2 CPUs,
 * tools/bench/epoch read epoch 2 from the NVMe tier 14% faster with 4
 * workers than with 16, and epoch 1 from the PFS as fast.
 */
static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned t = n > 0 ? 2 * (unsigned)n : 4;
	return t < 4 ? 4 : t > 64 ? 64 : t;
}

static void usage(const char *prog)
{
	printf("usage: %s DATASET MOUNTPOINT [-f] [-d] [-s] [-o opt,...]\n",
	       prog);
	dlfs_opts_usage();
	printf("See dlfs(1). FUSE options:\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* Check what can be checked before mounting. @return 0, or the exit
 * status after saying what is wrong. */
static int check_mountpoint(const char *mountpoint)
{
	struct stat st;
	if (stat(mountpoint, &st) < 0) {
		fprintf(stderr, "dlfs: mountpoint %s: %s\n", mountpoint,
			strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "dlfs: mountpoint %s: not a directory\n",
			mountpoint);
		return 1;
	}
	return 0;
}

/* A container cut short: said once, at mount time; each read that
 * fails on the cut is logged by the read core. */
static void warn_cut(struct dlfs_ds *ds, uint32_t c, uint64_t size)
{
	char name[DLFS_CONTAINER_NAME_MAX];
	dlfs_container_name(c, name);
	fprintf(stderr,
		"dlfs: warning: %s/%s: container is truncated: %llu bytes, "
		"the index says %llu; the files of its chunks past the cut "
		"will give EIO\n",
		dlfs_ds_path(ds), name, (unsigned long long)size,
		(unsigned long long)dlfs_ds_container(ds, c)->file_size);
}

/* What is checked of an opened dataset before it is served. @return 0,
 * 1 or 2 (the exit status), with a message. */
static int check_ds(const struct dlfs_opts *o, struct dlfs_ds *ds)
{
	struct dlfs_err err = {0};
	if (dlfs_ctl_name_check(ds, o->ctl_dir, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	dlfs_ds_set_chunk_io(ds, o->rd.pfs_direct ? DLFS_CHUNK_IO_DIRECT
						  : DLFS_CHUNK_IO_RANDOM);
	const struct dlfs_info *info = dlfs_ds_info(ds);
	if (o->rd.ram_cache < 2 * info->super.chunk_size) {
		fprintf(stderr,
			"dlfs: -o ram_cache=%llu: must hold at least two chunks "
			"(%llu bytes)\n",
			(unsigned long long)o->rd.ram_cache,
			(unsigned long long)(2 * info->super.chunk_size));
		return 2;
	}
	/* An in-place dataset whose archive is missing or changed is
	 * refused, by name (the read core refuses it too, but later). */
	if (dlfs_ds_check_archives(ds, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	/* Read every container's header now: a bad one is named at mount
	 * time, though only its own files will fail later (and of one cut
	 * short, only those of its chunks past the cut). */
	for (uint32_t c = 0; c < info->super.n_containers; c++) {
		int fd;
		uint64_t size;
		struct dlfs_err e = {0};
		if (dlfs_ds_container_fd(ds, c, &fd, &e))
			fprintf(stderr, "dlfs: warning: %s\n", e.msg);
		else if (dlfs_ds_container_cut(ds, c, &size))
			warn_cut(ds, c, size);
	}
	return 0;
}

/* Before mounting, alone: warnings go to the terminal. */
static void log_stderr(void *arg, int prio, const char *msg)
{
	(void)arg;
	(void)prio;
	fprintf(stderr, "dlfs: %s\n", msg);
}

static int check_before(const struct dlfs_opts *o, const char *mountpoint,
			struct dlfs_ds **ds, struct dlfs_ixsrc *ix)
{
	struct dlfs_err err = {0};
	int ret = check_mountpoint(mountpoint);
	if (ret)
		return ret;
	if (dlfs_ixsrc_open(o->dataset, o->rd.cache_dir, ix, ds, log_stderr,
			    NULL, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	return check_ds(o, *ds);
}

/* Read-only, permissions from the stored modes, and the mount named
 * after the dataset (when its path needs no escaping in an option list).
 * @return 0 or -ENOMEM. */
static int mount_args(struct fuse_args *args, const char *dataset)
{
	if (!strpbrk(dataset, ",\\")) {
		char *fsname;
		if (asprintf(&fsname, "-ofsname=%s", dataset) < 0)
			return -ENOMEM;
		int bad = fuse_opt_insert_arg(args, 1, fsname);
		free(fsname);
		if (bad)
			return -ENOMEM;
	}
	if (fuse_opt_add_arg(args, "-oro,default_permissions,subtype=dlfs"))
		return -ENOMEM;
	return 0;
}

static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *cmd,
		 const struct dlfs_opts *o)
{
	if (cmd->singlethread)
		return fuse_session_loop(se);
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	if (!lc)
		return 1;
	fuse_loop_cfg_set_clone_fd(lc, cmd->clone_fd);
	fuse_loop_cfg_set_max_threads(lc, o->max_threads ? o->max_threads
							 : default_threads());
	if (cmd->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(lc, cmd->max_idle_threads);
	int ret = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	return ret;
}

/*
 * dlfs(1) promises that SIGINT, SIGTERM and SIGHUP unmount. A job started
 * with '&' from a script inherits SIGINT ignored, and libfuse leaves an
 * ignored signal alone: give the three their default first, so that
 * fuse_set_signal_handlers takes them whatever was inherited.
 * @return 0, or 1 with a message.
 */
static int unignore_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		if (sigaction(sigs[i], NULL, &sa) < 0)
			goto fail;
		if (sa.sa_handler != SIG_IGN)
			continue;
		sa.sa_handler = SIG_DFL;
		if (sigaction(sigs[i], &sa, NULL) < 0)
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "dlfs: sigaction: %s\n", strerror(errno));
	return 1;
}

/* ---- dlfs DATASET --serve SOCKET: the preload front end ---- */

struct serve_args {
	const char *socket;
	int ready_fd;      /* -1: none */
	const char *users; /* --users KEY, or NULL */
};

/*
 * Take --serve SOCKET and --ready-fd N out of argv (argc updated).
 * @return 1 when --serve was given, 0 when not, or 2 after a message.
 */
static int take_serve_args(int *argc, char **argv, struct serve_args *sa)
{
	int out = 1, serve = 0;
	sa->socket = NULL;
	sa->ready_fd = -1;
	sa->users = NULL;
	for (int i = 1; i < *argc; i++) {
		int is_serve = !strcmp(argv[i], "--serve");
		int is_users = !strcmp(argv[i], "--users");
		if (!is_serve && !is_users && strcmp(argv[i], "--ready-fd")) {
			argv[out++] = argv[i];
			continue;
		}
		if (i + 1 >= *argc) {
			fprintf(stderr, "dlfs: %s needs a value\n", argv[i]);
			return 2;
		}
		char *end;
		if (is_serve) {
			sa->socket = argv[++i];
			serve = 1;
		} else if (is_users) {
			sa->users = argv[++i];
		} else if ((sa->ready_fd = (int)strtol(argv[++i], &end, 10)) <
				   0 ||
			   *end || end == argv[i]) {
			fprintf(stderr, "dlfs: --ready-fd %s: not a descriptor\n",
				argv[i]);
			return 2;
		}
	}
	argv[out] = NULL;
	*argc = out;
	if (!serve && (sa->ready_fd >= 0 || sa->users)) {
		fprintf(stderr, "dlfs: %s needs --serve\n",
			sa->users ? "--users" : "--ready-fd");
		return 2;
	}
	return serve;
}

/* SIGINT, SIGTERM and SIGHUP blocked in every thread, for the server's
 * signalfd. @return 0, or 1 with a message. */
static int block_end_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	int ret = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (ret)
		fprintf(stderr, "dlfs: pthread_sigmask: %s\n", strerror(ret));
	return ret ? 1 : 0;
}

/* Serve fs on the socket until a signal ends it. @return the exit
 * status. */
static int serve_socket(struct dlfs_fs *fs, const struct serve_args *sa,
			struct dlfs_users *users)
{
	struct dlfs_err err = {0};
	struct dlfs_serve *srv = NULL;
	if (dlfs_fs_start(fs, &err) ||
	    dlfs_serve_open(fs, sa->socket, &srv, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	if (sa->ready_fd >= 0) {
		ssize_t w = write(sa->ready_fd, "ready\n", 6);
		(void)w; /* a launcher that went away learns nothing */
		close(sa->ready_fd);
	}
	int ret = dlfs_serve_run(srv, users, &err);
	if (ret)
		fprintf(stderr, "dlfs: %s\n", err.msg);
	dlfs_serve_close(srv);
	return ret ? 1 : 0;
}

static int serve_main(int argc, char **argv, const struct serve_args *sa)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct dlfs_opts o;
	struct dlfs_err err = {0};
	struct dlfs_ds *ds = NULL;
	struct dlfs_ixsrc ix = {0};
	struct dlfs_users *users = NULL;
	struct dlfs_fs fs;
	memset(&fs, 0, sizeof(fs));
	int ret = dlfs_opts_parse(&args, &o);
	if (ret == 1) {
		usage(argv[0]);
		ret = 0;
	}
	if (ret)
		goto out;
	ret = 2;
	if (!o.dataset || o.mountpoint || args.argc > 1) {
		fprintf(stderr, "dlfs: usage: dlfs DATASET --serve SOCKET "
				"[--ready-fd N] [-o opt,...] (see dlfs(1))\n");
		goto out;
	}
	ret = 1;
	if (o.mpi || dlfs_launch_size() > 1) {
		fprintf(stderr, "dlfs: --serve runs alone: MPI peers need the "
				"FUSE mount\n");
		goto out;
	}
	/* Before anything of the dataset's: a server of the same key that
	 * is still ending holds its NVMe tier. */
	if (sa->users && dlfs_users_open(sa->users, &users, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		goto out;
	}
	if (block_end_signals() ||
	    dlfs_ixsrc_open(o.dataset, o.rd.cache_dir, &ix, &ds, log_stderr,
			    NULL, &err)) {
		if (err.code)
			fprintf(stderr, "dlfs: %s\n", err.msg);
		goto out;
	}
	if ((ret = check_ds(&o, ds)))
		goto out;
	ret = 1;
	if (dlfs_fs_init(&fs, ds, &o, NULL, 1, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		goto out;
	}
	fs.ix = ix;
	fs.socket = sa->socket;
	ix.path = NULL;
	dlfs_fatal_install(o.dataset, sa->socket, 1);
	ret = serve_socket(&fs, sa, users);
	dlfs_fs_destroy(&fs);
	dlfs_ixsrc_free(&fs.ix);
out:
	dlfs_ds_close(ds);
	dlfs_ixsrc_free(&ix);
	dlfs_opts_free(&o);
	fuse_opt_free_args(&args);
	dlfs_users_close(users); /* last: a new server may start now */
	return ret;
}

/*
 * The command line: dlfs's options, then libfuse's, each refused with one
 * line; --help and --version answered. @return -1 to go on and mount, or
 * the exit status (0: help or version given, 1, 2: a usage error).
 */
static int parse_cmdline(struct fuse_args *args, struct dlfs_opts *o,
			 struct fuse_cmdline_opts *cmd, const char *argv0)
{
	struct dlfs_err err = {0};
	struct stat st;
	int ret = dlfs_opts_parse(args, o);
	if (ret == 2)
		return 2;
	if (!ret && o->mountpoint &&
	    dlfs_mountpoint_prepare(o->mountpoint, o->nonempty, stderr, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	/* libfuse would call a missing mountpoint a usage error. */
	if (!ret && o->mountpoint && stat(o->mountpoint, &st) < 0) {
		fprintf(stderr, "dlfs: mountpoint %s: %s\n", o->mountpoint,
			strerror(errno));
		return 1;
	}
	if (fuse_parse_cmdline(args, cmd) != 0)
		return 2;
	if (ret == 1 || cmd->show_help) {
		usage(argv0);
		return 0;
	}
	if (cmd->show_version) {
		char mpi[256];
		dlfs_peer_mpi_library(mpi, sizeof(mpi));
		printf("dlfs %s\nMPI library: %s\n", DLFS_VERSION, mpi);
		fuse_lowlevel_version();
		return 0;
	}
	if (!o->dataset || !cmd->mountpoint) {
		fprintf(stderr, "dlfs: usage: dlfs DATASET MOUNTPOINT [-f] "
				"[-o opt,...] (see dlfs --help)\n");
		return 2;
	}
	return -1;
}

/* The fs as far as it is made before mounting: whole, or, when the index
 * comes while joining (share), only what the FUSE session needs. The fs
 * takes ix's path. @return 0, or 1 after saying why. */
static int fs_before_mount(struct dlfs_fs *fs, const struct dlfs_opts *o,
			   int share, struct dlfs_ds *ds,
			   struct dlfs_ixsrc *ix,
			   const struct fuse_cmdline_opts *cmd, int *fs_ready)
{
	struct dlfs_err err = {0};
	if (share) {
		memset(fs, 0, sizeof(*fs));
		fs->opts = o;
		fs->foreground = 1;
		return 0;
	}
	if (dlfs_fs_init(fs, ds, o, cmd->mountpoint, cmd->foreground, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	*fs_ready = 1;
	fs->ix = *ix;
	ix->path = NULL;
	return 0;
}

/* Why the mount failed: what of what a mount needs is missing. */
static void say_why_not_mounted(const char *mountpoint,
				const char *allow_other)
{
	struct dlfs_mount_env env;
	fprintf(stderr, "dlfs: cannot mount on %s\n", mountpoint);
	dlfs_mount_env_default(&env);
	dlfs_mount_hints(&env, mountpoint, allow_other, stderr);
}

/*
 * Join the job's other ranks (alone: none). With seal (a sealed dataset
 * under MPI), the index comes while joining: *ds is opened and the fs
 * made now. @return 0, or the exit status after saying why.
 */
static int join_job(struct dlfs_fs *fs, const struct dlfs_opts *o,
		    const struct dlfs_seal *seal, struct dlfs_ixsrc *ix,
		    struct dlfs_ds **ds, const char *mountpoint, int *fs_ready)
{
	struct dlfs_err err = {0};
	struct dlfs_peer *peer;
	if (!seal) {
		if (!dlfs_fs_join(fs, &err))
			return 0;
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	if (dlfs_fs_join_index(fs, seal, &peer, ix, ds, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		return 1;
	}
	int bad = check_ds(o, *ds);
	if (!bad && dlfs_fs_init(fs, *ds, o, mountpoint, 1, &err)) {
		fprintf(stderr, "dlfs: %s\n", err.msg);
		bad = 1;
	}
	if (bad) {
		dlfs_peer_close(peer);
		return bad;
	}
	*fs_ready = 1;
	fs->ix = *ix;
	ix->path = NULL;
	dlfs_fs_attach_peer(fs, peer);
	return 0;
}

/* Mounted and joined: go to the background (unless -f), start the fs's
 * threads and answer FUSE until the end. @return the exit status. */
static int run_mounted(struct fuse_session *se, struct fuse_cmdline_opts *cmd,
		       const struct dlfs_opts *o, struct dlfs_fs *fs)
{
	struct dlfs_err err = {0};
	if (!cmd->foreground)
		openlog("dlfs", LOG_PID, LOG_DAEMON);
	fuse_daemonize(cmd->foreground);
	dlfs_fatal_install(o->dataset, cmd->mountpoint, cmd->foreground);
	/* Threads only now: they would not survive the fork above. */
	if (dlfs_fs_start(fs, &err)) {
		dlfs_fs_log(fs, LOG_ERR, err.msg);
		return 1;
	}
	int ret = serve(se, cmd, o);
	/* libfuse returns the signal that ended the loop: a clean exit. */
	return (ret == 0 || ret == SIGTERM || ret == SIGINT || ret == SIGHUP)
		       ? 0
		       : 1;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = {0};
	struct dlfs_opts o;
	struct dlfs_ds *ds = NULL;
	struct fuse_session *se = NULL;
	struct dlfs_fs fs;
	struct dlfs_ixsrc ix = {0};
	int fs_ready = 0, ret;

	memset(&fs, 0, sizeof(fs));

	struct serve_args sa;
	if ((ret = take_serve_args(&argc, argv, &sa)) == 2)
		return 2;
	if (ret)
		return serve_main(argc, argv, &sa);
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	if ((ret = parse_cmdline(&args, &o, &cmd, argv[0])) >= 0)
		goto out;
	/* Under MPI a sealed dataset's index comes while joining, after
	 * the mount (ixsrc.h): only the mountpoint is checked before. */
	int mpi = o.mpi || dlfs_launch_size() > 1;
	struct dlfs_seal seal;
	int share = mpi && dlfs_seal_read(o.dataset, &seal, NULL) == 0;
	if ((ret = share ? check_mountpoint(cmd.mountpoint)
			 : check_before(&o, cmd.mountpoint, &ds, &ix)))
		goto out;
	ret = 1;
	if (fs_before_mount(&fs, &o, share, ds, &ix, &cmd, &fs_ready))
		goto out;
	if (mount_args(&args, o.dataset)) {
		fprintf(stderr, "dlfs: out of memory\n");
		goto out;
	}
	se = fuse_session_new(&args, &dlfs_ll_ops, sizeof(dlfs_ll_ops), &fs);
	if (!se) {
		ret = 2; /* libfuse said which option it did not know */
		goto out;
	}
	if (unignore_signals() || fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, cmd.mountpoint) != 0) {
		say_why_not_mounted(cmd.mountpoint, o.allow_other);
		goto out_signals;
	}
	/* Under an MPI launcher the launcher owns this process: stay in the
	 * foreground, and never fork once MPI is initialised. */
	if (mpi)
		cmd.foreground = fs.foreground = 1;
	if ((ret = join_job(&fs, &o, share ? &seal : NULL, &ix, &ds,
			    cmd.mountpoint, &fs_ready)))
		goto out_unmount;
	ret = 1;
	ret = run_mounted(se, &cmd, &o, &fs);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	if (fs_ready)
		dlfs_fs_destroy(&fs);
	dlfs_ds_close(ds);
	dlfs_ixsrc_free(&ix);
	dlfs_ixsrc_free(&fs.ix);
	free(cmd.mountpoint);
	dlfs_opts_free(&o);
	fuse_opt_free_args(&args);
	return ret;
}

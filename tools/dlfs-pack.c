/* dlfs-pack: build a dataset from directories and archives. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dlfs/dataset.h"
#include "dlfs/pack.h"
#include "pack_comm.h"
#include "progress.h"

#define PROG "dlfs-pack"

static volatile sig_atomic_t cancelled;

static void on_signal(int sig)
{
	(void)sig;
	cancelled = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " SOURCE... -o OUT.dlfs [options]\n"
		"  SOURCE is a directory, an archive (tar, tar.gz, ...), an "
		"HDF5 file\n"
		"  (with --split-hdf5) or an LMDB environment (with "
		"--split-lmdb)\n"
		"  -o, --output OUT        the dataset directory to create\n"
		"      --chunk-size SIZE   unit of I/O and caching (4M)\n"
		"      --container-size SIZE  soft size of a container (4G)\n"
		"      --align N           alignment of each file (1)\n"
		"      --order ORDER       sorted|input|size|shuffle[:SEED]\n"
		"      --threads N         files read, and chunks compressed, "
		"in parallel (8)\n"
		"      --compress zstd[:LEVEL]|none  compress each chunk "
		"(level 3; 1 to 22);\n"
		"                          default: zstd with --split-hdf5, "
		"else none\n"
		"  -f, --force             replace an existing dataset\n"
		"  -q, --quiet             no progress or summary\n"
		"      --skip-errors       leave out unreadable files, with "
		"a warning\n"
		"      --split-hdf5[=DSET,...]  HDF5 files: one file per "
		"sample per dataset\n"
		"      --split-hdf5-min SIZE  by default, a dataset whose "
		"samples are smaller\n"
		"                          stays one file, DSET.npy (1K; 0: "
		"split all)\n"
		"      --sample-format npy|h5   what a split sample becomes "
		"(npy)\n"
		"      --split-lmdb        LMDB environments: one file per "
		"key\n"
		"      --procs N           processes reading HDF5/LMDB "
		"sources, or threads\n"
		"                          indexing archives --in-place "
		"(one per CPU)\n"
		"      --dry-run           list what would be packed; write "
		"nothing\n"
		"      --in-place          index uncompressed tar and zip "
		"archives where\n"
		"                          they are: OUT holds the index "
		"alone, no copy\n"
		"  Under mpirun/srun the ranks pack one dataset together.\n"
		"  -h, --help  -V, --version\n"
		"See dlfs-pack(1).\n");
}

struct ui {
	int tty, quiet;
	double start;
	int drew;
};

static void on_warn(void *arg, const char *msg)
{
	struct ui *ui = arg;
	if (ui->drew) {
		fputs("\r\033[K", stderr);
		ui->drew = 0;
	}
	fprintf(stderr, PROG ": %s\n", msg);
}

static void on_progress(void *arg, const struct dlfs_pack_progress *p)
{
	struct ui *ui = arg;
	if (!ui->tty || ui->quiet)
		return;
	double el = dlfs_progress_now() - ui->start;
	char done[32], total[32], rate[32], eta[32] = "?";
	dlfs_progress_size((double)p->bytes_done, done, sizeof(done));
	dlfs_progress_size((double)p->bytes_total, total, sizeof(total));
	double r = el > 0 ? (double)p->bytes_done / el : 0;
	dlfs_progress_size(r, rate, sizeof(rate));
	if (r > 0 && p->bytes_total >= p->bytes_done) {
		double s = (double)(p->bytes_total - p->bytes_done) / r;
		snprintf(eta, sizeof(eta), "%d:%02d", (int)s / 60, (int)s % 60);
	}
	if (!strcmp(p->phase, "scan") && p->bytes_total) /* --in-place */
		fprintf(stderr,
			"\r\033[K" PROG ": indexing: %llu files, %s/%s, %s/s, "
			"ETA %s",
			(unsigned long long)p->files_done, done, total, rate,
			eta);
	else if (!strcmp(p->phase, "scan"))
		fprintf(stderr, "\r\033[K" PROG ": scanning sources...");
	else if (!strcmp(p->phase, "ingest"))
		fprintf(stderr,
			"\r\033[K" PROG ": ingest: %llu/%llu sources, %s "
			"written, %s/s",
			(unsigned long long)p->files_done,
			(unsigned long long)p->files_total, done, rate);
	else if (!strcmp(p->phase, "index"))
		fprintf(stderr, "\r\033[K" PROG ": writing the index...");
	else
		fprintf(stderr,
			"\r\033[K" PROG ": %llu/%llu files, %s/%s, %s/s, "
			"ETA %s",
			(unsigned long long)p->files_done,
			(unsigned long long)p->files_total, done, total, rate,
			eta);
	ui->drew = 1;
}

/*
 * A file never straddles a chunk (dlfs-pack(1), LAYOUT): files just over
 * a fraction of a chunk (1 MiB + a header in 4 MiB chunks) leave much of
 * each chunk as zeros, which the PFS then serves. Say so when that is
 * over a tenth of the file bytes of an uncompressed dataset (compression
 * stores the zeros in a few bytes) and more than a chunk.
 */
#define PAD_NOTE_SHARE 10 /* percent of the file bytes */
static void padding_note(const struct dlfs_ds *ds)
{
	const struct dlfs_info *in = dlfs_ds_info(ds);
	const struct dlfs_super_rec *s = &in->super;
	if (dlfs_stored_apart(s->features) || !s->total_file_bytes)
		return;
	uint64_t data = 0;
	for (uint32_t c = 0; c < s->n_containers; c++)
		data += dlfs_ds_container(ds, c)->data_size;
	if (data <= s->total_file_bytes)
		return;
	uint64_t pad = data - s->total_file_bytes;
	if (pad <= s->chunk_size ||
	    pad * 100 <= s->total_file_bytes * PAD_NOTE_SHARE)
		return;
	char b[32], cs[32];
	dlfs_progress_size((double)pad, b, sizeof(b));
	dlfs_progress_size((double)s->chunk_size, cs, sizeof(cs));
	fprintf(stderr,
		PROG ": note: %s of the containers (%.0f%% of the file bytes) "
		"is padding: a file never straddles a chunk, and these files "
		"fill %s chunks badly. The PFS reads it with the files; a "
		"larger --chunk-size or --compress zstd leaves less "
		"(dlfs-pack(1), LAYOUT)\n",
		b, 100.0 * (double)pad / (double)s->total_file_bytes, cs);
}

static void summary(const char *out, double secs)
{
	struct dlfs_ds *ds;
	struct dlfs_err err = {0};
	if (dlfs_ds_open(out, &ds, &err)) {
		fprintf(stderr, PROG ": wrote %s, but cannot reopen it: %s\n",
			out, err.msg);
		return;
	}
	const struct dlfs_info *in = dlfs_ds_info(ds);
	const struct dlfs_super_rec *s = &in->super;
	char bytes[32], rate[32];
	dlfs_progress_size((double)s->total_file_bytes, bytes, sizeof(bytes));
	dlfs_progress_size(secs > 0 ? (double)s->total_file_bytes / secs : 0, rate,
	      sizeof(rate));
	fprintf(stderr,
		PROG ": wrote %s: %llu files (%s), %llu directories, %llu "
		"symlinks in %llu %s; index %llu bytes (%.1f per "
		"entry); %.1f s, %s/s\n",
		out, (unsigned long long)s->n_files, bytes,
		(unsigned long long)s->n_dirs,
		(unsigned long long)s->n_symlinks,
		(unsigned long long)s->n_containers,
		s->features & DLFS_FEATURE(IN_PLACE) ? "archives, in place"
						     : "containers",
		(unsigned long long)in->index_bytes,
		(double)in->index_bytes / (double)s->n_inodes, secs, rate);
	padding_note(ds);
	dlfs_ds_close(ds);
}

/* A path for a listing: bytes that could forge a line become \xNN. */
static void put_path(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			printf("\\x%02x", *p);
		else
			putchar(*p);
}

struct plan_sum {
	unsigned long long files, bytes;
};

static int on_plan(void *arg, const struct dlfs_plan_item *it)
{
	struct plan_sum *sum = arg;
	if (!it->path) {
		printf("# ");
		put_path(it->source);
		printf(": %s\n", it->note);
	} else {
		printf("%12llu  ", (unsigned long long)it->size);
		put_path(it->path);
		putchar('\n');
		sum->files++;
		sum->bytes += it->size;
	}
	return ferror(stdout) ? -EIO : 0;
}

static int dry_run(char **srcs, unsigned n, const struct dlfs_pack_opts *o)
{
	struct plan_sum sum = {0};
	struct dlfs_err err = {0};
	int ret = dlfs_pack_dry_run((const char *const *)srcs, n, o, on_plan,
				    &sum, &err);
	if (!ret)
		printf("# total: %llu files, %llu bytes from HDF5 and LMDB "
		       "sources\n",
		       sum.files, sum.bytes);
	if (fflush(stdout) != 0 && !ret) {
		ret = -EIO;
		snprintf(err.msg, sizeof(err.msg), "standard output: %s",
			 strerror(errno));
	}
	if (ret) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	return 0;
}

enum {
	O_CHUNK = 256,
	O_CONT,
	O_ALIGN,
	O_ORDER,
	O_THREADS,
	O_SKIP,
	O_SPLIT_HDF5,
	O_SAMPLE_FORMAT,
	O_SPLIT_MIN,
	O_SPLIT_LMDB,
	O_PROCS,
	O_DRY_RUN,
	O_COMPRESS,
	O_IN_PLACE,
};

static const struct option long_opts[] = {
	{"output", required_argument, NULL, 'o'},
	{"chunk-size", required_argument, NULL, O_CHUNK},
	{"container-size", required_argument, NULL, O_CONT},
	{"align", required_argument, NULL, O_ALIGN},
	{"order", required_argument, NULL, O_ORDER},
	{"threads", required_argument, NULL, O_THREADS},
	{"force", no_argument, NULL, 'f'},
	{"quiet", no_argument, NULL, 'q'},
	{"skip-errors", no_argument, NULL, O_SKIP},
	{"split-hdf5", optional_argument, NULL, O_SPLIT_HDF5},
	{"sample-format", required_argument, NULL, O_SAMPLE_FORMAT},
	{"split-hdf5-min", required_argument, NULL, O_SPLIT_MIN},
	{"split-lmdb", no_argument, NULL, O_SPLIT_LMDB},
	{"procs", required_argument, NULL, O_PROCS},
	{"dry-run", no_argument, NULL, O_DRY_RUN},
	{"compress", required_argument, NULL, O_COMPRESS},
	{"in-place", no_argument, NULL, O_IN_PLACE},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{0},
};

/* What the command line asks for besides the sources (argv + optind). */
struct cli {
	struct dlfs_pack_opts o;
	const char *out;
	int dry, quiet;
	char **argv; /* for the messages of bad options */
};

/* An option handler's "no exit yet": any other value is main's status. */
#define GO_ON -1

/* --chunk-size, --container-size and --align: a size with a suffix. */
static int opt_size(int c, const char *arg, struct dlfs_pack_opts *o)
{
	uint64_t v;
	if (dlfs_parse_size(arg, &v)) {
		fprintf(stderr,
			PROG ": %s '%s': not a size (e.g. "
			"4096, 64K, 4M, 1G)\n",
			c == O_CHUNK	   ? "--chunk-size"
			: c == O_CONT	   ? "--container-size"
			: c == O_SPLIT_MIN ? "--split-hdf5-min"
					   : "--align",
			arg);
		return 2;
	}
	if (c == O_CHUNK)
		o->chunk_size = v;
	else if (c == O_CONT)
		o->container_size = v;
	else if (c == O_SPLIT_MIN)
		o->hdf5_split_min = v;
	else
		o->align = v;
	return GO_ON;
}

/* --threads and --procs: a count from 1 to max. */
static int opt_count(const char *name, const char *arg, long max,
		     unsigned *out)
{
	char *end;
	long t = strtol(arg, &end, 10);
	if (*end || t < 1 || t > max) {
		fprintf(stderr,
			PROG ": %s '%s': expected a number from 1 to %ld\n",
			name, arg, max);
		return 2;
	}
	*out = (unsigned)t;
	return GO_ON;
}

/* --order: sorted, input, size or shuffle with a seed. */
static int opt_order(const char *arg, struct dlfs_pack_opts *o)
{
	if (dlfs_parse_order(arg, &o->order, &o->seed)) {
		fprintf(stderr,
			PROG ": --order '%s': expected "
			"sorted, input, size or "
			"shuffle[:SEED]\n",
			arg);
		return 2;
	}
	return GO_ON;
}

/* --compress: the codec and its level. */
static int opt_compress(const char *arg, struct dlfs_pack_opts *o)
{
	if (dlfs_parse_compress(arg, &o->compress, &o->compress_level)) {
		fprintf(stderr,
			PROG ": --compress '%s': expected zstd, "
			"zstd:LEVEL (LEVEL from 1 to %d) or none\n",
			arg, DLFS_ZSTD_LEVEL_MAX);
		return 2;
	}
	return GO_ON;
}

/* --sample-format: what a split HDF5 or LMDB sample becomes. */
static int opt_sample_format(const char *arg, struct dlfs_pack_opts *o)
{
	if (dlfs_parse_sample_format(arg, &o->sample_format)) {
		fprintf(stderr,
			PROG ": --sample-format '%s': "
			"expected npy or h5\n",
			arg);
		return 2;
	}
	return GO_ON;
}

/* An option getopt_long did not take (c is '?' or ':'): say which, and
 * what a misspelt one was meant to be. @return 2. */
static int bad_option(int c, struct cli *cl)
{
	const char *arg = cl->argv[optind - 1];
	int is_long = !strncmp(arg, "--", 2);
	if (c == ':' || !is_long) {
		if (c == ':')
			fprintf(stderr, PROG ": %s needs a value\n", arg);
		else
			fprintf(stderr, PROG ": unknown option -%c\n", optopt);
	} else {
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg + 2, "="),
			 arg + 2);
		const char *names[sizeof(long_opts) / sizeof(long_opts[0])];
		size_t n = 0;
		for (; long_opts[n].name; n++)
			names[n] = long_opts[n].name;
		const char *near = dlfs_closest(name, names, n);
		if (near)
			fprintf(stderr, PROG ": unknown option --%s: did you mean "
					    "--%s?\n", name, near);
		else
			fprintf(stderr, PROG ": unknown option --%s\n", name);
	}
	fprintf(stderr, "See " PROG " --help.\n");
	return 2;
}

/* One option from getopt_long. @return GO_ON, or the status to exit with
 * (help and version end the command line there, as does a bad value). */
static int on_option(int c, const char *arg, struct cli *cl)
{
	struct dlfs_pack_opts *o = &cl->o;
	switch (c) {
	case 'o':
		cl->out = arg;
		return GO_ON;
	case O_CHUNK:
	case O_CONT:
	case O_ALIGN:
	case O_SPLIT_MIN:
		return opt_size(c, arg, o);
	case O_ORDER:
		return opt_order(arg, o);
	case O_SAMPLE_FORMAT:
		return opt_sample_format(arg, o);
	case O_COMPRESS:
		return opt_compress(arg, o);
	case O_THREADS:
		return opt_count("--threads", arg, 1024, &o->threads);
	case O_PROCS:
		return opt_count("--procs", arg, 256, &o->procs);
	case 'f':
		o->force = 1;
		return GO_ON;
	case 'q':
		cl->quiet = 1;
		return GO_ON;
	case O_SKIP:
		o->skip_errors = 1;
		return GO_ON;
	case O_SPLIT_HDF5:
		o->split_hdf5 = 1;
		o->hdf5_datasets = arg;
		return GO_ON;
	case O_SPLIT_LMDB:
		o->split_lmdb = 1;
		return GO_ON;
	case O_DRY_RUN:
		cl->dry = 1;
		return GO_ON;
	case O_IN_PLACE:
		o->in_place = 1;
		return GO_ON;
	case 'h':
		usage(stdout);
		return 0;
	case 'V':
		printf(PROG " %s\n", DLFS_VERSION);
		return 0;
	default:
		return bad_option(c, cl);
	}
}

/* The command line into cl, then checked: sources and an output are
 * there, and the options agree. @return GO_ON or the status to exit with. */
static int parse_args(int argc, char **argv, struct cli *cl)
{
	int c, st;
	*cl = (struct cli){0};
	dlfs_pack_opts_init(&cl->o);
	cl->argv = argv;
	opterr = 0; /* bad_option says it, with what was meant */
	while ((c = getopt_long(argc, argv, ":o:fqhV", long_opts, NULL)) != -1)
		if ((st = on_option(c, optarg, cl)) != GO_ON)
			return st;
	if ((!cl->out && !cl->dry) || optind >= argc) {
		fprintf(stderr, PROG ": %s\n",
			optind >= argc ? "no SOURCE given"
				       : "no output given (-o OUT.dlfs)");
		usage(stderr);
		return 2;
	}
	struct dlfs_err err = {0};
	if (dlfs_pack_opts_check(&cl->o, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	return GO_ON;
}

/* Several processes of one launch pack one dataset together: join the
 * job, if there is one, and let rank 0 alone speak for it. @return the
 * rank (0 alone), or -1 when the launch cannot be joined (said here). */
static int join_job(int *argc, char ***argv, struct dlfs_pack_comm *comm,
		    int *joined, struct cli *cl)
{
	char msg[512];
	*joined = 0;
	if (pack_comm_init(argc, argv, comm, joined, msg, sizeof(msg))) {
		fprintf(stderr, PROG ": %s\n", msg);
		return -1;
	}
	if (!*joined)
		return 0;
	cl->o.comm = comm;
	if (comm->rank) /* rank 0 speaks for the job */
		cl->quiet = 1;
	return comm->rank;
}

/* Signals cancel the pack; its warnings and progress go to the terminal. */
static void hook_ui(struct dlfs_pack_opts *o, struct ui *ui)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	o->cancel = &cancelled;
	o->warn = on_warn;
	o->note = ui->quiet ? NULL : on_warn;
	o->progress = on_progress;
	o->cb_arg = ui;
	o->creator = PROG " " DLFS_VERSION;
	ui->start = dlfs_progress_now();
}

/* Pack, and on failure say why (rank 0 only). @return the exit status. */
static int pack(char **srcs, unsigned n, const struct cli *cl,
		struct ui *ui, int rank)
{
	struct dlfs_err err = {0};
	int ret = dlfs_pack((const char *const *)srcs, n, cl->out, &cl->o,
			    &err);
	if (ui->drew)
		fputs("\r\033[K", stderr);
	/* Every rank has the message and rank 0 prints it, before leaving
	 * the job: a launcher may kill the job as soon as any rank exits
	 * non-zero, and pack_comm_fini lets no rank leave before all have
	 * come to it. */
	if (ret && rank == 0) {
		if (ret == -ECANCELED && cancelled)
			fprintf(stderr, PROG ": interrupted; %s not created\n",
				cl->out);
		else
			fprintf(stderr, PROG ": %s\n", err.msg);
		fflush(stderr);
	}
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct cli cl;
	struct ui ui = {.tty = isatty(2)};
	int st = parse_args(argc, argv, &cl);
	if (st != GO_ON)
		return st;

	struct dlfs_pack_comm comm;
	int joined, rank = join_job(&argc, &argv, &comm, &joined, &cl);
	if (rank < 0)
		return 1;
	ui.quiet = cl.quiet;
	char **srcs = argv + optind;
	unsigned n = (unsigned)(argc - optind);
	if (cl.dry) {
		st = rank == 0 ? dry_run(srcs, n, &cl.o) : 0;
	} else {
		hook_ui(&cl.o, &ui);
		st = pack(srcs, n, &cl, &ui, rank);
	}
	if (joined)
		pack_comm_fini(&comm);
	if (!st && !cl.dry && !ui.quiet)
		summary(cl.out, dlfs_progress_now() - ui.start);
	return st;
}

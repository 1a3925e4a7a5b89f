/*
 * In-place indexing in parallel (src/pack/inplace_par.c, inplace_part.c):
 * tar archives written here, indexed by dlfs_pack with 1, 3 and 8
 * workers.
 *  - the index and its seal are byte-identical whatever the number of
 *    workers (more workers than archives included);
 *  - the progress reports (phase "scan") come from the calling thread,
 *    never go back, and end at every archive byte and every regular
 *    member: the old one-by-one scan reported "scan" once, with nothing
 *    done, so this fails against it;
 *  - warnings (special members skipped) come from the calling thread in
 *    archive order, the same with any number of workers: workers calling
 *    o->warn themselves fails it;
 *  - with two damaged archives, the error names the first in archive
 *    order, as one worker gives, though the later one fails first (at
 *    once; the earlier one 50 MiB into it): a worker's failure that
 *    stopped the others fails it.
 *  - a worker with a sink hands its part over in pieces of about
 *    PK_IP_PIECE bytes as it reads, whose bytes in order are the part it
 *    makes without one: a part handed over whole at the end fails it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlfs/pack.h"
#include "inplace_part.h"
#include "tutil.h"

#define NARC 5

/* One ustar header for name (type t, size bytes), written to f. */
static void tar_header(FILE *f, const char *name, char t, uint64_t size)
{
	unsigned char h[512] = {0};
	unsigned sum = 0;
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", t == '5' ? 0755 : 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	snprintf((char *)h + 136, 12, "%011o", 1700000000);
	h[156] = (unsigned char)t;
	if (t == '3')
		memcpy(h + 329, "0000001", 7); /* devmajor */
	memcpy(h + 257, "ustar", 6);           /* the magic, with its NUL */
	memcpy(h + 263, "00", 2);              /* the version */
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	fwrite(h, 1, 512, f);
}

/* A regular member of size bytes of seeded data. */
static void tar_file(FILE *f, const char *name, size_t size, uint32_t seed)
{
	uint8_t *b = calloc(size + 512, 1);
	CHECK(b != NULL);
	t_fill(b, size, seed);
	tar_header(f, name, '0', size);
	fwrite(b, 1, (size + 511) / 512 * 512, f);
	free(b);
}

/* Archive k: a directory of files (archive 0 the largest, several
 * chunks' worth), a char device in archives 1 and 3, the end blocks.
 * @return the regular members written. */
static unsigned make_tar(const char *path, int k)
{
	FILE *f = fopen(path, "wb");
	char name[64], zero[1024] = {0};
	unsigned n = k == 0 ? 300 : 20 + 7 * (unsigned)k;
	CHECK(f != NULL);
	snprintf(name, sizeof(name), "a%d/", k);
	tar_header(f, name, '5', 0);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "a%d/f%03u.bin", k, i);
		tar_file(f, name, 100 + (i * 7919u + (unsigned)k) % 40000,
			 (uint32_t)(k * 1000 + (int)i));
		if (i == 5 && (k == 1 || k == 3)) {
			snprintf(name, sizeof(name), "a%d/dev", k);
			tar_header(f, name, '3', 0);
		}
	}
	fwrite(zero, 1, sizeof(zero), f);
	fclose(f);
	return n;
}

/* What the callbacks saw. */
struct seen {
	pthread_t self;
	int other_thread, went_back, scans;
	struct dlfs_pack_progress last;
	char warns[4][256];
	int n_warns;
};

static void on_progress(void *arg, const struct dlfs_pack_progress *p)
{
	struct seen *s = arg;
	s->other_thread |= !pthread_equal(s->self, pthread_self());
	if (strcmp(p->phase, "scan"))
		return;
	if (s->scans && (p->files_done < s->last.files_done ||
			 p->bytes_done < s->last.bytes_done))
		s->went_back = 1;
	s->scans++;
	s->last = *p;
}

static void on_warn(void *arg, const char *msg)
{
	struct seen *s = arg;
	s->other_thread |= !pthread_equal(s->self, pthread_self());
	if (s->n_warns < 4)
		snprintf(s->warns[s->n_warns], sizeof(s->warns[0]), "%s",
			 strstr(msg, "member") ? strstr(msg, "member") : msg);
	s->n_warns++;
}

/* Index srcs into dir/name with procs workers. @return dlfs_pack's. */
static int index_them(const char *dir, const char *name, const char **srcs,
		      unsigned n, unsigned procs, struct seen *s,
		      struct dlfs_err *err)
{
	struct dlfs_pack_opts o;
	char *out = t_path(dir, name);
	dlfs_pack_opts_init(&o);
	o.in_place = 1;
	o.chunk_size = 64 << 10;
	o.procs = procs;
	o.progress = on_progress;
	o.warn = on_warn;
	o.cb_arg = s;
	memset(s, 0, sizeof(*s));
	s->self = pthread_self();
	int ret = dlfs_pack(srcs, n, out, &o, err);
	free(out);
	return ret;
}

static void test_same_index(const char *dir, const char **srcs, uint64_t bytes,
			    unsigned files)
{
	static const unsigned procs[] = {1, 3, 8};
	struct seen one, s;
	struct dlfs_err err = {0};
	CHECK_EQ(index_them(dir, "p1.dlfs", srcs, NARC, 1, &one, &err), 0);
	for (int k = 1; k < 3; k++) {
		char name[32], a[64], b[64];
		snprintf(name, sizeof(name), "p%u.dlfs", procs[k]);
		CHECK_EQ(index_them(dir, name, srcs, NARC, procs[k], &s, &err),
			 0);
		static const char *const fn[] = {"index", "index.sum"};
		for (int f = 0; f < 2; f++) {
			snprintf(a, sizeof(a), "p1.dlfs/%s", fn[f]);
			snprintf(b, sizeof(b), "%s/%s", name, fn[f]);
			char *pa = t_path(dir, a), *pb = t_path(dir, b);
			CHECK(t_same_file(pa, pb));
			free(pa);
			free(pb);
		}
		/* Progress: the calling thread's, forward, to the end. */
		CHECK(!s.other_thread);
		CHECK(!s.went_back);
		CHECK_EQ(s.last.bytes_total, bytes);
		CHECK_EQ(s.last.bytes_done, bytes);
		CHECK_EQ(s.last.files_done, files);
		/* Warnings: the calling thread's, in archive order. */
		CHECK_EQ(s.n_warns, 2);
		CHECK(!strncmp(s.warns[0], "member 'a1/dev'", 15));
		CHECK(!strncmp(s.warns[1], "member 'a3/dev'", 15));
		CHECK_EQ(s.n_warns, one.n_warns);
	}
	CHECK(!one.other_thread);
	CHECK_EQ(one.last.bytes_done, bytes);
}

/* A tar of 400 members of 128 KiB (50 MiB), cut inside the last: it
 * fails only once read nearly whole. */
static void make_cut(const char *path)
{
	FILE *f = fopen(path, "wb");
	char name[64];
	CHECK(f != NULL);
	for (unsigned i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "big/f%03u.bin", i);
		tar_file(f, name, 128 << 10, i);
	}
	fclose(f);
	CHECK_EQ(truncate(path, (off_t)(400 * ((128 << 10) + 512) - 1000)), 0);
}

/* Archive 0 cut short (large: it fails last) and archive 3 not a tar
 * (it fails at once): the error is archive 0's, as one worker gives. */
static void test_first_failure(const char *dir, const char **srcs)
{
	struct seen s;
	struct dlfs_err e1 = {0}, e4 = {0};
	char *cut = t_path(dir, "cut.tar"), *junk = t_path(dir, "junk.tar");
	const char *bad[NARC];
	FILE *f = fopen(junk, "wb");
	CHECK(f != NULL);
	fputs("not a tar at all", f);
	fclose(f);
	make_cut(cut);
	memcpy(bad, srcs, sizeof(bad));
	bad[0] = cut;
	bad[3] = junk;
	CHECK(index_them(dir, "bad1.dlfs", bad, NARC, 1, &s, &e1) < 0);
	CHECK(index_them(dir, "bad4.dlfs", bad, NARC, 4, &s, &e4) < 0);
	CHECK_EQ(e4.code, e1.code);
	CHECK(!strcmp(e4.msg, e1.msg));
	CHECK(strstr(e4.msg, "cut.tar") != NULL);
	free(cut);
	free(junk);
}

/* Pieces a sink was given, in order, and the largest. */
struct pieces {
	struct dlfs_str all;
	int n;
	size_t max, last;
};

static int take_piece(void *arg, struct dlfs_str *piece)
{
	struct pieces *p = arg;
	dlfs_str_add(&p->all, piece->s, piece->n);
	p->max = piece->n > p->max ? piece->n : p->max;
	p->last = piece->n;
	p->n++;
	dlfs_str_free(piece);
	memset(piece, 0, sizeof(*piece));
	return 0;
}

/* 20,000 members (a part of some 1.4 MB) through a sink and without. */
static void test_pieces(const char *dir)
{
	char *path = t_path(dir, "many.tar");
	FILE *f = fopen(path, "wb");
	char name[64], zero[1024] = {0};
	CHECK(f != NULL);
	for (unsigned i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "m/f%05u", i);
		tar_file(f, name, 16, i);
	}
	fwrite(zero, 1, sizeof(zero), f);
	fclose(f);
	struct dlfs_pack_opts o;
	dlfs_pack_opts_init(&o);
	struct pk_ip_counters c1 = {0}, c2 = {0};
	struct dlfs_str whole = {0}, rest = {0};
	struct pieces got = {0};
	struct pk_ip_sink sink = {take_piece, &got};
	CHECK_EQ(pk_ip_part_make(path, &o, &c1, NULL, &whole), 0);
	CHECK_EQ(pk_ip_part_make(path, &o, &c2, &sink, &rest), 0);
	CHECK(whole.n > 4 * PK_IP_PIECE);
	CHECK_EQ(rest.n, 0);
	CHECK(got.n > 4);
	CHECK(got.max < PK_IP_PIECE + 1024); /* a piece and one record */
	CHECK(got.last < PK_IP_PIECE);
	CHECK_EQ(got.all.n, whole.n);
	CHECK(!memcmp(got.all.s, whole.s, whole.n));
	dlfs_str_free(&whole);
	dlfs_str_free(&rest);
	dlfs_str_free(&got.all);
	free(path);
}

int main(void)
{
	char *dir = t_tmpdir();
	char *paths[NARC];
	const char *srcs[NARC];
	uint64_t bytes = 0;
	unsigned files = 0;
	for (int k = 0; k < NARC; k++) {
		char name[32];
		struct stat st;
		snprintf(name, sizeof(name), "arc%d.tar", k);
		paths[k] = t_path(dir, name);
		srcs[k] = paths[k];
		files += make_tar(paths[k], k);
		CHECK_EQ(stat(paths[k], &st), 0);
		bytes += (uint64_t)st.st_size;
	}
	test_same_index(dir, srcs, bytes, files);
	test_first_failure(dir, srcs);
	test_pieces(dir);
	for (int k = 0; k < NARC; k++)
		free(paths[k]);
	t_rmrf(dir);
	free(dir);
	return t_done("test_inplace_par");
}

/*
 * Where an ingest worker puts the files it makes (sink.c), and how the
 * coordinator reads them back (put.c). Not installed.
 *
 * A worker owns one spool file and one record list in the pack's
 * temporary directory. Bytes it generates (npy files, HDF5 images,
 * manifests) are appended to the spool; the list records, per source
 * and in order: the source's mode and mtime, then each file as
 * (path, size, where its bytes are), then notes and warnings, then "done" or the
 * error that stopped it. A file's bytes are either in the spool or, for
 * LMDB values, in the source's own data file, which the pack then reads
 * in place. The list is little-endian and read only by the same build.
 *
 * In plan mode (dlfs_pack_dry_run) nothing is written: every file and
 * note goes to a callback, and generators skip reading sample data.
 *
 * Ownership: the sink owns its buffer and file handles; pk_sink_close
 * releases them. Not thread-safe: one worker, one sink.
 */
#ifndef DLFS_INGEST_SINK_H
#define DLFS_INGEST_SINK_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "dlfs/err.h"
#include "dlfs/pack.h"

/* Record tags of the list. */
enum {
	PK_REC_SOURCE = 'S', /* u32 src, u32 mode, i64 sec, u32 nsec, str */
	PK_REC_FILE = 'E',   /* u8 in_source, str path, u64 size, u64 off */
	PK_REC_WARN = 'W',   /* str */
	PK_REC_NOTE = 'N',   /* str */
	PK_REC_ERROR = 'X',  /* i32 code, str */
	PK_REC_DONE = 'D',
};

struct pk_sink {
	/* spool mode */
	int fd;
	uint64_t spool_size; /* bytes in the spool, buffered ones included */
	uint8_t *buf;
	size_t used, cap;
	FILE *list;
	char *spool_path, *list_path;
	uint64_t stream_at; /* where the streamed file started */
	/* plan mode */
	dlfs_plan_cb cb;
	void *cb_arg;
	const char *source;
	/* both */
	volatile sig_atomic_t *cancel; /* the caller's; may be NULL */
	_Atomic int *stop;       /* another worker failed; may be NULL */
	_Atomic uint64_t *bytes; /* produced, for progress; may be NULL */
	int failed;
};

/* Create spool_path and list_path (O_EXCL). @return 0 or -errno. */
int pk_sink_open(struct pk_sink *s, const char *spool_path,
		 const char *list_path, struct dlfs_err *err);
/* A sink that passes everything to cb instead. */
void pk_sink_plan(struct pk_sink *s, dlfs_plan_cb cb, void *arg);
/* Flush and close (spool mode). @return 0 or -errno. */
int pk_sink_close(struct pk_sink *s, struct dlfs_err *err);

static inline int pk_sink_dry(const struct pk_sink *s)
{
	return s->cb != NULL;
}

/* -ECANCELED (with err) once *cancel or *stop is set, else 0. */
int pk_sink_cancelled(struct pk_sink *s, struct dlfs_err *err);

/*
 * Begin source src: the mode and mtime its entries get, and the data
 * file that in-source entries refer to ("" if none). In plan mode, note
 * is the source's description. @return 0 or -errno.
 */
int pk_sink_source(struct pk_sink *s, const char *source, uint32_t src,
		   uint32_t mode, int64_t sec, uint32_t nsec,
		   const char *data_path, struct dlfs_err *err);
/* A note: for the plan, or recorded and shown by the coordinator. */
int pk_sink_note(struct pk_sink *s, const char *note, struct dlfs_err *err);
/* A warning: recorded, and shown by the coordinator in source order. */
int pk_sink_warn(struct pk_sink *s, struct dlfs_err *err, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));
/* End of the current source: done, or failed with e. */
int pk_sink_done(struct pk_sink *s, struct dlfs_err *err);
int pk_sink_error(struct pk_sink *s, const struct dlfs_err *e);

/* A file made of a then b (either may be empty), spooled. */
int pk_sink_file(struct pk_sink *s, const char *path, const void *a,
		 size_t alen, const void *b, size_t blen,
		 struct dlfs_err *err);
/* A file whose size bytes are at off in the source's data file. */
int pk_sink_ref(struct pk_sink *s, const char *path, uint64_t size,
		uint64_t off, struct dlfs_err *err);
/* A file written in pieces, whose size is known at its end. */
void pk_sink_stream_begin(struct pk_sink *s);
int pk_sink_stream(struct pk_sink *s, const void *p, size_t n,
		   struct dlfs_err *err);
int pk_sink_stream_end(struct pk_sink *s, const char *path,
		       struct dlfs_err *err);

/* Reading a list back: one record at a time. */
struct pk_rec {
	int tag;
	uint32_t src, mode, nsec;
	int64_t sec;
	int code;
	uint8_t in_source;
	uint64_t size, off;
	char *str; /* path, data path or message; owned by the reader */
	uint32_t len;
};
/* @return 1 with r filled, 0 at the end, or -errno (a damaged list). */
int pk_rec_read(FILE *f, struct pk_rec *r, char **buf, size_t *cap);

#endif

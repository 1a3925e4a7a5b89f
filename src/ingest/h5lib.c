/* HDF5's global state and error stack, in one place: see h5lib.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5lib.h"

int pk_h5_begin(struct pk_h5_state *st, struct dlfs_err *err)
{
	st->saved = 0;
	if (H5open() < 0)
		return dlfs_err_set(err, -EIO, "cannot initialise libhdf5");
	if (H5Eget_auto2(H5E_DEFAULT, &st->func, &st->data) >= 0)
		st->saved = 1;
	/* Errors are reported through err, with context, never printed. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return 0;
}

void pk_h5_end(struct pk_h5_state *st)
{
	if (st->saved)
		H5Eset_auto2(H5E_DEFAULT, st->func, st->data);
	st->saved = 0;
}

struct walk {
	int n;
	char inner[384], outer[256], cls[160];
	int sys_errno;
	int nomem, io;
};

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}

/* Upward: the first frame is the innermost, where the failure began. */
static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *arg)
{
	struct walk *w = arg;
	const char *desc = e->desc ? e->desc : "";
	w->n++;
	if (n == 0) {
		char maj[80] = "", min[80] = "";
		snprintf(w->inner, sizeof(w->inner), "%s", desc);
		trim(w->inner);
		H5Eget_msg(e->maj_num, NULL, maj, sizeof(maj));
		H5Eget_msg(e->min_num, NULL, min, sizeof(min));
		snprintf(w->cls, sizeof(w->cls), "%s; %s", maj, min);
		const char *p = strstr(desc, "errno = ");
		if (p)
			w->sys_errno = atoi(p + 8);
	}
	snprintf(w->outer, sizeof(w->outer), "%s", desc);
	trim(w->outer);
	if (e->maj_num == H5E_RESOURCE || e->min_num == H5E_CANTALLOC ||
	    e->min_num == H5E_NOSPACE)
		w->nomem = 1;
	if (e->maj_num == H5E_IO || e->maj_num == H5E_PLINE ||
	    e->min_num == H5E_READERROR || e->min_num == H5E_CANTFILTER)
		w->io = 1;
	return 0;
}

int pk_h5_fail(struct dlfs_err *err, const char *fmt, ...)
{
	char ctx[DLFS_ERR_MSG_MAX / 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);

	struct walk w = {0};
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
	H5Eclear2(H5E_DEFAULT);
	int code = w.sys_errno > 0 ? -w.sys_errno
		   : w.nomem	   ? -ENOMEM
		   : w.io	   ? -EIO
				   : -EINVAL;
	if (!w.n)
		return dlfs_err_set(err, code, "%s: libhdf5 call failed", ctx);
	if (w.n > 1 && strcmp(w.inner, w.outer))
		return dlfs_err_set(err, code, "%s: %s: %s (HDF5: %s)", ctx,
				    w.outer, w.inner, w.cls);
	return dlfs_err_set(err, code, "%s: %s (HDF5: %s)", ctx, w.inner,
			    w.cls);
}

void pk_h5_close(hid_t id)
{
	if (id < 0)
		return;
	switch (H5Iget_type(id)) {
	case H5I_FILE:
		H5Fclose(id);
		break;
	case H5I_GROUP:
		H5Gclose(id);
		break;
	case H5I_DATASET:
		H5Dclose(id);
		break;
	case H5I_DATASPACE:
		H5Sclose(id);
		break;
	case H5I_DATATYPE:
		H5Tclose(id);
		break;
	case H5I_ATTR:
		H5Aclose(id);
		break;
	case H5I_GENPROP_LST:
		H5Pclose(id);
		break;
	default:
		H5Idec_ref(id);
		break;
	}
}

hid_t pk_h5_open(const char *path, struct dlfs_err *err)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fid = -1;
	if (fapl < 0)
		return pk_h5_fail(err, "%s", path);
	if (H5Pset_file_locking(fapl, 0, 1) < 0 ||
	    H5Pset_fapl_sec2(fapl) < 0) {
		int ret = pk_h5_fail(err, "%s: file access properties", path);
		H5Pclose(fapl);
		return ret;
	}
	fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
	/* Read the stack first: every HDF5 call clears it. */
	int ret = fid < 0 ? pk_h5_fail(err, "%s: cannot open as HDF5", path)
			  : 0;
	H5Pclose(fapl);
	return ret ? ret : fid;
}

int pk_h5_mem_plists(size_t increment, hid_t *fapl, hid_t *fcpl,
		     struct dlfs_err *err)
{
	*fapl = H5Pcreate(H5P_FILE_ACCESS);
	*fcpl = H5Pcreate(H5P_FILE_CREATE);
	/*
	 * No metadata or small-data blocks: they would pad every small
	 * file. The format stays the earliest (superblock 0): libhdf5
	 * 1.10.8 gives images of newer superblocks, taken from an open
	 * file, a checksum that does not match, and readers refuse them.
	 */
	if (*fapl < 0 || *fcpl < 0 ||
	    H5Pset_fapl_core(*fapl, increment, 0) < 0 ||
	    H5Pset_meta_block_size(*fapl, 0) < 0 ||
	    H5Pset_small_data_block_size(*fapl, 0) < 0 ||
	    H5Pset_obj_track_times(*fcpl, 0) < 0) {
		int ret = pk_h5_fail(err, "in-memory HDF5 file");
		pk_h5_close(*fapl);
		pk_h5_close(*fcpl);
		*fapl = *fcpl = -1;
		return ret;
	}
	return 0;
}

int pk_h5_image(hid_t fid, unsigned char **buf, size_t *len,
		struct dlfs_err *err)
{
	*buf = NULL;
	*len = 0;
	if (H5Fflush(fid, H5F_SCOPE_LOCAL) < 0)
		return pk_h5_fail(err, "in-memory HDF5 file: flush");
	ssize_t n = H5Fget_file_image(fid, NULL, 0);
	if (n <= 0)
		return pk_h5_fail(err, "in-memory HDF5 file: image size");
	unsigned char *b = calloc(1, (size_t)n);
	if (!b)
		return dlfs_err_set(err, -ENOMEM,
				    "out of memory for an HDF5 image of %zd "
				    "bytes",
				    n);
	if (H5Fget_file_image(fid, b, (size_t)n) != n) {
		free(b);
		return pk_h5_fail(err, "in-memory HDF5 file: image");
	}
	*buf = b;
	*len = (size_t)n;
	return 0;
}

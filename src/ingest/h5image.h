/*
 * HDF5 files built in memory (core driver, no backing store, image taken
 * with H5Fget_file_image): the per-sample files of the h5 form and each
 * source's .meta.h5. Not installed.
 *
 * A per-sample file holds every split dataset at its own path, with its
 * file type, its attributes and the shape of one sample (the source's
 * shape without axis 0; a 1-D dataset gives a scalar), contiguous and
 * uncompressed. Every sample of a source has the same structure, so its
 * image is built once with zeros (the template) and each sample's image
 * is the template with that sample's rows copied over the datasets' raw
 * data, whose offsets H5Dget_offset gives. That equals building the file
 * afresh (pk_h5_sample_build; tests/unit/test_h5 checks it), and costs a
 * copy instead of an HDF5 file creation per sample.
 *
 * .meta.h5 keeps what splitting leaves out: the file's root attributes,
 * every group with its attributes, datasets that are not split (copied
 * whole with H5Ocopy), named datatypes, soft and external links (not
 * followed), and for each split dataset an empty placeholder of shape
 * (0, ...) with its type and attributes. Its root also gets dlfs_source,
 * dlfs_samples, dlfs_sample_format and dlfs_split attributes, unless the
 * source's root has attributes of those names.
 *
 * Attributes are copied with their types and character sets; attributes
 * holding references, which mean nothing in another file, are left out
 * with a warning.
 *
 * Objects are created without modification times, so identical sources
 * give byte-identical images. Thread-safety: as h5lib.h.
 */
#ifndef DLFS_INGEST_H5IMAGE_H
#define DLFS_INGEST_H5IMAGE_H

#include <stdint.h>

#include "dlfs/pack.h"
#include "h5src.h"
#include "sink.h"

struct pk_h5_template {
	unsigned char *img;
	size_t len;
	uint64_t *off; /* per dataset of the source; UINT64_MAX: not split */
};

/* Build the template of source s. ws gets warnings (may be NULL).
 * @return 0 or a negative errno. */
int pk_h5_template(const struct pk_h5_src *s, struct pk_h5_template *t,
		   struct pk_sink *ws, struct dlfs_err *err);
void pk_h5_template_free(struct pk_h5_template *t);

/* out (t->len bytes) = the image of the sample whose row of dataset j
 * is rows[j] (row_bytes long; only split datasets are read). */
void pk_h5_template_fill(const struct pk_h5_template *t,
			 const struct pk_h5_src *s, const void *const *rows,
			 unsigned char *out);

/* Build one sample's image from scratch, as the template path would.
 * For checking and measuring; *img is malloc'd. */
int pk_h5_sample_build(const struct pk_h5_src *s, const void *const *rows,
		       unsigned char **img, size_t *len, struct dlfs_err *err);

/* Build .meta.h5 of source s, named source_name (its file name). */
int pk_h5_meta(const struct pk_h5_src *s, const char *source_name,
	       enum dlfs_sample_format f, struct pk_sink *ws,
	       unsigned char **img, size_t *len, struct dlfs_err *err);

#endif

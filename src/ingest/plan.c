/*
 * The dry run (ingest.h, pk_ingest_plan): what each source would become,
 * an ingest source's files listed through a planning sink, nothing
 * written.
 */
#include <stdio.h>

#include "h5lib.h"
#include "ingest_priv.h"

int pk_ingest_plan(const struct pk_source *src, unsigned n,
		   const struct dlfs_pack_opts *o, dlfs_plan_cb cb, void *arg,
		   struct dlfs_err *err)
{
	struct pk_h5_state hs = {0};
	struct pk_sink sink;
	int ret = pk_h5_begin(&hs, err);
	pk_sink_plan(&sink, cb, arg);
	sink.cancel = o->cancel;
	for (unsigned i = 0; !ret && i < n; i++) {
		char note[4096 + 128];
		const struct pk_source *s = &src[i];
		switch (s->kind) {
		case PK_SRC_DIR:
			snprintf(note, sizeof(note),
				 "a directory: its tree is packed as it is");
			break;
		case PK_SRC_ARCHIVE:
			snprintf(note, sizeof(note),
				 "an archive: its members are packed as "
				 "they are");
			break;
		case PK_SRC_HDF5:
			snprintf(note, sizeof(note),
				 "an HDF5 file: split into %s/, one %s per "
				 "sample",
				 s->top,
				 o->sample_format == DLFS_SAMPLE_H5
					 ? "HDF5 file"
					 : "directory of .npy files");
			break;
		default:
			snprintf(note, sizeof(note),
				 "an LMDB environment: one file per key in "
				 "%s/, key order in %s/.keys",
				 s->top, s->top);
		}
		sink.source = s->path;
		ret = pk_sink_note(&sink, note, err);
		if (!ret && s->kind != PK_SRC_DIR && s->kind != PK_SRC_ARCHIVE)
			ret = pk_ingest_one(s, i, o, &sink, err);
	}
	pk_h5_end(&hs);
	return ret;
}

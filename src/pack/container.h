/*
 * Container files as the packer writes them (container.c): created in
 * the temporary directory, their data written by the pipeline (pipe.h),
 * then their trailer, footer and header (dlfs-format(5)) once the
 * dataset id is known. Not installed. pk_container_open and pk_write_at
 * are called from the pipeline's writer; pk_container_finish from
 * dlfs_pack's thread, after the pipeline.
 */
#ifndef DLFS_PACK_CONTAINER_H
#define DLFS_PACK_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "pipe.h"

/* Open container c's file in dir with flags (O_WRONLY | O_CLOEXEC
 * added, mode 0644) into *fd; its path into path (plen bytes).
 * @return 0 or a negative errno with err naming the path. */
int pk_container_open(const char *dir, uint32_t c, int flags, int *fd,
		      char *path, size_t plen, struct dlfs_err *err);

/* buf (len bytes) to fd at off. @return 0 or a negative errno with err
 * naming path and the offset. */
int pk_write_at(int fd, const void *buf, size_t len, uint64_t off,
		const char *path, struct dlfs_err *err);

/*
 * Container c's trailer (its files' records, container 0's also the
 * directories' and symlinks'), footer and header, once the id is known
 * and the pipeline p has written c's data; c's size and footer checksum
 * into ct. The file is fsynced and closed. @return 0 or a negative errno
 * with err naming the container.
 */
int pk_container_finish(const struct pk_pipe *p, uint32_t c,
			const uint8_t *id, struct pk_containers *ct,
			struct dlfs_err *err);

#endif

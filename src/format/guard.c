/* Faults in the index's map: see guard.h. */
#include "guard.h"

#include <setjmp.h>
#include <stdatomic.h>

#include "dlfs/dataset.h"

struct guard {
	sigjmp_buf jb;
	struct guard *prev;
	const void *addr; /* where the fault was */
};

/* The calling thread's innermost guard (NULL: none). Initial-exec: the
 * handler must not make the TLS allocator run. */
static __thread struct guard *top __attribute__((tls_model("initial-exec")));

static _Atomic unsigned long faults;

int dlfs_index_fault_jump(const void *addr)
{
	struct guard *g = top;
	if (!g)
		return 0;
	g->addr = addr;
	siglongjmp(g->jb, 1);
}

unsigned long dlfs_index_faults(void)
{
	return atomic_load_explicit(&faults, memory_order_relaxed);
}

int dlfs_guard_run(const char *path, struct dlfs_err *err, int (*fn)(void *),
		   void *ctx)
{
	struct guard g = {.prev = top};
	/* What is used after a jump back is not kept in registers. */
	const char *volatile p = path;
	struct dlfs_err *volatile e = err;
	top = &g;
	/* No signal mask saved: a system call per lookup otherwise. The
	 * handler runs with SA_NODEFER, so none needs restoring. */
	if (sigsetjmp(g.jb, 0)) {
		top = g.prev;
		atomic_fetch_add_explicit(&faults, 1, memory_order_relaxed);
		return dlfs_err_set(e, -DLFS_ECORRUPT,
				    "%s/index: a page could not be read "
				    "(SIGBUS at %p): damaged, or truncated or "
				    "replaced while in use",
				    p, g.addr);
	}
	int ret = fn(ctx);
	top = g.prev;
	return ret;
}

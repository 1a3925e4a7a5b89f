/* real: dlsym(RTLD_NEXT) of every function in DLFS_REAL_LIST, once. */
#include "real.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

static struct dlfs_real table;
static atomic_int resolved;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
#define DLFS_REAL_SYM(name) table.name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name);
	DLFS_REAL_LIST(DLFS_REAL_SYM)
#undef DLFS_REAL_SYM
	atomic_store_explicit(&resolved, 1, memory_order_release);
}

const struct dlfs_real *dlfs_real(void)
{
	if (!atomic_load_explicit(&resolved, memory_order_acquire))
		pthread_once(&once, resolve);
	return &table;
}

/*
 * The server's life as readers of the shared memory see it (shm.h's
 * liveness mutex, share.c's dlfs_share_alive), read only through
 * dlfs_shm_alive on a read-only mapping of meta made from its fd, as
 * libdlfs-preload.so maps it:
 *   - layout: alive_off is inside meta, 64-aligned, past the head and
 *     before the locations table;
 *   - held: not alive before anyone holds it, alive while a thread holds
 *     it, not alive once that thread releases it;
 *   - thread: a thread that holds it and ends without releasing it
 *     leaves it not alive (the kernel marks its robust futex);
 *   - killed: a child process that holds it (the memory shared, as the
 *     server's memfd) is alive to the parent, and not alive once the
 *     child is killed with SIGKILL.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "share.h"
#include "shm.h"
#include "tutil.h"

struct view {
	const struct dlfs_shm_head *h;
	const uint8_t *meta;
	size_t size;
};

static struct dlfs_share *make(struct view *v)
{
	static const uint64_t first[2] = {0, 4};
	const struct dlfs_share_conf c = {
		.n_slots = 2,
		.slot_size = 8192,
		.table_size = 4,
		.chunk_size = 8192,
		.data_off = 4096,
		.n_chunks = 8,
		.n_inodes = 9,
		.n_containers = 2,
		.first = first,
	};
	struct dlfs_share *sh = NULL;
	struct dlfs_err err = {0};
	if (dlfs_share_new(&c, &sh, &err)) {
		fprintf(stderr, "dlfs_share_new: %s\n", err.msg);
		exit(1);
	}
	int fds[3];
	dlfs_share_fds(sh, fds);
	v->size = (size_t)dlfs_share_head(sh)->meta_size;
	void *p = mmap(NULL, v->size, PROT_READ, MAP_SHARED, fds[0], 0);
	if (p == MAP_FAILED) {
		perror("mmap meta");
		exit(1);
	}
	v->meta = p;
	v->h = p;
	return sh;
}

static void done(struct dlfs_share *sh, struct view *v)
{
	munmap((void *)v->meta, v->size);
	dlfs_share_free(sh);
}

static void test_layout(void)
{
	struct view v;
	struct dlfs_share *sh = make(&v);
	CHECK_EQ(v.h->version, DLFS_SHM_VERSION);
	CHECK_EQ(v.h->alive_off % 64, 0);
	CHECK(v.h->alive_off >= sizeof(*v.h));
	CHECK(v.h->alive_off + 64 <= v.h->loc_off);
	CHECK(v.h->alive_off + 64 <= v.h->meta_size);
	done(sh, &v);
}

static void test_held(void)
{
	struct view v;
	struct dlfs_share *sh = make(&v);
	CHECK_EQ(dlfs_shm_alive(v.h, v.meta), 0);
	CHECK_EQ(dlfs_share_alive(sh, 1), 0);
	CHECK_EQ(dlfs_shm_alive(v.h, v.meta), 1);
	CHECK_EQ(dlfs_share_alive(sh, 0), 0);
	CHECK_EQ(dlfs_shm_alive(v.h, v.meta), 0);
	done(sh, &v);
}

static void *hold_and_end(void *arg)
{
	CHECK_EQ(dlfs_share_alive(arg, 1), 0);
	return NULL;
}

static void test_thread(void)
{
	struct view v;
	struct dlfs_share *sh = make(&v);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, hold_and_end, sh), 0);
	pthread_join(t, NULL);
	CHECK_EQ(dlfs_shm_alive(v.h, v.meta), 0);
	done(sh, &v);
}

static void test_killed(void)
{
	struct view v;
	struct dlfs_share *sh = make(&v);
	int p[2];
	if (pipe(p))
		abort();
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		char c = dlfs_share_alive(sh, 1) ? 'n' : 'y';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char c = 0;
	CHECK(read(p[0], &c, 1) == 1 && c == 'y');
	CHECK_EQ(dlfs_shm_alive(v.h, v.meta), 1);
	kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CHECK_EQ(dlfs_shm_alive(v.h, v.meta), 0);
	close(p[0]);
	close(p[1]);
	done(sh, &v);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{"layout", test_layout},
	{"held", test_held},
	{"thread", test_thread},
	{"killed", test_killed},
};

int main(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(tests) / sizeof(*tests); i++) {
		int run = argc < 2;
		for (int a = 1; a < argc; a++)
			run |= !strcmp(argv[a], tests[i].name);
		if (run)
			tests[i].fn();
	}
	return t_done("test_alive");
}

/*
 * Replay a corpus through a fuzz target without libFuzzer: the meson
 * `fuzz` suite runs every target over its committed corpus this way, in
 * the normal and the ASan build, so inputs that once crashed keep being
 * tested forever.
 *
 * Usage: fuzz-TARGET PATH...   (each PATH a file, or a directory whose
 * files are taken in name order). Exit 0 after all ran; a target that
 * finds a broken contract aborts.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *in = NULL;
	size_t len = 0;
	int ret = -1;
	if (!f || fstat(fileno(f), &st) < 0) {
		perror(path);
		goto out;
	}
	/* Exact size, as libFuzzer passes it, so overreads show. */
	len = (size_t)st.st_size;
	in = malloc(len ? len : 1);
	if (!in || fread(in, 1, len, f) != len) {
		fprintf(stderr, "%s: cannot read\n", path);
		goto out;
	}
	LLVMFuzzerTestOneInput(in, len);
	ret = 0;
out:
	free(in);
	if (f)
		fclose(f);
	return ret;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	int ran = 0, failed = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			failed++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed += run_file(argv[i]) < 0;
			ran++;
			continue;
		}
		struct dirent **ents;
		int n = scandir(argv[i], &ents, NULL, NULL);
		if (n < 0) {
			perror(argv[i]);
			failed++;
			continue;
		}
		char **names = malloc((size_t)n * sizeof(*names));
		int m = 0;
		for (int j = 0; j < n; j++) {
			if (names && ents[j]->d_name[0] != '.' &&
			    asprintf(&names[m], "%s/%s", argv[i],
				     ents[j]->d_name) >= 0)
				m++;
			free(ents[j]);
		}
		free(ents);
		if (!names) {
			failed++;
			continue;
		}
		qsort(names, (size_t)m, sizeof(*names), by_name);
		for (int j = 0; j < m; j++) {
			failed += run_file(names[j]) < 0;
			ran++;
			free(names[j]);
		}
		free(names);
	}
	printf("%s: %d inputs replayed, %d unreadable\n", argv[0], ran, failed);
	return failed || ran == 0;
}

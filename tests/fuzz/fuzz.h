/* fuzz.h — what the libFuzzer harnesses share: taking typed values off the front of
 * the fuzzer's input, the way LLVM's FuzzedDataProvider does for C++. */
#ifndef SANDLOT_FUZZ_H
#define SANDLOT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_in {
	const uint8_t *p;
	size_t n;
} fuzz_in;

/* One byte off the front (0 once the input is used up). */
static inline uint8_t fuzz_u8(fuzz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

/* A NUL-terminated copy of the bytes up to the next '\n' (or the end), newline dropped;
 * the caller frees it. Lets a seed file hold several strings, one per line. */
static inline char *fuzz_line(fuzz_in *in)
{
	const uint8_t *nl = memchr(in->p, '\n', in->n);
	size_t len = nl ? (size_t)(nl - in->p) : in->n;
	char *s = malloc(len + 1);
	if (!s)
		abort();
	memcpy(s, in->p, len);
	s[len] = '\0';
	in->p += len + (nl ? 1 : 0);
	in->n -= len + (nl ? 1 : 0);
	return s;
}

/* The rest of the input as a NUL-terminated copy (embedded NULs kept); frees nothing. */
static inline char *fuzz_rest(fuzz_in *in, size_t *len)
{
	char *s = malloc(in->n + 1);
	if (!s)
		abort();
	memcpy(s, in->p, in->n);
	s[in->n] = '\0';
	*len = in->n;
	in->p += in->n;
	in->n = 0;
	return s;
}

#endif

/* What the test programs share: a failed check prints "FAIL:" and its reason, and ends
 * the program with status 1 (from any thread). */
#ifndef CHECK_H
#define CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

#endif

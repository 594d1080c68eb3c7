// threads-per-year (C, no libc): how many e-mail threads per year of their most
// recent message. Pages through sources_list and reads "most_recent_ms" and
// "next" from the host's JSON by hand; a host error is passed on unchanged.
#include "openhuman.h"

OH_BUMP_ALLOCATOR(256 * 1024)

#define MAX_YEARS 200
static int years[MAX_YEARS], counts[MAX_YEARS], nyears;
static oh_u8 out[64 + MAX_YEARS * 40];

// find returns the index just past key in p[from..n), or n.
static oh_u32 find(const oh_u8 *p, oh_u32 from, oh_u32 n, const char *key) {
	for (oh_u32 i = from; i < n; i++) {
		oh_u32 k = 0;
		while (key[k] && i + k < n && p[i + k] == (oh_u8)key[k]) k++;
		if (!key[k]) return i + k;
	}
	return n;
}

static long long number(const oh_u8 *p, oh_u32 i, oh_u32 n) {
	long long v = 0;
	int neg = i < n && p[i] == '-';
	for (i += neg; i < n && p[i] >= '0' && p[i] <= '9'; i++) v = v * 10 + (p[i] - '0');
	return neg ? -v : v;
}

// year_of is the UTC year of a Unix time in milliseconds (civil_from_days).
static int year_of(long long ms) {
	long long z = ms / 86400000 - (ms % 86400000 < 0) + 719468;
	long long era = (z >= 0 ? z : z - 146096) / 146097;
	long long doe = z - era * 146097;
	long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	long long mp = (5 * doy + 2) / 153;
	return (int)(yoe + era * 400 + (mp >= 10));
}

static oh_u32 put(oh_u32 o, const char *s) {
	while (*s) out[o++] = (oh_u8)*s++;
	return o;
}

static oh_u32 put_int(oh_u32 o, long long v) {
	char d[24];
	int k = 0;
	if (v < 0) out[o++] = '-', v = -v;
	do d[k++] = (char)('0' + v % 10), v /= 10; while (v);
	while (k) out[o++] = (oh_u8)d[--k];
	return o;
}

OH_EXPORT("oh_call") oh_u64 oh_call(oh_u8 *req, oh_u32 len) {
	(void)req, (void)len; // no arguments (the input schema allows none)
	nyears = 0;
	long long total = 0, offset = 0;
	for (;;) {
		oh_u8 ask[64];
		oh_u32 a = 0;
		const char *head = "{\"kinds\":[\"email\"],\"k\":50,\"offset\":";
		while (*head) ask[a++] = (oh_u8)*head++;
		char d[24];
		int k = 0;
		long long v = offset;
		do d[k++] = (char)('0' + v % 10), v /= 10; while (v);
		while (k) ask[a++] = (oh_u8)d[--k];
		ask[a++] = '}';
		oh_u64 reply = oh_sources_list(ask, a);
		const oh_u8 *p = OH_PTR(reply);
		oh_u32 n = OH_LEN(reply);
		if (find(p, 0, n, "{\"ok\":") != 6) return reply; // {"error":…}: pass it on
		for (oh_u32 i = find(p, 0, n, "\"most_recent_ms\":"); i < n; i = find(p, i, n, "\"most_recent_ms\":")) {
			int y = year_of(number(p, i, n)), j = 0;
			while (j < nyears && years[j] != y) j++;
			if (j == nyears) {
				if (nyears == MAX_YEARS) continue;
				years[nyears] = y, counts[nyears++] = 0;
			}
			counts[j]++, total++;
		}
		oh_u32 next = find(p, 0, n, "\"next\":");
		if (next == n) break;
		offset = number(p, next, n);
	}
	for (int i = 1; i < nyears; i++) // insertion sort by year
		for (int j = i; j > 0 && years[j - 1] > years[j]; j--) {
			int y = years[j], c = counts[j];
			years[j] = years[j - 1], counts[j] = counts[j - 1];
			years[j - 1] = y, counts[j - 1] = c;
		}
	oh_u32 o = put(0, "{\"result\":{\"years\":[");
	for (int i = 0; i < nyears; i++) {
		o = put(o, i ? ",{\"year\":" : "{\"year\":");
		o = put_int(o, years[i]);
		o = put(o, ",\"threads\":");
		o = put_int(o, counts[i]);
		o = put(o, "}");
	}
	o = put(o, "],\"threads\":");
	o = put_int(o, total);
	o = put(o, "}}");
	return OH_PACK(out, o);
}

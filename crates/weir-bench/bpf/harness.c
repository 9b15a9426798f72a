/*
 * libpcap's BPF interpreter, timed the way weir times its engine.
 *
 *   cc -O2 -o harness harness.c -lpcap
 *   harness TRACE MIN_MS EXPR [EXPR...]
 *
 * Loads every packet of TRACE into memory, then for each EXPR: compiles it
 * with pcap_compile (optimised, the trace's linktype) and calls
 * pcap_offline_filter on every packet, round after round, until MIN_MS
 * milliseconds have passed. Prints one line per expression:
 *
 *   bf_len <N> ns_per_packet <F> matched <M> packets <P> rounds <R>
 *
 * where M counts the packets of one round the filter accepted. This is
 * what tcpdump runs per packet when it filters in user space (reading a
 * file), without its I/O.
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pkt {
	struct pcap_pkthdr hdr;
	u_char *data;
};

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];
	if (argc < 4) {
		fprintf(stderr, "usage: %s TRACE MIN_MS EXPR [EXPR...]\n", argv[0]);
		return 2;
	}
	double min_ns = atof(argv[2]) * 1e6;
	pcap_t *p = pcap_open_offline(argv[1], err);
	if (!p) {
		fprintf(stderr, "harness: %s\n", err);
		return 1;
	}
	size_t n = 0, cap = 1024;
	struct pkt *pkts = malloc(cap * sizeof *pkts);
	struct pcap_pkthdr *h;
	const u_char *d;
	int rc;
	while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
		if (n == cap) {
			cap *= 2;
			pkts = realloc(pkts, cap * sizeof *pkts);
		}
		if (!pkts) {
			fprintf(stderr, "harness: out of memory\n");
			return 1;
		}
		pkts[n].hdr = *h;
		pkts[n].data = malloc(h->caplen ? h->caplen : 1);
		memcpy(pkts[n].data, d, h->caplen);
		n++;
	}
	if (n == 0) {
		fprintf(stderr, "harness: no packets in %s\n", argv[1]);
		return 1;
	}
	for (int e = 3; e < argc; e++) {
		struct bpf_program prog;
		if (pcap_compile(p, &prog, argv[e], 1, PCAP_NETMASK_UNKNOWN) < 0) {
			fprintf(stderr, "harness: %s: %s\n", argv[e], pcap_geterr(p));
			return 1;
		}
		/* Warm-up round, which also counts matches. */
		unsigned long matched = 0;
		for (size_t i = 0; i < n; i++)
			matched += pcap_offline_filter(&prog, &pkts[i].hdr, pkts[i].data) != 0;
		unsigned long rounds = 0;
		volatile unsigned long sink = 0;
		double t0 = now_ns(), t;
		do {
			for (size_t i = 0; i < n; i++)
				sink += pcap_offline_filter(&prog, &pkts[i].hdr, pkts[i].data);
			rounds++;
			t = now_ns();
		} while (t - t0 < min_ns);
		printf("bf_len %u ns_per_packet %.4f matched %lu packets %zu rounds %lu\n",
		       prog.bf_len, (t - t0) / ((double)n * (double)rounds), matched, n, rounds);
		pcap_freecode(&prog);
	}
	pcap_close(p);
	return 0;
}

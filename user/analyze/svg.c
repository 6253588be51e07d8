// SPDX-License-Identifier: MIT
/* SVG chart of memory vs uptime: one panel per version and key, with a
 * sample of the points, the bucket means and the fitted trend line. */
#include "report.h"

#include "output_dir.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PANEL_W 560
#define PANEL_H 330
#define COLS 2
#define MARGIN_L 70
#define MARGIN_R 20
#define MARGIN_T 52
#define MARGIN_B 46

struct axis {
	double lo, hi, step;
};

/* Round tick steps of 1, 2 or 5 times a power of ten, about 5 ticks. */
static void nice_axis(double lo, double hi, struct axis *ax)
{
	double span, raw, mag, f;

	if (!isfinite(lo) || !isfinite(hi)) {
		lo = 0;
		hi = 1;
	}
	if (hi - lo < 1e-9 * (fabs(hi) + 1)) {
		/* one value: widen relative to it (+-1 vanishes near 1e17) */
		double d = fmax(1, fabs(hi) * 1e-6);

		lo -= d;
		hi += d;
	}
	span = hi - lo;
	if (!isfinite(span) || !(span > 0)) {
		ax->lo = 0;
		ax->hi = 1;
		ax->step = 0.2;
		return;
	}
	raw = span / 5;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	ax->step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
	ax->lo = floor(lo / ax->step) * ax->step;
	ax->hi = ceil(hi / ax->step) * ax->step;
}

static void xml_text(FILE *out, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '&')
			fputs("&amp;", out);
		else if (c == '<')
			fputs("&lt;", out);
		else if (c == '>')
			fputs("&gt;", out);
		else if (c == '"')
			fputs("&quot;", out);
		else if (c < 0x20 || c >= 0x80)
			fputc('?', out); /* keeps the file valid XML whatever the bytes */
		else
			fputc(c, out);
	}
}

struct frame {
	double x0, y0, w, h; /* plot area in SVG pixels */
	struct axis ax, ay;
};

static double px(const struct frame *f, double x)
{
	return f->x0 + (x - f->ax.lo) / (f->ax.hi - f->ax.lo) * f->w;
}

static double py(const struct frame *f, double y)
{
	return f->y0 + f->h - (y - f->ay.lo) / (f->ay.hi - f->ay.lo) * f->h;
}

/* Number of tick steps from lo to hi: counted, not found by adding
 * step to a double, which never reaches hi when step is below the
 * values' spacing (fuzz_series hung on uptimes near 1e17). */
static int tick_steps(const struct axis *ax)
{
	double n = floor((ax->hi - ax->lo) / ax->step + 0.5);

	return n >= 1 && n <= 40 ? (int)n : 0;
}

static void draw_axes(FILE *out, const struct frame *f)
{
	double v;
	int i, n;

	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"#999\"/>\n",
		f->x0, f->y0, f->w, f->h);
	for (i = 0, n = tick_steps(&f->ax); i <= n; i++) {
		double x;

		v = f->ax.lo + i * f->ax.step;
		x = px(f, v);

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
			x, f->y0, x, f->y0 + f->h);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"tick\">%g</text>\n",
			x, f->y0 + f->h + 15, v);
	}
	for (i = 0, n = tick_steps(&f->ay); i <= n; i++) {
		double y;

		v = f->ay.lo + i * f->ay.step;
		y = py(f, v);

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
			f->x0, y, f->x0 + f->w, y);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"tick\">%g</text>\n",
			f->x0 - 5, y + 4, v);
	}
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"label\">system uptime (hours)</text>\n",
		f->x0 + f->w / 2, f->y0 + f->h + 34);
	fprintf(out, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" class=\"label\">memory (MB)</text>\n",
		f->x0 - 52, f->y0 + f->h / 2);
}

static void draw_data(FILE *out, const struct frame *f, const struct key_result *k,
		      const struct report_opts *o)
{
	const struct key_stats *s = k->stats;
	uint32_t i;
	int b;

	fputs("<g fill=\"#1f77b4\" fill-opacity=\"0.35\">\n", out);
	for (i = 0; i < s->n_points; i++)
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\"/>\n", px(f, s->points[i].x),
			py(f, s->points[i].y));
	fputs("</g>\n", out);
	for (b = 0; b < ANALYZE_BUCKETS; b++) {
		double lo = analyze_buckets[b].min, hi = analyze_buckets[b].max, mean;

		if (s->bucket_n[b] == 0 || s->bucket_n[b] < o->min_samples)
			continue;
		mean = s->bucket_sum[b] / (double)s->bucket_n[b];
		lo = lo < f->ax.lo ? f->ax.lo : lo;
		hi = hi > f->ax.hi ? f->ax.hi : hi;
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ff7f0e\" stroke-width=\"3\"><title>%s mean %.2f MB (n=%llu)</title></line>\n",
			px(f, lo), py(f, mean), px(f, hi), py(f, mean), analyze_buckets[b].label,
			mean, (unsigned long long)s->bucket_n[b]);
	}
	if (k->fit.ok) {
		double x1 = s->min_x, x2 = s->max_x;

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n",
			px(f, x1), py(f, k->fit.intercept + k->fit.slope * x1), px(f, x2),
			py(f, k->fit.intercept + k->fit.slope * x2));
	}
}

static void draw_panel(FILE *out, double ox, double oy, const char *version,
		       const struct key_result *k, const struct report_opts *o)
{
	const struct key_stats *s = k->stats;
	struct frame f = { ox + MARGIN_L, oy + MARGIN_T, PANEL_W - MARGIN_L - MARGIN_R,
			   PANEL_H - MARGIN_T - MARGIN_B, { 0, 0, 0 }, { 0, 0, 0 } };
	char r[64], pbuf[32];
	double ylo = s->min_y, yhi = s->max_y;

	nice_axis(s->min_x < 0 ? s->min_x : 0, s->max_x, &f.ax);
	if (k->fit.ok) {
		double a = k->fit.intercept + k->fit.slope * s->min_x;
		double b = k->fit.intercept + k->fit.slope * s->max_x;

		ylo = fmin(ylo, fmin(a, b));
		yhi = fmax(yhi, fmax(a, b));
	}
	nice_axis(ylo, yhi, &f.ay);
	fprintf(out, "<g>\n<text x=\"%.1f\" y=\"%.1f\" class=\"title\">", ox + 10, oy + 18);
	xml_text(out, version, strlen(version));
	fputs(" \xc2\xb7 ", out);
	xml_text(out, k->name, k->name_len > 70 ? 70 : k->name_len);
	fputs("</text>\n", out);
	js_to_fixed(k->r, 4, r, sizeof(r));
	report_format_p(k->p, pbuf, sizeof(pbuf));
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"sub\">r = %s, n = %llu, p %s %s",
		ox + 10, oy + 36, r, (unsigned long long)k->n, pbuf[0] == '<' ? "&lt;" : "=",
		pbuf[0] == '<' ? pbuf + 1 : pbuf);
	if (k->fit.ok && isfinite(k->fit.ci_low))
		fprintf(out, ", slope %+.3f MB/h [95%% CI %+.3f, %+.3f]", k->fit.slope,
			k->fit.ci_low, k->fit.ci_high);
	fputs("</text>\n", out);
	draw_axes(out, &f);
	if (s->trend.n)
		draw_data(out, &f, k, o);
	fputs("</g>\n", out);
}

/* The chart, drawn into OUT. */
static void draw_chart(FILE *out, const struct version_result *r, size_t n,
		       const struct report_opts *o)
{
	size_t i, j, panels = 0, p = 0, rows;

	for (i = 0; i < n; i++)
		panels += r[i].n_keys;
	rows = panels ? (panels + COLS - 1) / COLS : 1;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\">\n"
		"<style>text{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;fill:#222}"
		".title{font-size:14px;font-weight:bold}.sub{font-size:11px;fill:#444}"
		".tick{font-size:10px;fill:#555}.label{font-size:11px}</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
		PANEL_W * COLS, rows * PANEL_H + 30, PANEL_W * COLS, rows * PANEL_H + 30);
	fprintf(out, "<text x=\"10\" y=\"20\" class=\"title\">Memory vs uptime: points (sample), bucket means (orange), least-squares trend (red dashes)</text>\n");
	if (!panels)
		fprintf(out, "<text x=\"10\" y=\"60\" class=\"sub\">No key has enough samples.</text>\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < r[i].n_keys; j++, p++)
			draw_panel(out, (double)(p % COLS) * PANEL_W, 30.0 + (double)(p / COLS) * PANEL_H,
				   r[i].v->name, &r[i].keys[j], o);
	fputs("</svg>\n", out);
}

/* The chart is drawn in memory and then replaces PATH whole (written
 * beside it, then renamed; a symlink at PATH is replaced, not followed),
 * so a failed write leaves an earlier chart as it was. */
int report_write_svg(const char *path, const struct version_result *r, size_t n,
		     const struct report_opts *o)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[PATH_MAX], err[PATH_MAX + 256];
	struct output_dir *d = NULL;
	char *buf = NULL;
	size_t len = 0;
	bool was_new;
	struct stat id;
	FILE *out = open_memstream(&buf, &len);
	int rc = -1;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + (slash == path) : 1,
		 slash ? path : ".");
	if (!out) {
		snprintf(err, sizeof(err), "cannot write %s: %s", path, strerror(errno));
		goto done;
	}
	draw_chart(out, r, n, o);
	if (fclose(out) != 0) {
		out = NULL;
		snprintf(err, sizeof(err), "cannot write %s: %s", path, strerror(errno));
		goto done;
	}
	out = NULL;
	output_dir_name_option("--svg FILE");
	d = output_dir_open(dir, err, sizeof(err));
	if (d && output_dir_replace(d, base, buf, len, &was_new, &id, err, sizeof(err)) == 0)
		rc = 0;
done:
	if (rc)
		fprintf(stderr, "pmetrics: analyze: %s\n", err);
	if (out)
		fclose(out);
	if (d)
		output_dir_close(d);
	free(buf);
	return rc;
}

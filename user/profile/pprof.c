// SPDX-License-Identifier: MIT
/* pprof's profile.proto (user/profile/pprof.proto), built with
 * protobuf-c and gzip-compressed by zlib: what `go tool pprof` and
 * every pprof viewer read.
 *
 * Sample types: samples/count, cpu/nanoseconds and, when off-CPU samples
 * are kept, off_cpu/nanoseconds and wall/nanoseconds (on- and off-CPU
 * time together, what a flame graph weighed by time shows). The default
 * is samples, or the time of the report's weight (wall, or cpu when no
 * off-CPU sample is kept). One Sample per
 * aggregate (stack x span set x kind), its span states as "span" labels
 * (pprof -tagfocus span=STATE). One Location per frame with one Line;
 * Functions by name and file: Python frames carry their file and line,
 * kernel frames lose the "_[k]" mark and get the file "[kernel]", an
 * unresolved frame keeps "module+0xoffset" as its name. The losses are
 * comments (pprof -comments). */
#include "outputs.h"
#include "profile/pprof.pb-c.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* Everything the message points to, freed in one place. */
struct pprof_build {
	struct intern strings;
	struct intern func_keys;
	Profile prof;
	ValueType types[4], period_type, *type_ptrs[4];
	Sample *samples, **sample_ptrs;
	Label *labels, **label_ptrs;
	uint64_t *loc_ids;
	int64_t *values;
	Location *locs, **loc_ptrs;
	Line *lines, **line_ptrs;
	Function *funcs, **func_ptrs;
	int64_t *comments;
	bool oom;
};

/* V as pprof's signed 64 bits, held at INT64_MAX (a sum of many long
 * off-CPU waits). */
static int64_t held_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int64_t str_id(struct pprof_build *pb, const char *s)
{
	long i = intern_add(&pb->strings, s, strlen(s));

	if (i < 0) {
		pb->oom = true;
		return 0;
	}
	return i;
}

static void *zalloc(struct pprof_build *pb, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		pb->oom = true;
	return p;
}

static void value_type(struct pprof_build *pb, ValueType *t, const char *type, const char *unit)
{
	perftools__profiles__value_type__init(t);
	t->type = str_id(pb, type);
	t->unit = str_id(pb, unit);
}

/* One Function per (name, file), one Location per frame. */
static void build_locations(struct pprof_build *pb, const struct profile *p)
{
	size_t n = p->frames.n;
	char key[8192 * 2 + 2];

	pb->locs = zalloc(pb, n, sizeof(Location));
	pb->loc_ptrs = zalloc(pb, n, sizeof(Location *));
	pb->lines = zalloc(pb, n, sizeof(Line));
	pb->line_ptrs = zalloc(pb, n, sizeof(Line *));
	pb->funcs = zalloc(pb, n, sizeof(Function));
	pb->func_ptrs = zalloc(pb, n, sizeof(Function *));
	if (pb->oom)
		return;
	for (size_t i = 0; i < n; i++) {
		struct profile_frame_parts parts;
		char *buf = malloc(p->frames.len[i] + 1);
		if (!buf) {
			pb->oom = true;
			return;
		}
		profile_frame_parse(p->frames.str[i], buf, &parts);
		const char *file = parts.form == FRAME_KERNEL ? "[kernel]" : parts.file;
		int klen = snprintf(key, sizeof(key), "%s%c%s", parts.name, 0, file);
		size_t before = pb->func_keys.n;
		long f = intern_add(&pb->func_keys, key, (size_t)klen < sizeof(key) ? (size_t)klen : sizeof(key) - 1);
		if (f < 0) {
			free(buf);
			pb->oom = true;
			return;
		}
		if (pb->func_keys.n > before) {
			Function *fn = &pb->funcs[f];
			perftools__profiles__function__init(fn);
			fn->id = (uint64_t)f + 1;
			fn->name = str_id(pb, parts.name);
			fn->system_name = fn->name;
			fn->filename = str_id(pb, file);
			pb->func_ptrs[f] = fn;
		}
		Line *ln = &pb->lines[i];
		perftools__profiles__line__init(ln);
		ln->function_id = (uint64_t)f + 1;
		ln->line = (int64_t)parts.line;
		pb->line_ptrs[i] = ln;
		Location *loc = &pb->locs[i];
		perftools__profiles__location__init(loc);
		loc->id = i + 1;
		loc->n_line = 1;
		loc->line = &pb->line_ptrs[i];
		pb->loc_ptrs[i] = loc;
		free(buf);
	}
	pb->prof.n_location = n;
	pb->prof.location = pb->loc_ptrs;
	pb->prof.n_function = pb->func_keys.n;
	pb->prof.function = pb->func_ptrs;
}

static void build_samples(struct pprof_build *pb, const struct profile *p, size_t n_types)
{
	size_t n_locs = 0, n_labels = 0;
	int64_t span_key = str_id(pb, "span");

	for (size_t i = 0; i < p->n_aggs; i++) {
		n_locs += p->stacks[p->aggs[i].stack].depth;
		n_labels += p->span_sets[p->aggs[i].span_set].n;
	}
	pb->samples = zalloc(pb, p->n_aggs, sizeof(Sample));
	pb->sample_ptrs = zalloc(pb, p->n_aggs, sizeof(Sample *));
	pb->loc_ids = zalloc(pb, n_locs, sizeof(uint64_t));
	pb->values = zalloc(pb, p->n_aggs * n_types, sizeof(int64_t));
	pb->labels = zalloc(pb, n_labels, sizeof(Label));
	pb->label_ptrs = zalloc(pb, n_labels, sizeof(Label *));
	if (pb->oom)
		return;
	uint64_t *loc = pb->loc_ids;
	int64_t *val = pb->values;
	Label *lab = pb->labels;
	Label **labp = pb->label_ptrs;
	for (size_t i = 0; i < p->n_aggs; i++) {
		const struct profile_agg *a = &p->aggs[i];
		const struct profile_stack *st = &p->stacks[a->stack];
		const struct profile_span_set *set = &p->span_sets[a->span_set];
		Sample *s = &pb->samples[i];

		perftools__profiles__sample__init(s);
		s->location_id = loc;
		s->n_location_id = st->depth;
		for (uint32_t d = 0; d < st->depth; d++) /* the leaf first */
			*loc++ = (uint64_t)st->frames[st->depth - 1 - d] + 1;
		s->value = val;
		s->n_value = n_types;
		val[0] = (int64_t)a->count;
		val[1] = a->kind == PROFILE_ON_CPU ? held_i64(a->weight_ns) : 0;
		if (n_types > 2) {
			val[2] = a->kind == PROFILE_OFF_CPU ? held_i64(a->weight_ns) : 0;
			val[3] = held_i64(a->weight_ns);
		}
		val += n_types;
		s->label = labp;
		s->n_label = set->n;
		for (uint32_t k = 0; k < set->n; k++) {
			perftools__profiles__label__init(lab);
			lab->key = span_key;
			lab->str = str_id(pb, p->states.str[set->states[k]]);
			*labp++ = lab++;
		}
		pb->sample_ptrs[i] = s;
	}
	pb->prof.n_sample = p->n_aggs;
	pb->prof.sample = pb->sample_ptrs;
}

static void build_comments(struct pprof_build *pb, const struct profile *p,
			   const struct report_view *v)
{
	char line[1024];
	size_t n = 0;

	pb->comments = zalloc(pb, p->n_losses + 2, sizeof(int64_t));
	if (pb->oom)
		return;
	snprintf(line, sizeof(line), "pmetrics report %s%s%s", v->source, *v->filter ? " " : "",
		 v->filter);
	pb->comments[n++] = str_id(pb, line);
	for (size_t i = 0; i < p->n_losses; i++) {
		const char *text = profile_loss_text(p->losses[i].reason);
		snprintf(line, sizeof(line), "lost: %" PRIu64 " %s%s%s%s", p->losses[i].count,
			 p->losses[i].reason, text ? " (" : "", text ? text : "", text ? ")" : "");
		pb->comments[n++] = str_id(pb, line);
	}
	pb->prof.comment = pb->comments;
	pb->prof.n_comment = n;
}

static void time_range(const struct profile *p, uint64_t period, Profile *prof)
{
	uint64_t first = 0, last = 0;
	bool any = false;

	for (size_t i = 0; i < p->n_samples; i++) {
		if (!p->samples[i].kept)
			continue;
		if (!any)
			first = p->samples[i].time_ns;
		last = p->samples[i].time_ns;
		any = true;
	}
	prof->time_nanos = held_i64(first);
	prof->duration_nanos = held_i64(last - first + period);
}

static void build_free(struct pprof_build *pb)
{
	intern_free(&pb->strings);
	intern_free(&pb->func_keys);
	free(pb->samples);
	free(pb->sample_ptrs);
	free(pb->labels);
	free(pb->label_ptrs);
	free(pb->loc_ids);
	free(pb->values);
	free(pb->locs);
	free(pb->loc_ptrs);
	free(pb->lines);
	free(pb->line_ptrs);
	free(pb->funcs);
	free(pb->func_ptrs);
	free(pb->comments);
}

/* RAW as a gzip member (no file name, time 0: the same bytes each run). */
static int gzip_into(const uint8_t *raw, size_t len, struct out_buf *b, char *err, size_t errlen)
{
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(err, errlen, "zlib: cannot start compressing");
		return -1;
	}
	size_t bound = deflateBound(&z, len);
	out_put(b, "", 0);
	char *dst = malloc(bound);
	if (!dst) {
		deflateEnd(&z);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	z.next_in = (Bytef *)raw;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)dst;
	z.avail_out = (uInt)bound;
	rc = deflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END) {
		deflateEnd(&z);
		free(dst);
		snprintf(err, errlen, "zlib: compressing failed (%d)", rc);
		return -1;
	}
	out_put(b, dst, z.total_out);
	deflateEnd(&z);
	free(dst);
	return 0;
}

int profile_pprof(const struct profile *p, const struct report_view *v, struct out_buf *b,
		  char *err, size_t errlen)
{
	struct pprof_build pb;
	bool off_cpu = p->kept_count[PROFILE_OFF_CPU] > 0;
	size_t n_types = off_cpu ? 4 : 2;
	const char *shown = v->weight == PROFILE_WEIGHT_SAMPLES ? "samples" : off_cpu ? "wall" : "cpu";
	uint64_t period = profile_period_ns(p);
	int rc = -1;

	memset(&pb, 0, sizeof(pb));
	intern_init(&pb.strings);
	intern_init(&pb.func_keys);
	perftools__profiles__profile__init(&pb.prof);
	str_id(&pb, ""); /* string_table[0] */
	value_type(&pb, &pb.types[0], "samples", "count");
	value_type(&pb, &pb.types[1], "cpu", "nanoseconds");
	value_type(&pb, &pb.types[2], "off_cpu", "nanoseconds");
	value_type(&pb, &pb.types[3], "wall", "nanoseconds");
	for (size_t i = 0; i < 4; i++)
		pb.type_ptrs[i] = &pb.types[i];
	pb.prof.sample_type = pb.type_ptrs;
	pb.prof.n_sample_type = n_types;
	value_type(&pb, &pb.period_type, "cpu", "nanoseconds");
	pb.prof.period_type = &pb.period_type;
	pb.prof.period = (int64_t)period;
	pb.prof.default_sample_type = str_id(&pb, shown);
	time_range(p, period, &pb.prof);
	build_locations(&pb, p);
	if (!pb.oom)
		build_samples(&pb, p, n_types);
	if (!pb.oom)
		build_comments(&pb, p, v);
	if (pb.oom) {
		snprintf(err, errlen, "out of memory building the pprof profile");
		goto out;
	}
	pb.prof.string_table = pb.strings.str;
	pb.prof.n_string_table = pb.strings.n;
	size_t len = perftools__profiles__profile__get_packed_size(&pb.prof);
	uint8_t *raw = malloc(len ? len : 1);
	if (!raw) {
		snprintf(err, errlen, "out of memory packing the pprof profile");
		goto out;
	}
	perftools__profiles__profile__pack(&pb.prof, raw);
	rc = gzip_into(raw, len, b, err, errlen);
	free(raw);
	if (rc == 0 && b->oom) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
out:
	build_free(&pb);
	return rc;
}

// SPDX-License-Identifier: MIT
/* The flame graph: one self-contained SVG (inline CSS and script, no
 * network), root at the bottom, children in name order, widths by
 * sample count or by time (the report's weight). The C code draws the whole profile, so the file shows
 * it even where scripts do not run; the script holds the same tree and
 * redraws it for zoom (click), search (matched frames in magenta and
 * their share) and the span-state filter, by the same layout rules. Same
 * input, same bytes: every order is sorted, every number printed with a
 * fixed precision. */
#include "outputs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1200
#define PAD 10
#define FRAME_H 17
#define TOP 76     /* below the title and the controls */
#define BOTTOM 28  /* the details line */
#define CHAR_W 7.0 /* monospace 12px */
#define MIN_W 0.1  /* narrower frames are not drawn */
#define NO_FRAME UINT32_MAX

struct node {
	uint32_t frame, parent, depth;
	uint32_t first_child, next_sibling;
	uint64_t value; /* samples, or nanoseconds */
	uint64_t off;   /* the part of it off the CPU */
};

struct tree {
	struct node *nodes;
	size_t n, cap;
	uint32_t *order;  /* pre-order, children by name */
	uint32_t *pos;    /* node -> its place in order */
	uint32_t *leaf;   /* agg -> node */
	uint32_t max_depth;
	const struct profile *p;
	enum profile_weight weight;
	bool mixed; /* on- and off-CPU samples: a frame says its off-CPU part */
};

static long add_node(struct tree *t, uint32_t parent, uint32_t frame)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct node *n = realloc(t->nodes, cap * sizeof(*n));
		if (!n)
			return -1;
		t->nodes = n;
		t->cap = cap;
	}
	struct node *n = &t->nodes[t->n];
	*n = (struct node){ .frame = frame, .parent = parent, .first_child = NO_FRAME,
			    .next_sibling = NO_FRAME };
	if (parent != NO_FRAME) {
		n->depth = t->nodes[parent].depth + 1;
		n->next_sibling = t->nodes[parent].first_child;
		t->nodes[parent].first_child = (uint32_t)t->n;
		if (n->depth > t->max_depth)
			t->max_depth = n->depth;
	}
	return (long)t->n++;
}

static int build_tree(struct tree *t, const struct profile *p, enum profile_weight weight)
{
	struct u64map child;
	int rc = -1;

	memset(t, 0, sizeof(*t));
	t->p = p;
	t->weight = weight;
	t->mixed = p->kept_count[PROFILE_ON_CPU] && p->kept_count[PROFILE_OFF_CPU];
	u64map_init(&child);
	t->leaf = malloc((p->n_aggs ? p->n_aggs : 1) * sizeof(*t->leaf));
	if (!t->leaf || add_node(t, NO_FRAME, NO_FRAME) < 0)
		goto out;
	for (size_t a = 0; a < p->n_aggs; a++) {
		const struct profile_stack *s = &p->stacks[p->aggs[a].stack];
		uint32_t at = 0;
		uint64_t value = profile_agg_value(&p->aggs[a], weight);
		uint64_t off = p->aggs[a].kind == PROFILE_OFF_CPU ? value : 0;

		t->nodes[0].value = profile_add_held(t->nodes[0].value, value);
		t->nodes[0].off = profile_add_held(t->nodes[0].off, off);
		for (uint32_t d = 0; d < s->depth; d++) {
			uint64_t key = (uint64_t)at << 32 | s->frames[d];
			long n = u64map_get(&child, key);
			if (n < 0) {
				n = add_node(t, at, s->frames[d]);
				if (n < 0 || u64map_put(&child, key, (uint32_t)n))
					goto out;
			}
			at = (uint32_t)n;
			t->nodes[at].value = profile_add_held(t->nodes[at].value, value);
			t->nodes[at].off = profile_add_held(t->nodes[at].off, off);
		}
		t->leaf[a] = at;
	}
	rc = 0;
out:
	u64map_free(&child);
	return rc;
}

static const struct profile *sort_p;
static const struct node *sort_nodes;

static int by_name(const void *a, const void *b)
{
	const struct node *x = &sort_nodes[*(const uint32_t *)a], *y = &sort_nodes[*(const uint32_t *)b];

	return strcmp(sort_p->frames.str[x->frame], sort_p->frames.str[y->frame]);
}

/* Pre-order with each node's children sorted by frame name. */
static int order_tree(struct tree *t)
{
	uint32_t *stack = malloc(t->n * sizeof(*stack)), *kids = malloc(t->n * sizeof(*kids));
	size_t top = 0, k = 0;

	t->order = malloc(t->n * sizeof(*t->order));
	t->pos = malloc(t->n * sizeof(*t->pos));
	if (!stack || !kids || !t->order || !t->pos) {
		free(stack);
		free(kids);
		return -1;
	}
	sort_p = t->p;
	sort_nodes = t->nodes;
	stack[top++] = 0;
	while (top) {
		uint32_t n = stack[--top], m = 0;
		t->pos[n] = (uint32_t)k;
		t->order[k++] = n;
		for (uint32_t c = t->nodes[n].first_child; c != NO_FRAME; c = t->nodes[c].next_sibling)
			kids[m++] = c;
		qsort(kids, m, sizeof(*kids), by_name);
		while (m) /* pushed last to first: the first name comes out first */
			stack[top++] = kids[--m];
	}
	free(stack);
	free(kids);
	return 0;
}

static void tree_free(struct tree *t)
{
	free(t->nodes);
	free(t->order);
	free(t->pos);
	free(t->leaf);
}

/* A frame's colour: its form picks the palette, its name's hash the shade. */
static void frame_colour(const char *name, char *buf, size_t size)
{
	struct profile_frame_parts parts;
	char *copy = strdup(name);
	uint64_t h = fnv1a64(name, strlen(name));
	unsigned v1 = (unsigned)(h & 0xff), v2 = (unsigned)(h >> 8 & 0xff), v3 = (unsigned)(h >> 16 & 0xff);

	if (!copy) {
		snprintf(buf, size, "#e0e0e0");
		return;
	}
	profile_frame_parse(name, copy, &parts);
	switch (parts.form) {
	case FRAME_PYTHON:
		snprintf(buf, size, "#%02x%02x%02x", 90 + v1 % 60, 170 + v2 % 50, 205 + v3 % 45);
		break;
	case FRAME_KERNEL:
		snprintf(buf, size, "#%02x%02x%02x", 225 + v1 % 25, 140 + v2 % 60, 40 + v3 % 30);
		break;
	case FRAME_UNRESOLVED:
		snprintf(buf, size, "#%02x%02x%02x", 175 + v1 % 30, 175 + v1 % 30, 175 + v1 % 30);
		break;
	default:
		snprintf(buf, size, "#%02x%02x%02x", 205 + v1 % 50, 60 + v2 % 170, 30 + v3 % 50);
	}
	free(copy);
}

static const char style[] =
"<style>\n"
"text{font-family:monospace;font-size:12px;fill:#000}\n"
"#title{font-size:17px;font-family:sans-serif}\n"
"#sub,#details,#matched{font-family:sans-serif;font-size:12px}\n"
".f rect{stroke:#fff;stroke-width:0.5}\n"
".f:hover rect{stroke:#000;stroke-width:1}\n"
".f text{pointer-events:none}\n"
".f.anc rect{opacity:0.55}\n"
".f.match rect{fill:#e040e0}\n"
".controls{font-family:sans-serif;font-size:12px}\n"
".controls input,.controls select,.controls button{font-size:12px;margin-right:12px}\n"
"</style>\n";

/* The script: the same layout as draw_frames() below, for any zoom and
 * filter. D is the data written by write_data(). */
static const char script[] =
"var SVGNS='http://www.w3.org/2000/svg',W=" "1200" ",PAD=10,FH=17,TOP=76,CW=7.0;\n"
"var zoom=0,state=-1,re=null,cnt=[],offc=[],xs=[],total=0;\n"
"var N=D.parent.length,depth=[],end=[];\n"
"function prep(){for(var i=0;i<N;i++){depth[i]=i?depth[D.parent[i]]+1:0;end[i]=i;}\n"
" for(var i=N-1;i>0;i--){var p=D.parent[i];if(end[i]>end[p])end[p]=end[i];}}\n"
"function keep(l){if(state<0)return true;var s=D.sets[l[1]];for(var k=0;k<s.length;k++)if(s[k]==state)return true;return false;}\n"
"function count(){cnt=new Array(N).fill(0);offc=new Array(N).fill(0);xs=new Array(N).fill(0);var off=new Array(N).fill(0);\n"
" D.leaves.forEach(function(l){if(keep(l)){cnt[l[0]]+=l[2];if(l[3])offc[l[0]]+=l[2];}});\n"
" for(var i=N-1;i>0;i--){cnt[D.parent[i]]+=cnt[i];offc[D.parent[i]]+=offc[i];}\n"
" for(var i=1;i<N;i++){var p=D.parent[i];xs[i]=off[p];off[p]+=cnt[i];off[i]=xs[i];}\n"
" total=cnt[0];}\n"
"function name(i){return i?D.names[D.name[i]]:'all';}\n"
"function fixed2(n,d){var h=Math.round(n*100/d);return Math.floor(h/100)+'.'+('0'+h%100).slice(-2);}\n"
"function share(c){return total?fixed2(100*c,total):'0.00';}\n"
"function amount(v){if(!D.time)return v+' sample'+(v==1?'':'s');\n"
" return v>=1e9?fixed2(v,1e9)+' s':v>=1e6?fixed2(v,1e6)+' ms':v>=1e3?fixed2(v,1e3)+' \\u00b5s':v+' ns';}\n"
"function label(i){return name(i)+' ('+amount(cnt[i])+', '+share(cnt[i])+'%'+(D.mixed&&offc[i]?', off-CPU '+amount(offc[i]):'')+')';}\n"
"function isAnc(i,z){return i<=z&&z<=end[i];}\n"
"function matches(i){return re!==null&&i>0&&re.test(name(i));}\n"
"function draw(){var g=document.getElementById('frames');while(g.firstChild)g.removeChild(g.firstChild);\n"
" var span=W-2*PAD,scale=cnt[zoom]?span/cnt[zoom]:0,org=xs[zoom],md=0;\n"
" for(var i=0;i<N;i++)if(cnt[i]>0&&depth[i]>md)md=depth[i];\n"
" for(var i=0;i<N;i++){if(!cnt[i])continue;var x,w,anc=false;\n"
"  if(isAnc(i,zoom)){x=PAD;w=span;anc=i!=zoom;}\n"
"  else if(zoom<=i&&i<=end[zoom]){x=PAD+(xs[i]-org)*scale;w=cnt[i]*scale;}else continue;\n"
"  if(w<0.1)continue;\n"
"  var y=TOP+(D.maxd-depth[i])*FH,e=document.createElementNS(SVGNS,'g');\n"
"  e.setAttribute('class','f'+(anc?' anc':'')+(matches(i)?' match':''));e.setAttribute('data-n',i);\n"
"  var t=document.createElementNS(SVGNS,'title');t.textContent=label(i);e.appendChild(t);\n"
"  var r=document.createElementNS(SVGNS,'rect');r.setAttribute('x',x.toFixed(2));r.setAttribute('y',y);\n"
"  r.setAttribute('width',w.toFixed(2));r.setAttribute('height',FH-1);r.setAttribute('rx',2);\n"
"  r.setAttribute('fill',i?D.colours[D.name[i]]:'#c8c8c8');e.appendChild(r);\n"
"  var n=Math.floor((w-6)/CW);if(n>=3){var s=name(i);if(s.length>n)s=s.substr(0,n-2)+'..';\n"
"   var tx=document.createElementNS(SVGNS,'text');tx.setAttribute('x',(x+3).toFixed(2));\n"
"   tx.setAttribute('y',y+FH-5);tx.textContent=s;e.appendChild(tx);}\n"
"  g.appendChild(e);}\n"
" var m=0;if(re!==null){var under=new Array(N).fill(false);\n"
"  for(var i=1;i<N;i++){var p=D.parent[i];under[i]=under[p]||matches(p);if(matches(i)&&!under[i])m+=cnt[i];}}\n"
" document.getElementById('matched').textContent=re===null?'':'Matched: '+share(m)+'% ('+(D.time?amount(m)+' of '+amount(total):m+' of '+amount(total))+')';\n"
" document.getElementById('sub').textContent=amount(total)+D.what+(state<0?'':' inside '+D.states[state])+D.note;\n"
" document.getElementById('details').textContent=zoom?'Zoomed to '+label(zoom)+'; click all to zoom out':' ';}\n"
"function init(){prep();count();\n"
" var g=document.getElementById('frames');\n"
" g.addEventListener('click',function(ev){var e=ev.target.closest('.f');if(!e)return;var i=+e.getAttribute('data-n');zoom=(i==zoom&&i)?D.parent[i]:i;draw();});\n"
" g.addEventListener('mouseover',function(ev){var e=ev.target.closest('.f');if(e)document.getElementById('details').textContent=label(+e.getAttribute('data-n'));});\n"
" document.getElementById('search').addEventListener('input',function(ev){var v=ev.target.value;\n"
"  if(!v){re=null;}else{try{re=new RegExp(v);}catch(x){re=new RegExp(v.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'));}}draw();});\n"
" document.getElementById('span').addEventListener('change',function(ev){state=+ev.target.value;count();if(!cnt[zoom])zoom=0;draw();});\n"
" document.getElementById('reset').addEventListener('click',function(){zoom=0;draw();});\n"
" draw();}\n"
"window.addEventListener('load',init);\n";

static void write_data(struct out_buf *b, const struct tree *t, const char *what,
		       const char *note)
{
	const struct profile *p = t->p;
	char colour[16];

	out_str(b, "var D={\"names\":[");
	for (size_t i = 0; i < p->frames.n; i++) {
		out_str(b, i ? ",\"" : "\"");
		out_json_str(b, p->frames.str[i]);
		out_str(b, "\"");
	}
	out_str(b, "],\n\"colours\":[");
	for (size_t i = 0; i < p->frames.n; i++) {
		frame_colour(p->frames.str[i], colour, sizeof(colour));
		out_printf(b, "%s\"%s\"", i ? "," : "", colour);
	}
	/* nodes in pre-order: parent and frame of each */
	out_str(b, "],\n\"parent\":[");
	for (size_t k = 0; k < t->n; k++) {
		const struct node *n = &t->nodes[t->order[k]];
		out_printf(b, "%s%ld", k ? "," : "", k ? (long)t->pos[n->parent] : -1L);
	}
	out_str(b, "],\n\"name\":[");
	for (size_t k = 0; k < t->n; k++) {
		const struct node *n = &t->nodes[t->order[k]];
		out_printf(b, "%s%ld", k ? "," : "", k ? (long)n->frame : -1L);
	}
	/* what each aggregate adds to its leaf node: [node, span set, value,
	 * off the CPU] */
	out_str(b, "],\n\"leaves\":[");
	for (size_t a = 0; a < p->n_aggs; a++)
		out_printf(b, "%s[%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%d]", a ? "," : "",
			   t->pos[t->leaf[a]], p->aggs[a].span_set,
			   profile_agg_value(&p->aggs[a], t->weight),
			   p->aggs[a].kind == PROFILE_OFF_CPU);
	out_str(b, "],\n\"sets\":[");
	for (size_t s = 0; s < p->span_set_texts.n; s++) {
		out_str(b, s ? ",[" : "[");
		for (uint32_t k = 0; k < p->span_sets[s].n; k++)
			out_printf(b, "%s%" PRIu32, k ? "," : "", p->span_sets[s].states[k]);
		out_str(b, "]");
	}
	out_str(b, "],\n\"states\":[");
	for (size_t s = 0; s < p->states.n; s++) {
		out_str(b, s ? ",\"" : "\"");
		out_json_str(b, p->states.str[s]);
		out_str(b, "\"");
	}
	out_printf(b, "],\n\"maxd\":%" PRIu32 ",\"time\":%d,\"mixed\":%d,\"what\":\"",
		   t->max_depth, t->weight == PROFILE_WEIGHT_TIME, t->mixed);
	out_json_str(b, what);
	out_str(b, "\",\"note\":\"");
	out_json_str(b, note);
	out_str(b, "\"};\n");
}

/* The label of a frame WIDTH px wide, as the script cuts it. */
static void frame_label(struct out_buf *b, const char *name, double width)
{
	long fit = (long)((width - 6) / CHAR_W);
	size_t chars = 0, i = 0, cut = 0;
	char tmp[8192];

	if (fit < 3)
		return;
	/* JavaScript counts UTF-16 units; ASCII names (nearly all) agree. */
	while (name[i]) {
		i += out_utf8_char(name + i);
		chars++;
		if (chars == (size_t)fit - 2)
			cut = i;
	}
	if (chars <= (size_t)fit) {
		out_xml_str(b, name);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%.*s..", (int)cut, name);
	out_xml_str(b, tmp);
}

/* N / D to two places, half rounded up, as the script's fixed2() has
 * it (printf would round a half to even: 1.125 s as "1.12"). */
static void put_fixed2(struct out_buf *b, unsigned __int128 n, uint64_t d)
{
	unsigned __int128 h = d ? (n * 200 + d) / ((unsigned __int128)d * 2) : 0;

	out_printf(b, "%" PRIu64 ".%02u", (uint64_t)(h / 100), (unsigned)(h % 100));
}

/* V as the script's amount() writes it: "12 samples", or a time. */
static void put_amount(struct out_buf *b, const struct tree *t, uint64_t v)
{
	if (t->weight == PROFILE_WEIGHT_SAMPLES) {
		out_printf(b, "%" PRIu64 " sample%s", v, v == 1 ? "" : "s");
		return;
	}
	if (v < 1000) {
		out_printf(b, "%" PRIu64 " ns", v);
		return;
	}
	uint64_t unit = v >= 1000000000 ? 1000000000 : v >= 1000000 ? 1000000 : 1000;
	put_fixed2(b, v, unit);
	out_str(b, unit == 1000000000 ? " s" : unit == 1000000 ? " ms" : " \u00b5s");
}

static void draw_frames(struct out_buf *b, const struct tree *t)
{
	const struct profile *p = t->p;
	double span = WIDTH - 2 * PAD, scale = t->nodes[0].value ? span / (double)t->nodes[0].value : 0;
	uint64_t *x = calloc(t->n, sizeof(*x)), *off = calloc(t->n, sizeof(*off));
	char colour[16];

	if (!x || !off) {
		b->oom = true;
		free(x);
		free(off);
		return;
	}
	for (size_t k = 0; k < t->n; k++) {
		uint32_t i = t->order[k];
		const struct node *n = &t->nodes[i];
		if (k > 0) {
			x[i] = off[n->parent];
			off[n->parent] = profile_add_held(off[n->parent], n->value);
			off[i] = x[i];
		}
		double px = PAD + (double)x[i] * scale, w = (double)n->value * scale;
		if (w < MIN_W)
			continue;
		const char *name = k ? p->frames.str[n->frame] : "all";
		int y = TOP + (int)(t->max_depth - n->depth) * FRAME_H;
		if (k)
			frame_colour(name, colour, sizeof(colour));
		else
			snprintf(colour, sizeof(colour), "#c8c8c8");
		out_printf(b, "<g class=\"f\" data-n=\"%zu\"><title>", k);
		out_xml_str(b, name);
		out_str(b, " (");
		put_amount(b, t, n->value);
		out_str(b, ", ");
		put_fixed2(b, (unsigned __int128)n->value * 100, t->nodes[0].value);
		out_str(b, "%");
		if (t->mixed && n->off) {
			out_str(b, ", off-CPU ");
			put_amount(b, t, n->off);
		}
		out_str(b, ")</title>");
		out_printf(b, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>",
			   px, y, w, FRAME_H - 1, colour);
		if ((long)((w - 6) / CHAR_W) >= 3) {
			out_printf(b, "<text x=\"%.2f\" y=\"%d\">", px + 3, y + FRAME_H - 5);
			frame_label(b, name, w);
			out_str(b, "</text>");
		}
		out_str(b, "</g>\n");
	}
	free(x);
	free(off);
}

static void loss_note(const struct profile *p, char *buf, size_t size)
{
	uint64_t lost = profile_lost_total(p);

	buf[0] = '\0';
	if (lost)
		snprintf(buf, size, "; %" PRIu64 " lost (see pmetrics report's summary)", lost);
}

static int by_state_name(const void *a, const void *b, void *arg)
{
	const struct profile *p = arg;

	return strcmp(p->states.str[*(const size_t *)a], p->states.str[*(const size_t *)b]);
}

/* The search box and the span-state select (states in name order; the
 * option values are the script's state indices). */
static void controls(struct out_buf *b, const struct profile *p)
{
	size_t *idx = malloc((p->states.n ? p->states.n : 1) * sizeof(*idx));

	if (!idx) {
		b->oom = true;
		return;
	}
	for (size_t s = 0; s < p->states.n; s++)
		idx[s] = s;
	qsort_r(idx, p->states.n, sizeof(*idx), by_state_name, (void *)p);
	out_printf(b, "<foreignObject x=\"%d\" y=\"44\" width=\"%d\" height=\"26\">"
		   "<div xmlns=\"http://www.w3.org/1999/xhtml\" class=\"controls\">"
		   "<label>Search <input id=\"search\" type=\"text\" size=\"24\" "
		   "placeholder=\"frame name or regex\"/></label>"
		   "<label>Span state <select id=\"span\"><option value=\"-1\">all samples</option>",
		   PAD, WIDTH - 2 * PAD);
	for (size_t s = 0; s < p->states.n; s++) {
		out_printf(b, "<option value=\"%zu\">", idx[s]);
		out_xml_str(b, p->states.str[idx[s]]);
		out_str(b, "</option>");
	}
	free(idx);
	out_str(b, "</select></label><button id=\"reset\" type=\"button\">Reset zoom</button>"
		   "<span id=\"matched\"></span></div></foreignObject>\n");
}

/* What a time is of, after the amount: " of on- and off-CPU time". */
static const char *time_what(const struct profile *p, enum profile_weight weight)
{
	bool on = p->kept_count[PROFILE_ON_CPU] > 0, off = p->kept_count[PROFILE_OFF_CPU] > 0;

	if (weight == PROFILE_WEIGHT_SAMPLES)
		return "";
	return on && off ? " of on- and off-CPU time" : off ? " of off-CPU time" : " of on-CPU time";
}

int profile_svg(const struct profile *p, const struct report_view *v, struct out_buf *b)
{
	const char *what = time_what(p, v->weight);
	struct tree t;
	char note[128];
	int height;

	if (build_tree(&t, p, v->weight) || order_tree(&t)) {
		tree_free(&t);
		return -1;
	}
	loss_note(p, note, sizeof(note));
	height = TOP + (int)(t.max_depth + 1) * FRAME_H + BOTTOM;
	out_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\">\n", WIDTH, height, WIDTH, height);
	out_str(b, style);
	out_str(b, "<script type=\"text/javascript\"><![CDATA[\n");
	write_data(b, &t, what, note);
	out_str(b, script);
	out_str(b, "]]></script>\n");
	out_printf(b, "<rect width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n", WIDTH, height);
	out_printf(b, "<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">Flame graph: ",
		   WIDTH / 2);
	out_xml_str(b, v->source);
	if (*v->filter) {
		out_str(b, " (");
		out_xml_str(b, v->filter);
		out_str(b, ")");
	}
	out_printf(b, "</text>\n<text id=\"sub\" x=\"%d\" y=\"38\" text-anchor=\"middle\">",
		   WIDTH / 2);
	put_amount(b, &t, t.nodes[0].value);
	out_str(b, what);
	out_xml_str(b, note);
	out_str(b, "</text>\n");
	controls(b, p);
	out_str(b, "<g id=\"frames\">\n");
	draw_frames(b, &t);
	out_printf(b, "</g>\n<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n</svg>\n", PAD,
		   height - 10);
	tree_free(&t);
	return b->oom ? -1 : 0;
}

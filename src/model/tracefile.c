/*
** tracefile.c — the Chrome trace-event file and the SVG picture of a timeline.
*/
#include <jansson.h>
#include <math.h>
#include "buf.h"
#include "diag.h"
#include "err.h"
#include "esc.h"
#include "tracefile.h"

/* ---- Chrome trace events ------------------------------------------------------------------ */

/* A JSON string of s; bytes that are not UTF-8 (a source line may have
   any) become '?'. */
static json_t *jstr(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  char buf[256];
  size_t i = 0;
  for (; s[i] && i + 1 < sizeof buf; i++) buf[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
  buf[i] = 0;
  return json_string(buf);
}

enum { JSON_FLAGS = JSON_COMPACT | JSON_REAL_PRECISION(12) };

/* ---- tracks ---------------------------------------------------------------------------------
** A track is the timeline of one device, or on a mesh of more than
** TRACE_ALL_DEVICES devices, of every device whose events are the same
** (equations, streams, start times and durations: ppermute flows aside):
** a psum over a million devices is one track standing for them all.
** Grouping is a hash table over the devices' event lists, so the trace
** costs time and memory linear in the events, and the file grows with
** the distinct timelines, not the devices.
*/

typedef struct Track {
  int64_t first, second, last, count;    /* its devices: the first (whose events it shows), second, last, how many */
  uint64_t hash;
} Track;

typedef struct Tracks {
  int64_t ndev;
  int32_t *start;          /* device d's events are ev[ord[start[d]]] .. ev[ord[start[d + 1] - 1]] */
  int32_t *ord;
  int32_t *of;             /* each device's track */
  Track *t;
  int n, cap;
} Tracks;

static void tracks_free(void *p) {
  Tracks *k = p;
  mem_free(k->start);
  mem_free(k->ord);
  mem_free(k->of);
  mem_free(k->t);
}

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdu;
}

static uint64_t bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static bool same_event(const TlEvent *a, const TlEvent *b) {
  return a->st == b->st && a->comm == b->comm && a->limit == b->limit && bits(a->start) == bits(b->start) &&
         bits(a->dur) == bits(b->dur);
}

static uint64_t timeline_hash(const Tracks *k, const TlEvent *ev, int64_t d) {
  uint64_t h = (uint64_t)(k->start[d + 1] - k->start[d]);
  for (int32_t i = k->start[d]; i < k->start[d + 1]; i++) {
    const TlEvent *e = &ev[k->ord[i]];
    h = mix(h, (uint64_t)(uintptr_t)e->st);
    h = mix(h, (uint64_t)e->comm << 8 | e->limit);
    h = mix(mix(h, bits(e->start)), bits(e->dur));
  }
  return h;
}

static bool same_timeline(const Tracks *k, const TlEvent *ev, int64_t a, int64_t b) {
  int32_t n = k->start[a + 1] - k->start[a];
  if (n != k->start[b + 1] - k->start[b]) return false;
  for (int32_t i = 0; i < n; i++)
    if (!same_event(&ev[k->ord[k->start[a] + i]], &ev[k->ord[k->start[b] + i]])) return false;
  return true;
}

static int new_track(Tracks *k, int64_t d, uint64_t h) {
  VEC_GROW(k->t, k->cap, k->n + 1);
  k->t[k->n] = (Track){d, -1, d, 1, h};
  return k->n++;
}

/* The tracks of T: its events by device (a counting sort), then devices
   grouped (when `merge`) by equal timelines. */
static void tracks_build(Tracks *k, const Timeline *T, bool merge) {
  int64_t nd = tl_ndevices(T), ne = tl_nevents(T);
  const TlEvent *ev = tl_events(T);
  k->ndev = nd;
  k->start = mem_calloc(sizeof(int32_t) * (size_t)(nd + 1));
  k->ord = mem_alloc(sizeof(int32_t) * (size_t)(ne ? ne : 1));
  k->of = mem_alloc(sizeof(int32_t) * (size_t)(nd ? nd : 1));
  for (int64_t i = 0; i < ne; i++) k->start[ev[i].dev + 1]++;
  for (int64_t d = 0; d < nd; d++) k->start[d + 1] += k->start[d];
  for (int64_t i = 0; i < ne; i++) k->ord[k->start[ev[i].dev]++] = (int32_t)i;
  for (int64_t d = nd; d > 0; d--) k->start[d] = k->start[d - 1];      /* (each start moved on by its count: back) */
  k->start[0] = 0;
  if (!merge) {
    for (int64_t d = 0; d < nd; d++) k->of[d] = new_track(k, d, 0);
    return;
  }
  size_t cap = 16;
  while (cap < 2 * (size_t)nd) cap *= 2;
  int32_t *table = mem_alloc(sizeof(int32_t) * cap);
  err_defer(mem_free, table);
  memset(table, 0xff, sizeof(int32_t) * cap);
  for (int64_t d = 0; d < nd; d++) {
    uint64_t h = timeline_hash(k, ev, d);
    size_t at = (size_t)h & (cap - 1);
    int t = -1;
    for (; table[at] >= 0; at = (at + 1) & (cap - 1))
      if (k->t[table[at]].hash == h && same_timeline(k, ev, k->t[table[at]].first, d)) {
        t = table[at];
        break;
      }
    if (t < 0) {
      t = table[at] = new_track(k, d, h);
    } else {
      Track *r = &k->t[t];
      if (r->count == 1) r->second = d;
      r->last = d;
      r->count++;
    }
    k->of[d] = t;
  }
  err_undefer(table);
  mem_free(table);
}

/* "device 3", "devices 0-1023 (1024 devices)", "devices 0, 2, ..., 1022 (512 devices)". */
static void track_name(const Track *t, char *out, size_t n) {
  if (t->count == 1) snprintf(out, n, "device %lld", (long long)t->first);
  else if (t->last - t->first + 1 == t->count)
    snprintf(out, n, "devices %lld-%lld (%lld devices)", (long long)t->first, (long long)t->last, (long long)t->count);
  else if (t->count == 2) snprintf(out, n, "devices %lld, %lld", (long long)t->first, (long long)t->last);
  else
    snprintf(out, n, "devices %lld, %lld, ..., %lld (%lld devices)", (long long)t->first, (long long)t->second,
             (long long)t->last, (long long)t->count);
}

/* Whether device d shows its own events: it is the first of its track. */
static bool shown(const Tracks *k, int64_t d) { return k->t[k->of[d]].first == d; }

/* The note of a cut trace: "N of M tracks (D of E devices) left out: ...";
   `cut`: the last track written lost its later events. */
static void cut_note(char *out, size_t n, const Tracks *k, int drawn, bool cut, const char *what) {
  int64_t devs = 0;
  for (int t = drawn; t < k->n; t++) devs += k->t[t].count;
  snprintf(out, n, "%d of %d tracks (%lld of %lld devices) left out%s: the %s reached its cap of %d MB", k->n - drawn,
           k->n, (long long)devs, (long long)k->ndev, cut ? ", and the last one shown cut short" : "", what,
           TRACE_CAP_BYTES / 1000000);
}

/* ---- Chrome trace events ------------------------------------------------------------------ */

/* The file and the bytes written to it. */
typedef struct JOut {
  FILE *f;
  size_t n;
  bool first;
} JOut;

static int jwrite(const char *p, size_t n, void *data) {
  JOut *o = data;
  o->n += n;
  return fwrite(p, 1, n, o->f) == n ? 0 : -1;
}

static bool jputs(JOut *o, const char *s) { return jwrite(s, strlen(s), o) == 0; }

/* Write v (taken) to the file as one element of an array (after a comma
   unless first); false when out of memory or the write failed.  The trace
   is written element by element, so that what it holds at once is one
   event, whatever the mesh: a million devices' metadata and events built
   as one document took 12.6 GB. */
static bool put(JOut *o, json_t *v) {
  if (!v) return false;
  bool ok = (o->first || jputs(o, ",")) && json_dump_callback(v, jwrite, o, JSON_FLAGS) == 0;
  json_decref(v);
  o->first = false;
  return ok;
}

static json_t *meta(const char *what, int64_t pid, int tid, const char *name) {
  return json_pack("{s:s, s:s, s:I, s:i, s:{s:s}}", "name", what, "ph", "M", "pid", (json_int_t)pid, "tid", tid,
                   "args", "name", name);
}

static json_t *sort_index(int64_t pid) {
  return json_pack("{s:s, s:s, s:I, s:{s:I}}", "name", "process_sort_index", "ph", "M", "pid", (json_int_t)pid,
                   "args", "sort_index", (json_int_t)pid);
}

/* A track's metadata: a process named for its devices, its two threads. */
static bool put_metadata(JOut *o, const Track *t) {
  char name[128];
  track_name(t, name, sizeof name);
  return put(o, meta("process_name", t->first, 0, name)) && put(o, sort_index(t->first)) &&
         put(o, meta("thread_name", t->first, 0, "compute")) && put(o, meta("thread_name", t->first, 1, "communication"));
}

static json_t *event_json(const TlEvent *e) {
  char name[128];
  tl_event_name(e->st, name, sizeof name);
  const char *prim = e->st->prim >= 0 ? prim_table[e->st->prim].name : "call";
  const char *file = e->st->sp.file >= 0 ? diag_file_name(e->st->sp.file) : "";
  return json_pack("{s:o, s:s, s:s, s:f, s:f, s:I, s:i, s:{s:o, s:i, s:s, s:s, s:f}}", "name", jstr(name), "cat",
                   e->comm ? "communication" : "compute", "ph", "X", "ts", e->start * 1e6, "dur", e->dur * 1e6, "pid",
                   (json_int_t)e->dev, "tid", e->comm ? 1 : 0, "args", "file", jstr(file), "line", e->st->line, "primitive", prim, "limit",
                   cost_limit_name((CostLimit)e->limit), "seconds", e->dur);
}

/* A flow's end: "s" on the sender's event, "f" on the receiver's. */
static json_t *flow_json(const TlEvent *e, bool start) {
  return json_pack("{s:s, s:s, s:s, s:I, s:f, s:I, s:i, s:s}", "name", "ppermute", "cat", "ppermute", "ph",
                   start ? "s" : "f", "id", (json_int_t)(start ? e->flow : e->flow_in), "ts",
                   (e->start + e->dur / 2) * 1e6, "pid", (json_int_t)e->dev, "tid", 1, "bp", "e");
}

/* The flows whose both ends are shown (each device of a merged track but
   its first is not): a bit per flow id, set when both are. */
static uint8_t *shown_flows(const Tracks *k, const Timeline *T) {
  int64_t nf = tl_nflows(T), ne = tl_nevents(T);
  uint8_t *b = mem_calloc((size_t)(nf + 1));       /* 1: the sender shown, 2: the receiver */
  const TlEvent *ev = tl_events(T);
  for (int64_t i = 0; i < ne; i++) {
    if (!shown(k, ev[i].dev)) continue;
    if (ev[i].flow >= 0) b[ev[i].flow] |= 1;
    if (ev[i].flow_in >= 0) b[ev[i].flow_in] |= 2;
  }
  return b;
}

/* A track: its metadata and its first device's events and flows. */
static bool put_track(JOut *o, const Timeline *T, const Tracks *k, const uint8_t *flows, int t, bool *cut) {
  const TlEvent *ev = tl_events(T);
  int64_t d = k->t[t].first;
  bool ok = put_metadata(o, &k->t[t]);
  for (int32_t i = k->start[d]; ok && i < k->start[d + 1]; i++) {
    if (o->n >= TRACE_CAP_BYTES) {
      *cut = true;              /* (one track alone past the cap: its events stop) */
      break;
    }
    const TlEvent *e = &ev[k->ord[i]];
    ok = put(o, event_json(e));
    if (ok && e->flow >= 0 && flows[e->flow] == 3) ok = put(o, flow_json(e, true));
    if (ok && e->flow_in >= 0 && flows[e->flow_in] == 3) ok = put(o, flow_json(e, false));
  }
  return ok;
}

/* The whole trace to f: {"traceEvents":[...],"displayTimeUnit":"ns",
   "otherData":{...}}, one line; tracks stop once the file passes its cap,
   which a note says (in the file, and on stderr). */
static bool put_trace(FILE *f, const Timeline *T, const Tracks *k, const char *title) {
  JOut o = {f, 0, true};
  uint8_t *flows = shown_flows(k, T);
  err_defer(mem_free, flows);
  bool ok = jputs(&o, "{\"traceEvents\":[");
  int t = 0;
  bool cut = false;
  for (; ok && !cut && t < k->n && o.n < TRACE_CAP_BYTES; t++) ok = put_track(&o, T, k, flows, t, &cut);
  char note[224] = "";
  if (ok && (t < k->n || cut)) {
    cut_note(note, sizeof note, k, t, cut, "file");
    ok = put(&o, json_pack("{s:s, s:s, s:s, s:f, s:i, s:i}", "name", note, "ph", "i", "s", "g", "ts", 0.0, "pid", 0,
                           "tid", 0));
    diag_print(stderr, span_none(), "warning", note);
  }
  json_t *other = json_pack("{s:o, s:s, s:I, s:i}", "program", jstr(title), "hardware", tl_hw(T)->name, "devices",
                            (json_int_t)k->ndev, "tracks", k->n);
  if (other && *note) json_object_set_new(other, "note", json_string(note));
  o.first = true;
  ok = ok && jputs(&o, "],\"displayTimeUnit\":\"ns\",\"otherData\":") && put(&o, other) && jputs(&o, "}\n");
  err_undefer(flows);
  mem_free(flows);
  return ok;
}

bool trace_json(const Timeline *T, const char *title, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  mem_scope_begin();
  Tracks k;
  memset(&k, 0, sizeof k);
  err_defer(tracks_free, &k);
  tracks_build(&k, T, tl_ndevices(T) > TRACE_ALL_DEVICES);
  bool ok = put_trace(f, T, &k, title);
  err_undefer(&k);
  tracks_free(&k);
  mem_scope_end();
  if (fclose(f) != 0) ok = false;
  return ok;
}

/* ---- SVG ------------------------------------------------------------------------------------ */

#define SVG_W 960.0
#define LABEL_W 110.0
#define LANE_H 14.0
#define DEV_GAP 6.0

/* A "nice" tick step for a span: 1, 2 or 5 times a power of ten. */
static double tick_step(double span) {
  double raw = span / 8, p = pow(10, floor(log10(raw)));
  return raw / p < 2 ? p : raw / p < 5 ? 2 * p : 5 * p;
}

static void fmt_tick(char *out, size_t n, double t, double step) {
  if (step < 1e-6) snprintf(out, n, "%g ns", round(t * 1e9 * 1000) / 1000);
  else if (step < 1e-3) snprintf(out, n, "%g us", round(t * 1e6 * 1000) / 1000);
  else if (step < 1) snprintf(out, n, "%g ms", round(t * 1e3 * 1000) / 1000);
  else snprintf(out, n, "%g s", t);
}

/* Text in SVG: XML's five characters as entities, and what XML may not
   hold (control bytes, bytes that are not UTF-8) escaped as esc.h shows
   them. */
static void svg_escape(Buf *b, const char *s) {
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    char show[9];
    int w, len = esc_char(s + i, n - i, 0, show, &w);
    if (*show == '<') buf_puts(b, "&lt;");
    else if (*show == '>') buf_puts(b, "&gt;");
    else if (*show == '&') buf_puts(b, "&amp;");
    else if (*show == '"') buf_puts(b, "&quot;");
    else buf_puts(b, show);
    i += (size_t)len;
  }
}

static void svg_axis(Buf *b, double span, double x0, double w, double y) {
  double step = tick_step(span);
  buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", x0, y, x0 + w, y);
  for (double t = 0; t <= span * 1.0001; t += step) {
    double x = x0 + t / span * w;
    char lab[32];
    fmt_tick(lab, sizeof lab, t, step);
    buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>", x, y, x, y + 4);
    buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n", x, y + 15, lab);
  }
}

/* Where the SVG goes: a file, or nothing (measuring: only bytes counted). */
typedef struct SOut {
  FILE *f;
  size_t n;
  bool ok;
} SOut;

static void sput(SOut *o, const Buf *b) {
  o->n += b->n;
  if (o->f && fwrite(b->p, 1, b->n, o->f) != b->n) o->ok = false;
}

/* A track's two lanes: labels and background, then its first device's events. */
static void svg_track(SOut *o, const Timeline *T, const Tracks *k, int t, double y, double span, double w, bool *cut) {
  const Track *tr = &k->t[t];
  char name[128], label[64];
  track_name(tr, name, sizeof name);
  if (tr->count == 1) snprintf(label, sizeof label, "device %lld", (long long)tr->first);
  else if (tr->last - tr->first + 1 == tr->count) snprintf(label, sizeof label, "devices %lld-%lld", (long long)tr->first, (long long)tr->last);
  else snprintf(label, sizeof label, "devices %lld, %lld, ...", (long long)tr->first, (long long)tr->second);
  Buf b = {0};
  err_defer(buf_release, &b);
  if (tr->count == 1) {
    buf_printf(&b, "<text x=\"10\" y=\"%.1f\" font-size=\"10\">%s compute</text>\n", y + 10, label);
    buf_printf(&b, "<text x=\"10\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">comm</text>\n", y + LANE_H + 10);
  } else {                         /* a merged track: its devices, and how many (the whole name as a tooltip) */
    buf_printf(&b, "<text x=\"10\" y=\"%.1f\" font-size=\"10\"><title>%s</title>%s</text>\n", y + 10, name, label);
    buf_printf(&b, "<text x=\"10\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">(%lld devices)</text>\n",
               y + LANE_H + 10, (long long)tr->count);
  }
  buf_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f3f3\"/>\n", LABEL_W, y, w,
             2 * LANE_H);
  sput(o, &b);
  const TlEvent *ev = tl_events(T);
  int64_t d = tr->first;
  for (int32_t i = k->start[d]; i < k->start[d + 1]; i++) {
    if (o->n >= TRACE_CAP_BYTES) {
      *cut = true;              /* (one track alone past the cap: its events stop) */
      break;
    }
    const TlEvent *e = &ev[k->ord[i]];
    buf_reset(&b);
    double x = LABEL_W + e->start / span * w, ww = e->dur / span * w;
    double ey = y + (e->comm ? LANE_H : 0);
    const char *fill = e->comm ? "#f28e2b" : e->st->prim == P_DOT_GENERAL ? "#2c5d9f" : "#8fb3e0";
    char ename[128];
    tl_event_name(e->st, ename, sizeof ename);
    buf_printf(&b, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"white\" "
                   "stroke-width=\"0.3\"><title>",
               x, ey + 1, ww < 0.3 ? 0.3 : ww, LANE_H - 2, fill);
    svg_escape(&b, ename);
    buf_puts(&b, "</title></rect>\n");
    sput(o, &b);
  }
  err_undefer(&b);
  buf_free(&b);
}

bool trace_svg(const Timeline *T, const char *title, const char *path, double min_span) {
  double span = tl_makespan(T);
  if (span < min_span) span = min_span;
  if (span <= 0) span = 1e-9;
  double w = SVG_W - LABEL_W - 20, top = 34, pitch = 2 * LANE_H + DEV_GAP;
  mem_scope_begin();
  Tracks k;
  memset(&k, 0, sizeof k);
  err_defer(tracks_free, &k);
  tracks_build(&k, T, tl_ndevices(T) > TRACE_ALL_DEVICES);
  /* how many tracks fit under the cap (measured as they would be written) */
  SOut m = {NULL, 0, true};
  int drawn = 0;
  bool cut = false;
  while (drawn < k.n && !cut && m.n < TRACE_CAP_BYTES) svg_track(&m, T, &k, drawn, 0, span, w, &cut), drawn++;
  char note[224] = "";
  if (drawn < k.n || cut) cut_note(note, sizeof note, &k, drawn, cut, "picture");
  double h = top + (double)drawn * pitch + (*note ? 16 : 0) + 40;
  FILE *f = fopen(path, "w");
  SOut o = {f, 0, f != NULL};
  Buf b = {0};
  err_defer(buf_release, &b);
  if (f) {
    buf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                   "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
               SVG_W, h);
    buf_puts(&b, "<text x=\"10\" y=\"20\" font-size=\"14\">");
    svg_escape(&b, title);
    char t[96], total[32];
    fmt_tick(total, sizeof total, tl_makespan(T), tl_makespan(T) / 10);
    snprintf(t, sizeof t, " on %s: %s", tl_hw(T)->name, total);
    svg_escape(&b, t);
    buf_puts(&b, "</text>\n");
    /* the legend */
    const char *keys[][2] = {{"#2c5d9f", "dot_general"}, {"#8fb3e0", "other compute"}, {"#f28e2b", "collective"}};
    for (int c = 0; c < 3; c++) {
      double x = SVG_W - 330 + 110 * c;
      buf_printf(&b, "<rect x=\"%.0f\" y=\"10\" width=\"12\" height=\"12\" fill=\"%s\"/>", x, keys[c][0]);
      buf_printf(&b, "<text x=\"%.0f\" y=\"20\" font-size=\"11\">%s</text>\n", x + 16, keys[c][1]);
    }
    sput(&o, &b);
    o.n = 0;                      /* (counted as measured, so the tracks stop where the measure stopped them) */
    for (int t2 = 0; t2 < drawn && o.ok; t2++) svg_track(&o, T, &k, t2, top + (double)t2 * pitch, span, w, &cut);
    buf_reset(&b);
    double y = top + (double)drawn * pitch;
    if (*note) {
      buf_printf(&b, "<text x=\"10\" y=\"%.1f\" font-size=\"11\">", y + 12);
      svg_escape(&b, note);
      buf_puts(&b, "</text>\n");
      y += 16;
    }
    svg_axis(&b, span, LABEL_W, w, y + 4);
    buf_puts(&b, "</svg>\n");
    sput(&o, &b);
  }
  if (*note && f) diag_print(stderr, span_none(), "warning", note);
  err_undefer(&b);
  buf_free(&b);
  err_undefer(&k);
  tracks_free(&k);
  mem_scope_end();
  bool ok = o.ok;
  if (f && fclose(f) != 0) ok = false;
  return ok;
}

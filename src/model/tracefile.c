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

/* Write v (taken) to f as one element of an array (after a comma unless
   first); false when out of memory or the write failed.  The trace is
   written element by element, so that what it holds at once is one
   event, whatever the mesh: a million devices' metadata and events built
   as one document took 12.6 GB. */
static bool put(FILE *f, json_t *v, bool *first) {
  if (!v) return false;
  bool ok = (*first || fputc(',', f) != EOF) && json_dumpf(v, f, JSON_FLAGS) == 0;
  json_decref(v);
  *first = false;
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

/* The metadata: a process per device, its two threads named. */
static bool put_metadata(FILE *f, const Timeline *T, bool *first) {
  bool ok = true;
  for (int64_t d = 0; ok && d < tl_ndevices(T); d++) {
    char name[48];
    snprintf(name, sizeof name, "device %lld", (long long)d);
    ok = put(f, meta("process_name", d, 0, name), first) && put(f, sort_index(d), first) &&
         put(f, meta("thread_name", d, 0, "compute"), first) && put(f, meta("thread_name", d, 1, "communication"), first);
  }
  return ok;
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

/* The whole trace to f: {"traceEvents":[...],"displayTimeUnit":"ns",
   "otherData":{...}}, one line. */
static bool put_trace(FILE *f, const Timeline *T, const char *title) {
  bool first = true;
  bool ok = fputs("{\"traceEvents\":[", f) != EOF && put_metadata(f, T, &first);
  const TlEvent *ev = tl_events(T);
  for (int64_t i = 0; ok && i < tl_nevents(T); i++) {
    ok = put(f, event_json(&ev[i]), &first);
    if (ok && ev[i].flow >= 0) ok = put(f, flow_json(&ev[i], true), &first);
    if (ok && ev[i].flow_in >= 0) ok = put(f, flow_json(&ev[i], false), &first);
  }
  bool last = true;
  return ok && fputs("],\"displayTimeUnit\":\"ns\",\"otherData\":", f) != EOF &&
         put(f, json_pack("{s:o, s:s}", "program", jstr(title), "hardware", tl_hw(T)->name), &last) &&
         fputs("}\n", f) != EOF;
}

bool trace_json(const Timeline *T, const char *title, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  mem_scope_begin();
  bool ok = put_trace(f, T, title);
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

bool trace_svg(const Timeline *T, const char *title, const char *path, double min_span) {
  int64_t ndev = tl_ndevices(T);
  double span = tl_makespan(T);
  if (span < min_span) span = min_span;
  if (span <= 0) span = 1e-9;
  double w = SVG_W - LABEL_W - 20, top = 34;
  double h = top + (double)ndev * (2 * LANE_H + DEV_GAP) + 40;
  Buf b = {0};
  err_defer(buf_release, &b);
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
  for (int k = 0; k < 3; k++) {
    double x = SVG_W - 330 + 110 * k;
    buf_printf(&b, "<rect x=\"%.0f\" y=\"10\" width=\"12\" height=\"12\" fill=\"%s\"/>", x, keys[k][0]);
    buf_printf(&b, "<text x=\"%.0f\" y=\"20\" font-size=\"11\">%s</text>\n", x + 16, keys[k][1]);
  }
  for (int64_t d = 0; d < ndev; d++) {
    double y = top + (double)d * (2 * LANE_H + DEV_GAP);
    buf_printf(&b, "<text x=\"10\" y=\"%.1f\" font-size=\"10\">device %lld compute</text>\n", y + 10, (long long)d);
    buf_printf(&b, "<text x=\"10\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">comm</text>\n", y + LANE_H + 10);
    buf_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f3f3\"/>\n", LABEL_W, y, w,
               2 * LANE_H);
  }
  const TlEvent *ev = tl_events(T);
  for (int64_t i = 0; i < tl_nevents(T); i++) {
    const TlEvent *e = &ev[i];
    double x = LABEL_W + e->start / span * w, ww = e->dur / span * w;
    double y = top + (double)e->dev * (2 * LANE_H + DEV_GAP) + (e->comm ? LANE_H : 0);
    const char *fill = e->comm ? "#f28e2b" : e->st->prim == P_DOT_GENERAL ? "#2c5d9f" : "#8fb3e0";
    char name[128];
    tl_event_name(e->st, name, sizeof name);
    buf_printf(&b, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"white\" "
                   "stroke-width=\"0.3\"><title>",
               x, y + 1, ww < 0.3 ? 0.3 : ww, LANE_H - 2, fill);
    svg_escape(&b, name);
    buf_puts(&b, "</title></rect>\n");
  }
  svg_axis(&b, span, LABEL_W, w, top + (double)ndev * (2 * LANE_H + DEV_GAP) + 4);
  buf_puts(&b, "</svg>\n");
  FILE *f = fopen(path, "w");
  bool ok = f && fwrite(b.p, 1, b.n, f) == b.n;
  if (f && fclose(f) != 0) ok = false;
  err_undefer(&b);
  buf_free(&b);
  return ok;
}

/*
** tracefile.h — writing a modelled timeline (timeline.h) for people to look at.
**
** trace_json writes the Chrome trace-event format (the JSON object form,
** which Perfetto's UI and chrome://tracing open): one process per device
** ("device 3 (i=1, j=1)"), a thread for its compute stream and one for
** its communication stream, a complete event ("ph": "X") per equation run,
** named "LINE: source text", with its limiting resource in its args, and
** for every ppermute a flow ("ph": "s" then "f") from the sender's event
** to the receiver's.  Times are microseconds.
**
** trace_svg draws the same timeline as an SVG picture: a lane per stream
** of each device, compute in blue (matrix multiplies darker), collectives
** in orange, a time axis below.
**
** On a mesh of more than TRACE_ALL_DEVICES devices, devices whose
** timelines are the same (equations, streams, times) share one track,
** named for its devices ("devices 0-999999 (1000000 devices)"), which
** shows the first one's events; a ppermute's flow is drawn when both of
** its ends are so shown.  Neither file grows with the mesh beyond its
** distinct timelines, and both stop adding tracks at TRACE_CAP_BYTES,
** with a note (in the file and on stderr) of what was left out.
*/
#ifndef SHM_TRACEFILE_H
#define SHM_TRACEFILE_H

#include "timeline.h"

/* Up to this many devices every device has a track of its own; beyond,
   devices with the same timeline share one, named for them all. */
enum { TRACE_ALL_DEVICES = 64 };
/* A trace stops taking tracks once its file reaches this size (bytes),
   and says so. */
enum { TRACE_CAP_BYTES = 40000000 };

/* Write the trace to `path`.  false (errno set) when the file cannot be written. */
bool trace_json(const Timeline *T, const char *title, const char *path);
/* The SVG's time axis spans at least min_span seconds (two runs drawn to
   one scale). */
bool trace_svg(const Timeline *T, const char *title, const char *path, double min_span);

#endif

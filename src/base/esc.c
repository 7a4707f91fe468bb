/*
** esc.c — user bytes made safe for a terminal (see esc.h).
*/
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <unistd.h>
#include "esc.h"

/* The well-formed UTF-8 character at p (n > 0 bytes): its length, with
   its code point in *cp; 0 when p does not start one; -1 when the n
   bytes are a well-formed beginning of a longer one. */
static int utf8_decode(const unsigned char *p, size_t n, uint32_t *cp) {
  unsigned c = p[0];
  int len;
  uint32_t v, lo = 0x80, hi = 0xbf;        /* the bounds of the second byte */
  if (c < 0x80) { *cp = c; return 1; }
  if (c < 0xc2 || c > 0xf4) return 0;      /* a continuation byte, an overlong lead, past U+10FFFF */
  if (c < 0xe0) { len = 2; v = c & 0x1f; }
  else if (c < 0xf0) {
    len = 3;
    v = c & 0x0f;
    if (c == 0xe0) lo = 0xa0;              /* overlong */
    if (c == 0xed) hi = 0x9f;              /* a surrogate */
  } else {
    len = 4;
    v = c & 0x07;
    if (c == 0xf0) lo = 0x90;              /* overlong */
    if (c == 0xf4) hi = 0x8f;              /* past U+10FFFF */
  }
  for (int i = 1; i < len; i++) {
    if ((size_t)i >= n) return -1;
    unsigned b = p[i];
    if (i == 1 ? b < lo || b > hi : (b & 0xc0) != 0x80) return 0;
    v = v << 6 | (b & 0x3f);
  }
  *cp = v;
  return len;
}

/* A well-formed character that must not reach a terminal as it is: a C1
   control (a terminal may take U+009B for ESC [), what reorders a line
   (the bidirectional marks, embeddings, overrides and isolates), the line
   and paragraph separators, the byte-order mark. */
static bool hidden(uint32_t c) {
  return (c >= 0x80 && c <= 0x9f) || c == 0x61c || c == 0x200e || c == 0x200f || (c >= 0x2028 && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

/* Columns a printable character takes: 0 for a combining mark, 2 for a
   wide or full-width East Asian character or an emoji, else 1. */
static int columns(uint32_t c) {
  static const uint32_t zero[][2] = {
    {0x300, 0x36f}, {0x483, 0x489}, {0x591, 0x5bd}, {0x610, 0x61a}, {0x64b, 0x65f}, {0x1ab0, 0x1aff},
    {0x1dc0, 0x1dff}, {0x200b, 0x200d}, {0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f},
  };
  static const uint32_t wide[][2] = {
    {0x1100, 0x115f}, {0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
    {0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe30, 0xfe4f}, {0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x1f300, 0x1f64f},
    {0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
  };
  for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
    if (c >= zero[i][0] && c <= zero[i][1]) return 0;
  for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
    if (c >= wide[i][0] && c <= wide[i][1]) return 2;
  return 1;
}

static int show_byte(unsigned char c, char *show) {
  const char *named = c == 0 ? "\\0" : c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : NULL;
  if (named) return (int)strlen(strcpy(show, named));
  return snprintf(show, 8, "\\x%02x", c);
}

int esc_char(const char *s, size_t n, unsigned flags, char *show, int *width) {
  const unsigned char *p = (const unsigned char *)s;
  uint32_t c;
  int len = utf8_decode(p, n, &c);
  if (len <= 0) {                              /* not UTF-8: the byte alone */
    *width = show_byte(p[0], show);
    return 1;
  }
  bool keep = c >= 0x20 ? c != 0x7f : (c == '\n' && (flags & ESC_KEEP_NL)) || (c == '\t' && (flags & ESC_KEEP_TAB));
  if (c >= 0x80 && hidden(c)) {
    *width = snprintf(show, 9, "\\u%04x", (unsigned)(c & 0xffff));   /* (hidden: all below 0x10000) */
    return len;
  }
  if (!keep) {
    *width = show_byte(p[0], show);
    return 1;
  }
  memcpy(show, s, (size_t)len);
  show[len] = 0;
  *width = c < 0x80 ? 1 : columns(c);
  return len;
}

/* Whether the character at p shows as it is; its length in *len. */
static bool plain_char(const char *p, size_t n, unsigned flags, int *len) {
  unsigned char c = (unsigned char)*p;
  if (c >= 0x20 && c < 0x7f) { *len = 1; return true; }
  char show[9];
  int w;
  *len = esc_char(p, n, flags, show, &w);
  return !strncmp(show, p, (size_t)*len) && show[*len] == 0;
}

bool esc_plain(const char *s, size_t n, unsigned flags) {
  for (size_t i = 0; i < n;) {
    int len;
    if (!plain_char(s + i, n - i, flags, &len)) return false;
    i += (size_t)len;
  }
  return true;
}

void esc_buf(Buf *b, const char *s, size_t n, unsigned flags) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;                  /* a run that shows as it is, copied at once */
    int len;
    while (j < n && plain_char(s + j, n - j, flags, &len)) j += (size_t)len;
    if (j > i) buf_put(b, s + i, j - i);
    if (j >= n) break;
    char show[9];
    int w;
    j += (size_t)esc_char(s + j, n - j, flags, show, &w);
    buf_puts(b, show);
    i = j;
  }
  if (!b->p) buf_put(b, "", 0);
}

void esc_fputs(FILE *f, const char *s, size_t n, unsigned flags) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    int len;
    while (j < n && plain_char(s + j, n - j, flags, &len)) j += (size_t)len;
    if (j > i) fwrite(s + i, 1, j - i, f);
    if (j >= n) break;
    char show[9];
    int w;
    j += (size_t)esc_char(s + j, n - j, flags, show, &w);
    fputs(show, f);
    i = j;
  }
}

char *esc_into(char *out, size_t cap, const char *s, size_t n, unsigned flags) {
  size_t k = 0;
  if (cap < 4) {                       /* too small for "..." */
    if (cap) out[0] = 0;
    return out;
  }
  for (size_t i = 0; i < n;) {         /* (room for "..." is kept after each piece) */
    char show[9];
    int w, len = esc_char(s + i, n - i, flags, show, &w);
    size_t m = strlen(show);
    bool last = i + (size_t)len >= n;
    if (k + m + (last ? 1 : 4) > cap) {
      memcpy(out + k, "...", 3);
      k += 3;
      break;
    }
    memcpy(out + k, show, m);
    k += m;
    i += (size_t)len;
  }
  out[k] = 0;
  return out;
}

/* ---- the escaping stream ---------------------------------------------------- */

typedef struct EscOut {
  int fd;
  unsigned char held[4];         /* the beginning of a character the next write completes */
  int nheld;
} EscOut;

static bool write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* Escape s[0..n) to fd through a buffer of its own (no allocation: this
   also writes the message that memory ran out). */
static bool put_escaped(int fd, const char *s, size_t n) {
  char out[4096];
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    char show[9];
    int w, len = esc_char(s + i, n - i, ESC_KEEP_NL | ESC_KEEP_TAB, show, &w);
    size_t m = strlen(show);
    if (k + m > sizeof out) {
      if (!write_all(fd, out, k)) return false;
      k = 0;
    }
    memcpy(out + k, show, m);
    k += m;
    i += (size_t)len;
  }
  return write_all(fd, out, k);
}

/* How many of the last bytes of s[0..n) begin a character not finished. */
static int unfinished(const char *s, size_t n) {
  for (int back = 1; back <= 3 && (size_t)back <= n; back++) {
    unsigned char c = (unsigned char)s[n - (size_t)back];
    if ((c & 0xc0) == 0x80) continue;
    uint32_t cp;
    return c >= 0xc2 && utf8_decode((const unsigned char *)s + n - back, (size_t)back, &cp) < 0 ? back : 0;
  }
  return 0;
}

static ssize_t esc_write(void *cookie, const char *p, size_t n) {
  EscOut *o = cookie;
  size_t used = 0;
  if (o->nheld) {                        /* finish the held character */
    char t[8];
    size_t m = (size_t)o->nheld, add = n < 4 ? n : 4;
    memcpy(t, o->held, m);
    memcpy(t + m, p, add);
    uint32_t cp;
    int len = utf8_decode((const unsigned char *)t, m + add, &cp);
    if (len < 0 && m + add < 4) {        /* still unfinished */
      memcpy(o->held + m, p, add);
      o->nheld += (int)add;
      return (ssize_t)n;
    }
    size_t take = len > 0 ? (size_t)len : 1;   /* not UTF-8: the first byte escaped alone */
    if (take <= m) {
      if (!put_escaped(o->fd, t, take)) return -1;
      memmove(o->held, o->held + take, m - take);
      o->nheld -= (int)take;
      return esc_write(cookie, p, n);
    }
    if (!put_escaped(o->fd, t, take)) return -1;
    o->nheld = 0;
    used = take - m;
  }
  int keep = unfinished(p + used, n - used);
  if (!put_escaped(o->fd, p + used, n - used - (size_t)keep)) return -1;
  memcpy(o->held, p + n - keep, (size_t)keep);
  o->nheld = keep;
  return (ssize_t)n;
}

static void forget(EscOut *o);

static int esc_close(void *cookie) {
  EscOut *o = cookie;
  bool ok = put_escaped(o->fd, (const char *)o->held, (size_t)o->nheld);
  forget(o);
  free(o);
  return ok ? 0 : EOF;
}

/* The streams made, for their held bytes at exit: exit() runs atexit's
   functions before it flushes the streams, and closes none of them. */
static struct { FILE *f; EscOut *o; } made[4];
static int nmade;

static void forget(EscOut *o) {
  for (int i = 0; i < nmade; i++)
    if (made[i].o == o) made[i] = made[--nmade];
}

static void flush_made(void) {
  for (int i = 0; i < nmade; i++) {
    fflush(made[i].f);
    put_escaped(made[i].o->fd, (const char *)made[i].o->held, (size_t)made[i].o->nheld);
    made[i].o->nheld = 0;
  }
}

FILE *esc_stream(int fd, int mode) {
  if (nmade == (int)(sizeof made / sizeof made[0])) return NULL;
  EscOut *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->fd = fd;
  cookie_io_functions_t io = {NULL, esc_write, NULL, esc_close};
  FILE *f = fopencookie(o, "w", io);
  if (!f) {
    free(o);
    return NULL;
  }
  setvbuf(f, NULL, mode, mode == _IONBF ? 0 : BUFSIZ);
  if (!nmade) atexit(flush_made);
  made[nmade].f = f;
  made[nmade++].o = o;
  return f;
}

static FILE *raw_stdout;

void esc_std_streams(void) {
  if (raw_stdout) return;
  raw_stdout = stdout;
  fflush(stdout);
  fflush(stderr);
  /* line-buffered on a terminal, and where the C library's stdout was
     (`stdbuf -oL`: bench/harness.py stamps each line as it arrives) */
  FILE *o = esc_stream(STDOUT_FILENO, isatty(STDOUT_FILENO) || __flbf(raw_stdout) ? _IOLBF : _IOFBF);
  FILE *e = esc_stream(STDERR_FILENO, _IONBF);
  if (o) stdout = o;
  if (e) stderr = e;
}

FILE *esc_raw_stdout(void) { return raw_stdout ? raw_stdout : stdout; }

/*
** pager.c — long output at the REPL's prompt, through $PAGER (pager.h).
**
** Standard output is replaced, for one entry, by a stream (glibc's
** fopencookie) whose writes are kept whole and passed on to the terminal
** until a screenful of lines has gone; what follows is only kept.  At
** the end, when something was kept back, the pager gets all of it, so
** that it can be read from its first line.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "buf.h"
#include "pager.h"

static struct {
  FILE *real;                /* standard output before pager_begin; NULL: not paging */
  Buf all;                   /* everything written since */
  int rows, lines;
  size_t shown;              /* bytes of all that reached the terminal */
  int held;                  /* a screenful went out: the rest is only kept */
} P;

static ssize_t pager_write(void *cookie, const char *p, size_t n) {
  (void)cookie;
  buf_put(&P.all, p, n);
  if (P.held) return (ssize_t)n;
  size_t k = 0;
  while (k < n && !P.held)
    if (p[k++] == '\n' && ++P.lines >= P.rows) P.held = 1;
  fwrite(p, 1, k, P.real);
  fflush(P.real);
  P.shown += k;
  return (ssize_t)n;
}

int pager_rows(void) {
  struct winsize ws;
  if (!isatty(STDOUT_FILENO)) return 0;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row >= 2) return ws.ws_row;
  return 24;
}

void pager_begin(int rows) {
  if (P.real || rows < 2) return;
  fflush(stdout);
  cookie_io_functions_t io = {NULL, pager_write, NULL, NULL};
  FILE *f = fopencookie(NULL, "w", io);
  if (!f) return;
  setvbuf(f, NULL, _IOLBF, 0);
  P.real = stdout;
  P.rows = rows - 1;
  P.lines = 0;
  P.held = 0;
  P.shown = 0;
  buf_reset(&P.all);
  stdout = f;
}

/* Is program `name` on $PATH? */
static int on_path(const char *name) {
  const char *path = getenv("PATH");
  Buf f = {0};
  int found = 0;
  for (const char *p = path ? path : ""; *p && !found;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    buf_reset(&f);
    buf_put(&f, p, n);
    buf_printf(&f, "/%s", name);
    found = access(buf_cstr(&f), X_OK) == 0;
    p += n + (e != NULL);
  }
  buf_free(&f);
  return found;
}

/* The pager's command: $PAGER, else less or more when installed. */
static const char *pager_cmd(void) {
  const char *cmd = getenv("PAGER");
  if (cmd && *cmd) return cmd;
  return on_path("less") ? "less" : on_path("more") ? "more" : NULL;
}

void pager_end(void) {
  if (!P.real) return;
  fclose(stdout);
  stdout = P.real;
  P.real = NULL;
  if (P.held) {
    const char *cmd = pager_cmd();
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);    /* the pager may quit before reading it all */
    FILE *pg = cmd ? popen(cmd, "w") : NULL;
    if (pg) {
      fflush(stdout);
      fwrite(P.all.p, 1, P.all.n, pg);
      pclose(pg);
    } else {
      fwrite(P.all.p + P.shown, 1, P.all.n - P.shown, stdout);   /* no pager: the rest as it is */
    }
    signal(SIGPIPE, old);
  }
  buf_free(&P.all);
}

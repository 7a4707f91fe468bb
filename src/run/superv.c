/*
** superv.c — `--ranks R` watched from outside: which rank died, said
** plainly (see superv.h).
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "superv.h"

#define SUP_ENV "SHMAPI_SUPERVISOR"

/* ---- the rank's side ---------------------------------------------------------------------- */

static int sup_fd = -1;
static struct sigaction old_term;

static void say(const char *s) {
  if (sup_fd < 0) return;
  size_t n = strlen(s);
  while (n) {                                  /* (async-signal-safe: write only) */
    ssize_t w = write(sup_fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* mpirun stops the ranks left when one dies with SIGTERM: a rank that
   says so is not the one that died. */
static void on_term(int sig) {
  say("term\n");
  sigaction(SIGTERM, &old_term, NULL);
  if (old_term.sa_handler != SIG_DFL && old_term.sa_handler != SIG_IGN) old_term.sa_handler(sig);
  else raise(sig);
}

void sup_join(int rank) {
  const char *name = getenv(SUP_ENV);
  if (rank < 0) return;
  if (!name || !*name || strlen(name) + 2 > sizeof ((struct sockaddr_un *)0)->sun_path) return;
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path + 1, name, strlen(name));         /* an abstract name: no file */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  if (connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name)))) {
    close(fd);                                   /* (a rank on another machine: not watched) */
    return;
  }
  sup_fd = fd;
  char s[64];
  snprintf(s, sizeof s, "join %d %ld\n", rank, (long)getpid());
  say(s);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &old_term);
}

void sup_done(int status) {
  char s[32];
  snprintf(s, sizeof s, "done %d\n", status);
  say(s);
}

void sup_abort(void) { say("abort\n"); }

void sup_bye(void) { say("bye\n"); }

/* ---- the test hook --------------------------------------------------------------------- */

static long kill_at = -1, passed[3];
static int kill_kind = -1;          /* SUP_COLLECTIVE, SUP_SYNC, SUP_OUTPUT, or -1: any */
static bool counting;

void sup_hook_init(int rank) {
  const char *h = getenv("SHMAPI_TEST_KILL");
  int r;
  long n;
  char k = 0;
  if (!h || sscanf(h, "%d:%ld:%c", &r, &n, &k) < 2 || r != rank || n < 0) return;
  kill_kind = k == 'c' ? SUP_COLLECTIVE : k == 's' ? SUP_SYNC : k == 'o' ? SUP_OUTPUT : -1;
  counting = n == 0;
  kill_at = n ? n : -1;
}

bool sup_point(SupPoint kind) {
  if (!counting && kill_at < 0) return false;
  passed[kind]++;
  if (counting) return false;
  long n = kill_kind < 0 ? passed[0] + passed[1] + passed[2] : passed[kill_kind];
  return (kill_kind < 0 || kill_kind == (int)kind) && n == kill_at;
}

void sup_die_here(void) {
  fflush(stdout);
  fflush(stderr);
  raise(SIGKILL);
}

bool sup_counted(long counts[3]) {
  for (int k = 0; k < 3; k++) counts[k] = passed[k];
  return counting;
}

/* ---- the launcher's side ------------------------------------------------------------------- */

typedef struct Rank {
  int said;               /* its last word: 0 none yet; 'd' done (its output written), 'b' finished (MPI
                             left), 't' stopped by SIGTERM, 'a' stopping the run itself */
  long order;             /* when it said 't', or its connection ended before 'b' (1, 2, ...), else 0 */
  long pid;
  bool joined;
} Rank;

/* A connection: which rank it is (-1 before its join), its partial line. */
typedef struct Conn {
  int fd, rank;
  char buf[64];
  int n;
} Conn;

static volatile sig_atomic_t child_pid, got_signal;

static void forward(int sig) {
  got_signal = sig;
  if (child_pid > 0) kill((pid_t)child_pid, sig);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* A line connection c sent. */
static void heard(Rank *rk, int nranks, Conn *c, long *events) {
  int r;
  long pid;
  if (c->rank < 0) {
    if (sscanf(c->buf, "join %d %ld", &r, &pid) == 2 && r >= 0 && r < nranks && !rk[r].joined) {
      rk[r].joined = true;
      rk[r].pid = pid;
      c->rank = r;
    }
    return;
  }
  Rank *k = &rk[c->rank];
  if (!strncmp(c->buf, "done ", 5)) k->said = 'd';
  else if (!strcmp(c->buf, "bye")) k->said = 'b';
  else if (!strcmp(c->buf, "abort")) k->said = 'a';
  else if (!strcmp(c->buf, "term") && !k->said) k->said = 't', k->order = ++*events;
}

/* Read what connection c has; true when it has ended. */
static bool read_conn(Conn *c, Rank *rk, int nranks, long *events) {
  char b[256];
  ssize_t n = read(c->fd, b, sizeof b);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
  for (ssize_t i = 0; i < n; i++) {
    if (b[i] != '\n') {
      if (c->n + 1 < (int)sizeof c->buf) c->buf[c->n++] = b[i];
      continue;
    }
    c->buf[c->n] = 0;
    heard(rk, nranks, c, events);
    c->n = 0;
  }
  if (n > 0) return false;
  if (c->rank >= 0 && (!rk[c->rank].said || rk[c->rank].said == 'd')) rk[c->rank].order = ++*events;
  close(c->fd);
  return true;
}

/* What the launcher says after mpirun ended with `wst`, when a rank died. */
static bool silent(const Rank *k) { return k->order && (!k->said || k->said == 'd'); }

static int verdict(const Rank *rk, int nranks, int wst) {
  int code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
  if (got_signal) return code;                     /* the user stopped the run: no rank to blame */
  /* the first rank to end without a word (or, if none did, the first
     stopped by SIGTERM: mpirun stops the others so, after it) */
  int victim = -1, later = 0, unjoined = 0, finished = 0;
  bool any_silent = false, aborted = false;
  for (int r = 0; r < nranks; r++) {
    any_silent |= silent(&rk[r]);
    aborted |= rk[r].said == 'a';
    unjoined += !rk[r].joined;
    finished += rk[r].said == 'b';
  }
  for (int r = 0; r < nranks; r++)
    if (rk[r].order && (silent(&rk[r]) || !any_silent) && (victim < 0 || rk[r].order < rk[victim].order)) victim = r;
  for (int r = 0; r < nranks; r++) later += silent(&rk[r]) && r != victim;
  if (code == 0 && victim < 0) return 0;
  if (aborted) return code;                        /* a rank stopped the run, and said why */
  char how[128] = "";
  if (code > 128 && code < 128 + 65)
    snprintf(how, sizeof how, " (killed by signal %d, SIG%s%s)", code - 128, sigabbrev_np(code - 128),
             code - 128 == SIGKILL ? ": a kill -9, or the kernel's out-of-memory killer" : "");
  else if (code) snprintf(how, sizeof how, " (mpirun's exit status %d)", code);
  /* a rank that never joined, when no rank ended silently: it died while
     starting (killed before it could say which rank it is), and the
     ranks mpirun stopped with SIGTERM after it are not the cause */
  bool only_termed = victim >= 0 && rk[victim].said == 't' && !any_silent;
  if (unjoined && ((victim < 0 && code > 128) || only_termed)) {
    fprintf(stderr, "shmapi: rank%s ", unjoined > 1 ? "s" : "");
    for (int r = 0, k = 0; r < nranks; r++)
      if (!rk[r].joined) fprintf(stderr, "%s%d", k++ ? ", " : "", r);
    fprintf(stderr, " of %d died while starting%s; the run stopped\n", nranks, how);
    return 1;
  }
  if (victim < 0 && finished == nranks && code > 128) {
    fprintf(stderr, "shmapi: a rank died as it exited, after the run had ended%s; rank 0 had written all of the output\n",
            how);
    return 1;
  }
  if (victim < 0) return code;                     /* the ranks ended as they said (their errors were printed) */
  if (rk[victim].said == 't') snprintf(how, sizeof how, " (stopped by signal %d, SIGTERM)", SIGTERM);
  fprintf(stderr, "shmapi: rank %d of %d died%s %s; the other ranks were stopped", victim, nranks, how,
          rk[victim].said == 'd' ? "as it finished" : "before the run ended");
  if (later) fprintf(stderr, " (%d more ended without a word after it)", later);
  fputs(rk[0].said == 'd' || rk[0].said == 'b' ? "\nshmapi: rank 0 had written all of the output\n"
                                               : "\nshmapi: the output above is incomplete: the run did not finish\n",
        stderr);
  return 1;
}

/* Kill what is left: mpirun, then any rank still there. */
static void stop_all(pid_t pid, const Rank *rk, int nranks, int sig) {
  kill(pid, sig);
  if (sig == SIGKILL)
    for (int r = 0; r < nranks; r++)
      if (rk[r].joined && rk[r].pid > 0) kill((pid_t)rk[r].pid, SIGKILL);
}

int sup_run(char **av, int nranks) {
  char name[96];
  snprintf(name, sizeof name, "shmapi-supervisor-%ld-%lx", (long)getpid(), (unsigned long)(now_s() * 1e6));
  int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path + 1, name, strlen(name));
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, alen) || listen(lfd, 64)) {
    if (lfd >= 0) close(lfd);
    lfd = -1;                                      /* run unwatched, as mpirun alone would */
  } else {
    setenv(SUP_ENV, name, 1);
  }
  int ep[2];                                       /* the child's exec error, if any */
  if (pipe2(ep, O_CLOEXEC)) return -errno;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) {
    close(ep[0]);
    if (lfd >= 0) close(lfd);
    execvp(av[0], av);
    int e = errno;
    if (write(ep[1], &e, sizeof e) < 0) _exit(127);
    _exit(127);
  }
  close(ep[1]);
  int e = 0;
  ssize_t got = read(ep[0], &e, sizeof e);
  close(ep[0]);
  if (got == (ssize_t)sizeof e) {
    waitpid(pid, NULL, 0);
    if (lfd >= 0) close(lfd);
    return -e;
  }
  child_pid = pid;
  struct sigaction sa, old[3];
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int k = 0; k < 3; k++) sigaction(sigs[k], &sa, &old[k]);

  Rank *rk = calloc((size_t)nranks, sizeof *rk);
  Conn *cs = calloc((size_t)nranks + 8, sizeof *cs);
  int ncs = 0, capcs = nranks + 8, wst = 0;
  long events = 0;
  double died_at = 0;
  int stage = 0;                                   /* 1: mpirun asked to stop; 2: killed */
  if (!rk || !cs) {
    waitpid(pid, &wst, 0);
    return WIFEXITED(wst) ? WEXITSTATUS(wst) : 1;
  }
  for (;;) {
    struct pollfd p[capcs + 1];
    int np = 0;
    if (lfd >= 0) p[np++] = (struct pollfd){lfd, POLLIN, 0};
    for (int c = 0; c < ncs; c++) p[np++] = (struct pollfd){cs[c].fd, POLLIN, 0};
    poll(p, (nfds_t)np, 50);
    if (lfd >= 0 && (p[0].revents & POLLIN)) {
      int fd;
      while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (ncs == capcs || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) || cr.uid != getuid()) {
          close(fd);                               /* (only this user's processes may speak) */
          continue;
        }
        cs[ncs++] = (Conn){fd, -1, {0}, 0};
      }
    }
    for (int c = 0, k = lfd >= 0; c < ncs; k++) {
      if (p[k].revents && read_conn(&cs[c], rk, nranks, &events)) {
        cs[c] = cs[--ncs];
        p[k] = p[np - 1];                          /* (the moved one is looked at again: harmless) */
        np--;
        k--;
        continue;
      }
      c++;
    }
    pid_t w = waitpid(pid, &wst, WNOHANG);
    if (w == pid) break;
    if (events && !died_at) died_at = now_s();
    /* A rank died: mpirun stops the rest within a second or so; if it
       does not, it is stopped, then killed with what is left. */
    if (died_at && stage == 0 && now_s() - died_at > SUP_GRACE_S) stop_all(pid, rk, nranks, SIGTERM), stage = 1;
    if (died_at && stage == 1 && now_s() - died_at > 2 * SUP_GRACE_S) stop_all(pid, rk, nranks, SIGKILL), stage = 2;
  }
  child_pid = 0;
  /* what the ranks said last (their connections end as they do) */
  for (double end = now_s() + 1; ncs && now_s() < end;) {
    struct pollfd p[capcs];
    for (int c = 0; c < ncs; c++) p[c] = (struct pollfd){cs[c].fd, POLLIN, 0};
    poll(p, (nfds_t)ncs, 20);
    for (int c = 0; c < ncs;) {
      if (p[c].revents && read_conn(&cs[c], rk, nranks, &events)) {
        cs[c] = cs[--ncs];
        p[c] = p[ncs];
      } else {
        c++;
      }
    }
  }
  for (int c = 0; c < ncs; c++) close(cs[c].fd);
  if (lfd >= 0) close(lfd);
  for (int k = 0; k < 3; k++) sigaction(sigs[k], &old[k], NULL);
  int status = lfd >= 0 ? verdict(rk, nranks, wst) : WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
  free(rk);
  free(cs);
  return status;
}

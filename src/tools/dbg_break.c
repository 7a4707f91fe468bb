/*
** dbg_break.c — breakpoints, their conditions, and displays (see
** dbg_break.h).
*/
#include <ctype.h>
#include <stdio.h>
#include "dbg_break.h"
#include "diag.h"
#include "lex.h"
#include "parse.h"
#include "parser.h"
#include "prims.h"

typedef struct CondCache {
  IrStmt *st, *outer;        /* where the condition was compiled */
  IrFunc *fn;
} CondCache;

typedef struct Bp {
  int no;
  bool temp, enabled;
  int file, line;            /* a line breakpoint (file >= 0) */
  char *func;                /* a function breakpoint */
  char *cond;                /* NULL: unconditional */
  int hits, ignore;
  char *cmds;                /* `commands`: lines to run when hit, each ending "\n" */
  bool silent;               /* those lines include `silent` */
  CondCache *cache;
  int ncache, capcache;
} Bp;

typedef struct Display {
  int no;
  char *expr;
  char *last;                /* what it printed at the last stop */
} Display;

struct Brk {
  Bp **bps;                  /* in the order set */
  int nbp, capbp, bp_next;
  Display **disp;
  int ndisp, capdisp, disp_next;
};

Brk *brk_new(void) { return mem_calloc(sizeof(Brk)); }

static void bp_free(Bp *bp) {
  mem_free(bp->func);
  mem_free(bp->cond);
  mem_free(bp->cmds);
  mem_free(bp->cache);
  mem_free(bp);
}

static void display_free(Display *d) {
  mem_free(d->expr);
  mem_free(d->last);
  mem_free(d);
}

void brk_free(Brk *B) {
  if (!B) return;
  for (int i = 0; i < B->nbp; i++) bp_free(B->bps[i]);
  mem_free(B->bps);
  for (int i = 0; i < B->ndisp; i++) display_free(B->disp[i]);
  mem_free(B->disp);
  mem_free(B);
}

/* ---- setting and listing ------------------------------------------------------------- */

static void put_bp_where(Buf *b, Bp *bp) {
  if (bp->func) buf_printf(b, "function %s", bp->func);
  else buf_printf(b, "%s:%d", diag_file_name(bp->file), bp->line);
}

/* Delete the i-th breakpoint, saying so when `tell`. */
static void bp_delete(Brk *B, int i, bool tell) {
  Bp *bp = B->bps[i];
  if (tell) {
    Buf b = {0};
    buf_printf(&b, "Deleted breakpoint %d at ", bp->no);
    put_bp_where(&b, bp);
    insp_say("%s", buf_cstr(&b));
    buf_free(&b);
  }
  bp_free(bp);
  memmove(B->bps + i, B->bps + i + 1, sizeof(Bp *) * (size_t)(B->nbp - i - 1));
  B->nbp--;
}

/* The index of breakpoint number no, or -1. */
static int bp_index(Brk *B, int no) {
  for (int i = 0; i < B->nbp; i++)
    if (B->bps[i]->no == no) return i;
  return -1;
}

/* Does function fn bind `name` (a parameter or a statement's result)? */
static bool fn_binds(const IrFunc *fn, Str name) {
  for (int k = 0; k < fn->nparams; k++)
    if (str_eq(fn->params[k]->name, name)) return true;
  for (int k = 0; k < fn->nbody; k++)
    for (int j = 0; j < fn->body[k]->nout; j++)
      if (fn->body[k]->out[j] && str_eq(fn->body[k]->out[j]->name, name)) return true;
  return false;
}

/* Does every name expression e reads exist where F stands — bound by
   F's function or those around it (set yet or not), or at the top level,
   or a function or primitive?  Else the first that does not, in missing.
   (A parameter's key and what stands in `[...]` are not names read.) */
static bool names_known(Insp *in, Frame *F, const char *e, char *missing, size_t n) {
  CheckName top[1024];
  int ntop = check_list_names(in->C, top, 1024);
  Arena a = {0};
  Lexer L;
  lex_init(&L, &a, -1, e, strlen(e));
  Tok t, next;
  int depth = 0;
  bool ok = true;
  lex_next(&L, &t);
  for (; ok && t.type; t = next) {
    lex_next(&L, &next);
    if (t.type == TK_LBRACK) depth++;
    else if (t.type == TK_RBRACK && depth) depth--;
    if (t.type != TK_IDENT || depth || next.type == TK_EQ || prim_lookup(t.text) >= 0) continue;
    bool found = false;
    for (Frame *G = F; G && !found; G = G->up) found = fn_binds(G->fn, t.text);
    for (int i = 0; i < ntop && !found; i++) found = str_eq(top[i].name, t.text);
    if (!found) {
      snprintf(missing, n, "%.*s", t.text.n, t.text.p);
      ok = false;
    }
  }
  arena_free(&a);
  return ok;
}

/* Does `cond` parse as an expression?  Complains if not. */
static bool cond_parses(const char *cond) {
  Buf src = {0};
  buf_printf(&src, "__v = %s\n", cond);
  int f = parse_load_text("<condition>", buf_cstr(&src), src.n);
  buf_free(&src);
  Arena a = {0};
  diag_clear();
  AstList *l = parse_file(&a, f);
  bool ok = !diag_count() && l->n == 1;
  Buf err = {0};
  insp_take_diags(&err);
  arena_free(&a);
  if (!ok) insp_complain("bad condition '%s'%s%s", cond, err.n ? ": " : "", buf_cstr(&err));
  buf_free(&err);
  return ok;
}

/* An IR function of the program by name (nested ones included). */
static IrFunc *find_func_in(IrFunc *f, const char *name, int depth) {
  if (!f || depth > 64) return NULL;
  if (f->name && !strcmp(f->name, name) && !ir_is_wrapper(f)) return f;
  for (int i = 0; i < f->nbody; i++) {
    IrStmt *s = f->body[i];
    if (s->k != IS_EQN) continue;
    IrFunc *r = s->callee ? find_func_in(s->callee, name, depth + 1) : NULL;
    for (int k = 0; !r && s->at && k < s->at->nfns; k++) r = find_func_in(s->at->fns[k], name, depth + 1);
    if (r) return r;
  }
  return NULL;
}

/* The file a name designates: exactly, or as a path suffix; newest first. */
static int find_file(const char *name) {
  size_t n = strlen(name);
  for (int f = diag_file_count() - 1; f >= 0; f--)
    if (!strcmp(diag_file_name(f), name)) return f;
  for (int f = diag_file_count() - 1; f >= 0; f--) {
    const char *fn = diag_file_name(f);
    size_t m = strlen(fn);
    if (m > n && fn[m - n - 1] == '/' && !strcmp(fn + m - n, name)) return f;
  }
  return -1;
}

/* Is the line blank or only a comment (no breakpoint there)? */
static bool blank_or_comment(int file, int line) {
  Str s = diag_line_text(file, line);
  int i = 0;
  while (i < s.n && isspace((unsigned char)s.p[i])) i++;
  return i == s.n || s.p[i] == '#';
}

/* Split "LOCATION if COND". */
static char *split_cond(char *arg) {
  for (char *p = arg; *p; p++)
    if ((p == arg || isspace((unsigned char)p[-1])) && !strncmp(p, "if", 2) &&
        (isspace((unsigned char)p[2]) || !p[2])) {
      char *c = p + 2;
      while (p > arg && isspace((unsigned char)p[-1])) p--;
      *p = 0;
      return c;
    }
  return NULL;
}

void brk_list(Brk *B) {
  if (!B->nbp) { insp_say("No breakpoints."); return; }
  insp_say("Num Type         Disp Enb   Where");
  for (int i = 0; i < B->nbp; i++) {
    Bp *bp = B->bps[i];
    Buf b = {0};
    buf_printf(&b, "%-3d breakpoint   %-4s %-5s at ", bp->no, bp->temp ? "del" : "keep", bp->enabled ? "yes" : "no");
    put_bp_where(&b, bp);
    insp_say("%s", buf_cstr(&b));
    if (bp->cond) insp_say("        stop only if %s", bp->cond);
    if (bp->ignore) insp_say("        will ignore next %d crossings", bp->ignore);
    if (bp->hits) insp_say("        breakpoint already hit %d time%s", bp->hits, bp->hits == 1 ? "" : "s");
    buf_free(&b);
  }
}

void brk_set(Brk *B, Insp *in, const char *args, bool temp, int deflt) {
  char *arg = insp_trim(args);
  if (!*arg) {
    brk_list(B);
    mem_free(arg);
    return;
  }
  char *cond = split_cond(arg);
  if (cond) {
    char *c = insp_trim(cond);
    if (!*c) { insp_complain("'if' needs a condition"); mem_free(c); mem_free(arg); return; }
    if (!cond_parses(c)) { mem_free(c); mem_free(arg); return; }
    cond = c;
  }
  Bp bp;
  memset(&bp, 0, sizeof bp);
  bp.file = -1;
  char *colon = strrchr(arg, ':');
  int64_t ln;
  const char *num = arg;
  int file = -1;
  if (colon && colon != arg) {
    *colon = 0;
    file = find_file(arg);
    num = colon + 1;
    if (file < 0) { insp_complain("no file '%s' is loaded", arg); goto fail; }
  }
  if (insp_int(num, &ln)) {
    if (file < 0) file = deflt;
    if (file < 0) { insp_complain("no program file: give FILE:LINE or a function name"); goto fail; }
    int nl = insp_file_lines(file);
    if (ln < 1 || ln > nl) {
      insp_complain("line %lld is out of range for %s (%d lines)", (long long)ln, diag_file_name(file), nl);
      goto fail;
    }
    if (blank_or_comment(file, (int)ln)) { insp_complain("Blank or comment"); goto fail; }
    bp.file = file;
    bp.line = (int)ln;
  } else {
    if (colon) { insp_complain("'%s' is not a line number", num); goto fail; }
    bool ident = isalpha((unsigned char)*arg) || *arg == '_';
    for (const char *p = arg; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '_') ident = false;
    if (!ident) { insp_complain("'%s' is neither a line number nor a function", arg); goto fail; }
    if (!check_has_func(in->C, str_c(arg)) && !find_func_in(check_main(in->C), arg, 0)) {
      insp_complain("no function named '%s'", arg);
      goto fail;
    }
    bp.func = mem_strndup(arg, strlen(arg));
  }
  Bp *nb = mem_alloc(sizeof *nb);
  *nb = bp;
  nb->no = ++B->bp_next;
  nb->temp = temp;
  nb->enabled = true;
  nb->cond = cond;
  VEC_GROW(B->bps, B->capbp, B->nbp + 1);
  B->bps[B->nbp++] = nb;
  Buf b = {0};
  buf_printf(&b, "%s %d at ", temp ? "Breakpoint (temporary)" : "Breakpoint", nb->no);
  put_bp_where(&b, nb);
  insp_say("%s", buf_cstr(&b));
  buf_free(&b);
  mem_free(arg);
  return;
fail:
  mem_free(cond);
  mem_free(arg);
}

/* ---- clear, enable, disable, condition, ignore --------------------------------------- */

/* Breakpoint numbers in args: each is deleted, or switched on or off. */
static void for_bp_numbers(Brk *B, const char *args, int what) {
  char *a = insp_trim(args);
  char *save = NULL;
  for (char *t = strtok_r(a, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
    int64_t no;
    if (!insp_int(t, &no)) { insp_complain("'%s' is not a breakpoint number", t); continue; }
    int i = bp_index(B, (int)no);
    if (i < 0) { insp_complain("no breakpoint number %lld", (long long)no); continue; }
    if (what < 0) {
      bp_delete(B, i, true);
      continue;
    }
    Bp *bp = B->bps[i];
    bp->enabled = what;
    Buf b = {0};
    buf_printf(&b, "%s breakpoint %d at ", what ? "Enabled" : "Disabled", bp->no);
    put_bp_where(&b, bp);
    insp_say("%s", buf_cstr(&b));
    buf_free(&b);
  }
  mem_free(a);
}

void brk_enable(Brk *B, const char *args, bool on) { for_bp_numbers(B, args, on); }

void brk_clear(Brk *B, const char *args, int deflt) {
  char *a = insp_trim(args);
  if (!*a) {
    while (B->nbp) bp_delete(B, 0, true);
    mem_free(a);
    return;
  }
  char *colon = strrchr(a, ':');
  if (colon || !strpbrk(a, " ,")) {
    int64_t no;
    if (!colon && insp_int(a, &no) && bp_index(B, (int)no) >= 0) {
      bp_delete(B, bp_index(B, (int)no), true);
    } else {
      int file = deflt;
      const char *num = a;
      if (colon) {
        *colon = 0;
        file = find_file(a);
        num = colon + 1;
      }
      int64_t ln;
      bool any = false;
      if (file >= 0 && insp_int(num, &ln))
        for (int i = B->nbp - 1; i >= 0; i--)
          if (B->bps[i]->file == file && B->bps[i]->line == ln) { bp_delete(B, i, true); any = true; }
      for (int i = B->nbp - 1; !colon && i >= 0; i--)
        if (B->bps[i]->func && !strcmp(B->bps[i]->func, a)) { bp_delete(B, i, true); any = true; }
      if (!any && insp_int(num, &ln))
        insp_complain("no breakpoint at %s:%lld", file >= 0 ? diag_file_name(file) : a, (long long)ln);
      else if (!any)
        insp_complain("no breakpoint at function %s", a);
    }
  } else {
    for_bp_numbers(B, a, -1);
  }
  mem_free(a);
}

/* `N REST`: the breakpoint numbered N (NULL after a complaint: `usage`
   when N is no number); *a is the trimmed argument text (mem_free it),
   *rest what follows N, trimmed. */
static Bp *bp_and_rest(Brk *B, const char *args, const char *usage, char **a, char **rest) {
  *a = insp_trim(args);
  char *r = *a;
  while (*r && !isspace((unsigned char)*r)) r++;
  if (*r) *r++ = 0;
  while (isspace((unsigned char)*r)) r++;
  *rest = r;
  int64_t no;
  int i;
  if (!insp_int(*a, &no)) {
    insp_complain("%s", usage);
    return NULL;
  }
  if ((i = bp_index(B, (int)no)) < 0) {
    insp_complain("no breakpoint number %lld", (long long)no);
    return NULL;
  }
  return B->bps[i];
}

int brk_number(Brk *B, const char *args) {
  char *a = insp_trim(args);
  int64_t no = B->nbp ? B->bps[B->nbp - 1]->no : 0;
  int r = -1;
  if (*a && !insp_int(a, &no)) insp_complain("usage: commands [N]");
  else if (!*a && !B->nbp) insp_complain("no breakpoints: `commands` with no number belongs to the last one set");
  else if (bp_index(B, (int)no) < 0) insp_complain("no breakpoint number %lld", (long long)no);
  else r = (int)no;
  mem_free(a);
  return r;
}

void brk_set_commands(Brk *B, int no, const char *lines) {
  int i = bp_index(B, no);
  if (i < 0) return;
  Bp *bp = B->bps[i];
  mem_free(bp->cmds);
  bp->cmds = *lines ? mem_strndup(lines, strlen(lines)) : NULL;
  bp->silent = false;
  for (const char *p = lines; *p; p = strchr(p, '\n') + 1)
    if (!strncmp(p, "silent\n", 7)) bp->silent = true;
}

void brk_condition(Brk *B, const char *args) {
  char *a, *rest;
  Bp *bp = bp_and_rest(B, args, "usage: condition N [COND]", &a, &rest);
  if (!bp) {
    mem_free(a);
    return;
  }
  char *c = insp_trim(rest);
  if (!*c) {
    mem_free(c);
    c = NULL;
  } else if (!cond_parses(c)) {
    mem_free(c);
    mem_free(a);
    return;
  }
  mem_free(bp->cond);
  bp->cond = c;
  bp->ncache = 0;
  if (c) insp_say("New condition set for breakpoint %d.", bp->no);
  else insp_say("Breakpoint %d is now unconditional.", bp->no);
  mem_free(a);
}

void brk_ignore(Brk *B, const char *args) {
  char *a, *rest;
  int64_t count = 0;
  Bp *bp = bp_and_rest(B, args, "usage: ignore N COUNT", &a, &rest);
  if (bp && (!insp_int(rest, &count) || count < 0)) {
    insp_complain("usage: ignore N COUNT");
    bp = NULL;
  }
  if (bp) {
    bp->ignore = (int)count;
    if (count)
      insp_say("Will ignore next %lld crossing%s of breakpoint %d.", (long long)count, count == 1 ? "" : "s", bp->no);
    else
      insp_say("Will stop next time breakpoint %d is reached.", bp->no);
  }
  mem_free(a);
}

bool brk_on_line(Brk *B, int file, int line) {
  for (int i = 0; i < B->nbp; i++)
    if (B->bps[i]->enabled && B->bps[i]->file == file && B->bps[i]->line == line) return true;
  return false;
}

/* ---- hitting one --------------------------------------------------------------------- */

static IrStmt *first_stmt(IrFunc *fn) {
  for (int i = 0; i < fn->nbody; i++)
    if (!fn->body[i]->inserted && fn->body[i]->whole.file >= 0) return fn->body[i];
  return NULL;
}

/* Is st the first statement of its line in fn (a line stops once)? */
static bool first_on_line(IrFunc *fn, IrStmt *st) {
  IrStmt *prev = NULL;
  for (int i = 0; i < fn->nbody; i++) {
    IrStmt *s = fn->body[i];
    if (s == st) return !prev || prev->line != st->line || prev->whole.file != st->whole.file;
    if (!s->inserted && s->whole.file >= 0) prev = s;
  }
  return true;
}

/* Is bp at statement st of F (st NULL: F's return)? */
static bool bp_matches(Insp *in, Bp *bp, Frame *F, IrStmt *st) {
  if (!bp->enabled) return false;
  if (!st) {
    /* a return: a line breakpoint on a `return` line of its own */
    int file, line;
    if (bp->func || !insp_frame_pos(in, F, &file, &line) || file != bp->file || line != bp->line) return false;
    for (int i = 0; i < F->fn->nbody; i++)
      if (F->fn->body[i]->line == line && F->fn->body[i]->whole.file == file) return false;
    return true;
  }
  if (bp->func) {
    IrFunc *fn = F->fn;
    return !ir_is_wrapper(fn) && fn->name && !strcmp(fn->name, bp->func) && first_stmt(fn) == st;
  }
  return st->whole.file == bp->file && st->line == bp->line && first_on_line(F->fn, st);
}

/* A condition holds where its value, or any element of it, is nonzero. */
static bool truthy(const Array *a) {
  if (!a) return false;
  for (int64_t i = 0; i < a->size; i++)
    if (arr_getf(a, i) != 0) return true;
  return false;
}

/* Evaluate bp's condition where the run stands: 1 held (on the devices
   marked in held), 0 did not, -1 could not tell (reason in msg). */
static int bp_condition(Insp *in, Bp *bp, Frame *F, IrStmt *st, uint8_t *held, Buf *msg) {
  IrStmt *outer = F->up ? F->up->cur : NULL;
  IrFunc *f = NULL;
  for (int i = 0; i < bp->ncache; i++)
    if (bp->cache[i].st == st && bp->cache[i].outer == outer) f = bp->cache[i].fn;
  if (!f) {
    f = insp_compile(in, F, bp->cond, msg);
    if (!f) return -1;
    if (f->nouts != 1) {
      buf_printf(msg, "a condition must give one value, not %d", f->nouts);
      return -1;
    }
    VEC_GROW(bp->cache, bp->capcache, bp->ncache + 1);
    CondCache c = {st, outer, f};
    bp->cache[bp->ncache++] = c;
  }
  Val *v = NULL;
  if (!insp_run(in, F, f, &v, msg)) return -1;
  const Space *sp = &F->space;
  int any = 0;
  if (!sp->mesh) {
    held[0] = truthy(v->blk[0]);
    any = held[0];
  } else {
    for (int64_t d = 0; d < sp->mesh->ndev; d++) {
      held[d] = 0;
      if (!insp_on_path(sp, d)) continue;
      held[d] = truthy(v->blk[til_block_of(sp->mesh, v->mask, d)]);
      any |= held[d];
    }
  }
  val_unref(v);
  return any;
}

bool brk_hit(Brk *B, Insp *in, Frame *F, IrStmt *st, EvalEvent ev, char *text, size_t ntext, BrkHit *hit) {
  hit->cmds = NULL;
  hit->silent = false;
  for (int i = 0; i < B->nbp; i++) {
    Bp *bp = B->bps[i];
    if (!bp_matches(in, bp, F, ev == EV_LINE ? st : NULL)) continue;
    Buf banner = {0}, msg = {0};
    int64_t n = F->space.mesh ? F->space.mesh->ndev : 1;
    uint8_t *held = mem_calloc((size_t)n);
    int r = bp->cond ? bp_condition(in, bp, F, st, held, &msg) : 1;
    if (r == 0) {
      mem_free(held);
      buf_free(&msg);
      continue;
    }
    if (r > 0 && bp->ignore > 0) {
      bp->ignore--;
      mem_free(held);
      buf_free(&msg);
      continue;
    }
    bp->hits++;
    if (bp->cmds) hit->cmds = mem_strndup(bp->cmds, strlen(bp->cmds));
    hit->silent = bp->silent;
    buf_printf(&banner, "Breakpoint %d", bp->no);
    if (r < 0) buf_printf(&banner, " (its condition failed: %s)", buf_cstr(&msg));
    else if (bp->cond && F->space.mesh) {
      buf_printf(&banner, ", %s held on ", bp->cond);
      vp_devset(&banner, held, n);
    }
    mem_free(held);
    buf_free(&msg);
    if (bp->temp) {
      buf_puts(&banner, "\n");
      buf_printf(&banner, "Deleted breakpoint %d at ", bp->no);
      put_bp_where(&banner, bp);
      bp_delete(B, i, false);
    }
    snprintf(text, ntext, "%s", buf_cstr(&banner));
    buf_free(&banner);
    return true;
  }
  return false;
}

/* ---- displays ------------------------------------------------------------------------ */

void brk_show_displays(Brk *B, Insp *in, bool force) {
  for (int i = 0; i < B->ndisp; i++) {
    Display *d = B->disp[i];
    Buf out = {0}, err = {0}, label = {0};
    buf_printf(&label, "display %s", d->expr);
    if (insp_eval(in, in->sel, d->expr, buf_cstr(&label), insp_focus(in, in->sel), &out, &err)) {
      if (force || !d->last || strcmp(d->last, buf_cstr(&out))) fputs(buf_cstr(&out), stdout);
      mem_free(d->last);
      d->last = NULL;
      d->last = mem_strndup(buf_cstr(&out), out.n);
    } else if (force) {
      insp_complain("display %s: %s", d->expr, buf_cstr(&err));
    }
    buf_free(&out);
    buf_free(&err);
    buf_free(&label);
  }
  fflush(stdout);
}

void brk_display(Brk *B, Insp *in, const char *args) {
  char *e = insp_trim(args);
  if (!*e) {
    if (!B->ndisp) insp_say("No expressions are displayed.");
    else insp_say("Currently displaying:");
    for (int i = 0; i < B->ndisp; i++) insp_say("%d: %s", B->disp[i]->no, B->disp[i]->expr);
    mem_free(e);
    return;
  }
  for (int i = 0; i < B->ndisp; i++)
    if (!strcmp(B->disp[i]->expr, e)) {
      mem_free(B->disp[i]->last);
      B->disp[i]->last = NULL;
      mem_free(e);
      if (in->stopped) brk_show_displays(B, in, false);
      return;
    }
  if (!cond_parses(e)) { mem_free(e); return; }
  char missing[64];
  if (in->stopped && !names_known(in, in->sel, e, missing, sizeof missing)) {
    insp_complain("display %s: '%s' is no name of this function, of those around it or of the top level; "
                  "not displayed", e, missing);
    mem_free(e);
    return;
  }
  Display *d = mem_calloc(sizeof *d);
  d->no = ++B->disp_next;
  d->expr = e;
  VEC_GROW(B->disp, B->capdisp, B->ndisp + 1);
  B->disp[B->ndisp++] = d;
  if (!in->stopped) {
    insp_say("%d: %s (shown at each stop where it changed)", d->no, e);
    return;
  }
  Buf out = {0}, err = {0}, label = {0};
  buf_printf(&label, "display %s", e);
  if (insp_eval(in, in->sel, e, buf_cstr(&label), insp_focus(in, in->sel), &out, &err)) {
    fputs(buf_cstr(&out), stdout);
    d->last = mem_strndup(buf_cstr(&out), out.n);
  } else {                  /* kept all the same: say so, not as a refusal */
    insp_say("%d: %s (not shown now: %s; kept, and shown at each stop where it can be computed)", d->no, e,
             buf_cstr(&err));
  }
  fflush(stdout);
  buf_free(&out);
  buf_free(&err);
  buf_free(&label);
}

void brk_undisplay(Brk *B, const char *args) {
  char *e = insp_trim(args);
  if (!*e) {
    for (int i = 0; i < B->ndisp; i++) display_free(B->disp[i]);
    B->ndisp = 0;
    mem_free(e);
    return;
  }
  int64_t no = -1;
  insp_int(e, &no);
  for (int i = 0; i < B->ndisp; i++)
    if (B->disp[i]->no == no || !strcmp(B->disp[i]->expr, e)) {
      display_free(B->disp[i]);
      memmove(B->disp + i, B->disp + i + 1, sizeof(Display *) * (size_t)(B->ndisp - i - 1));
      B->ndisp--;
      mem_free(e);
      return;
    }
  insp_complain("not displaying %s", e);
  mem_free(e);
}

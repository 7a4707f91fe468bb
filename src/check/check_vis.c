/*
** check_vis.c — the visualize statement: pictures of where blocks are.
**
**   visualize[mesh=m, spec=P(i, j)] x   x, a top-level array, split by the
**                                       spec over the mesh
**   visualize f                         the layouts of the inputs and
**                                       outputs of shard_map f, as its
**                                       last call checked them
**
** The pictures depend only on types, so they are drawn here, at check
** time, and the statement prints them when it runs (as show does).
*/
#include <stdio.h>
#include <string.h>
#include "check_int.h"
#include "diag.h"
#include "err.h"
#include "shardpic.h"
#include "rule.h"
#include "show.h"
#include "tiling.h"

/* The layouts of one statement, for its SVG picture (pic_svg). */
enum { VIS_MAX = 64, VIS_CAPTION = 160 };
typedef struct Vis {
  PicLayout L[VIS_MAX];
  char cap[VIS_MAX][VIS_CAPTION];
  char title[VIS_CAPTION];    /* visualize f: the first line */
  int n;
} Vis;

/* "name, f32[8,16] as P(i, j):" and the picture; the layout kept in V. */
static void put_layout(Buf *b, const char *role, Str name, const Type *t, const Mesh *m, const Spec *spc, bool uni,
                       Vis *V) {
  size_t at = b->n;
  buf_printf(b, "%s%.*s: ", role, name.n, name.p);
  show_type(b, t, NULL);
  buf_puts(b, " as ");
  rule_spec_text(b, spc, m);
  if (V->n < VIS_MAX) {
    PicLayout *L = &V->L[V->n];
    snprintf(V->cap[V->n], VIS_CAPTION, "%.*s", (int)(b->n - at), buf_cstr(b) + at);
    *L = (PicLayout){V->cap[V->n], m, spc, t->rank, t->shape};
    V->n++;
  }
  buf_puts(b, "\n");
  if (!pic_draw(b, m, spc, t->rank, t->shape, pic_width(), uni)) buf_putc(b, '\n');
}

/* The shard_map equation of a decorated function's checked form. */
static IrStmt *vis_smap_eqn(IrFunc *f) {
  for (int i = 0; i < f->nbody; i++)
    if (f->body[i]->k == IS_EQN && f->body[i]->prim == P_SHARD_MAP) return f->body[i];
  return NULL;
}

static bool vis_function(Ctx *cx, AstStmt *s, Buf *out, Vis *V) {
  Binding *bd = check_lookup(cx->scope, B_FUNC, s->name);
  FuncDef *fd = bd ? bd->fn : NULL;
  IrStmt *eq = fd && fd->latest ? vis_smap_eqn(fd->latest) : NULL;
  if (!eq) {
    if (!fd)
      diag_error(s->name_sp, "visualize draws a shard_map function's layouts, or an array with "
                 "visualize[mesh=..., spec=P(...)] %.*s", s->name.n, s->name.p);
    else if (!fd->latest)
      diag_error(s->name_sp, "cannot visualize '%.*s' yet: call it first (its shapes come from a call)", s->name.n,
                 s->name.p);
    else diag_error(s->name_sp, "'%.*s' is not a shard_map: its values are whole arrays", s->name.n, s->name.p);
    return false;
  }
  ShardMap *sm = eq->at->ext;
  IrFunc *body = eq->at->fns[0];
  bool uni = pic_unicode();
  buf_printf(out, "%.*s: shard_map over mesh %.*s\n", s->name.n, s->name.p, sm->mesh->name.n, sm->mesh->name.p);
  snprintf(V->title, sizeof V->title, "%.*s: shard_map over mesh %.*s", s->name.n, s->name.p, sm->mesh->name.n,
           sm->mesh->name.p);
  for (int k = 0; k < sm->nin && k < eq->nin; k++)
    put_layout(out, "input ", body->params[k]->name, &eq->in[k].t, sm->mesh, &sm->in[k], uni, V);
  for (int k = 0; k < sm->nout && k < eq->nout; k++) {
    IrVar *v = body->outs[k].var;
    put_layout(out, "output ", v && v->name.n ? v->name : (Str){"result", 6}, &eq->out[k]->t, sm->mesh, &sm->out[k],
               uni, V);
  }
  return true;
}

static bool vis_array(Ctx *cx, AstStmt *s, Buf *out, Vis *V) {
  Mesh *m = NULL;
  PVal *specv = NULL;
  for (int i = 0; i < s->nparams; i++) {
    AstParam *p = s->params[i];
    PVal *v = pv_unparen(p->v);
    if (str_eqc(p->key, "mesh")) {
      Binding *b = v && v->k == PV_NAME ? check_lookup(cx->scope, B_MESH, v->s) : NULL;
      if (!b) { diag_error(p->v->sp, "mesh= names a mesh defined with `mesh NAME = {...}`"); return false; }
      m = b->mesh;
    } else if (str_eqc(p->key, "spec")) {
      specv = p->v;
    } else {
      diag_error(p->sp, "visualize has the parameters mesh and spec, not '%.*s'", p->key.n, p->key.p);
      return false;
    }
  }
  if (!m || !specv) {
    diag_error(s->sp, "visualize of an array needs mesh= and spec=: visualize[mesh=m, spec=P(i)] %.*s", s->name.n,
               s->name.p);
    return false;
  }
  Spec spc;
  if (!smap_parse_spec(cx, m, specv, &spc)) return false;
  Binding *b = check_lookup(cx->scope, B_VAR, s->name);
  if (!b) {
    diag_error(s->name_sp, check_unbound(cx->C, cx->scope, B_VAR, s->name), s->name.n, s->name.p);
    return false;
  }
  const Type *t = &b->var->t;
  if (t->bad) return false;
  if (t->rank > 2) {
    diag_error(s->name_sp, "a picture shows arrays of rank 1 or 2 (as jax.debug.visualize_array_sharding), and %.*s "
               "has rank %d", s->name.n, s->name.p, t->rank);
    return false;
  }
  if (spc.ndims > t->rank) {
    diag_error(specv->sp, "the spec has %d entries, but %.*s has rank %d", spc.ndims, s->name.n, s->name.p, t->rank);
    return false;
  }
  for (int d = 0; d < spc.ndims; d++) {
    int64_t n = til_blocks_along(m, &spc, d);
    if (t->shape[d] % n) {
      diag_error(specv->sp, "dimension %d of %.*s (size %lld) does not split into %lld blocks", d, s->name.n,
                 s->name.p, (long long)t->shape[d], (long long)n);
      return false;
    }
  }
  Spec *kept = arena_alloc(&cx->C->prog.arena, sizeof(Spec));      /* (the picture reads it later) */
  *kept = spc;
  put_layout(out, "", s->name, t, m, kept, pic_unicode(), V);
  return true;
}

void check_visualize(Ctx *cx, AstStmt *s) {
  if (cx->fn != cx->C->main) {
    diag_error(s->sp, "visualize stands at top level (inside a body, the debugger's `layout x` draws a value)");
    return;
  }
  Buf out = {0}, svg = {0};
  err_defer(buf_release, &out);
  err_defer(buf_release, &svg);
  Vis *V = mem_calloc(sizeof(Vis));
  err_defer(mem_free, V);
  bool ok = s->has_params ? vis_array(cx, s, &out, V) : vis_function(cx, s, &out, V);
  if (ok) {
    IrStmt *st = emit_new_stmt(EM(cx), IS_SHOW, s->sp);
    st->line = s->line;
    st->text = arena_strndup(&cx->C->prog.arena, buf_cstr(&out), out.n);
    if (V->n && pic_svg(&svg, V->title[0] ? V->title : NULL, V->L, V->n)) st->svg = arena_strndup(&cx->C->prog.arena, buf_cstr(&svg), svg.n);
    emit_stmt(EM(cx), st);
  }
  err_undefer(V);
  mem_free(V);
  err_undefer(&svg);
  buf_free(&svg);
  err_undefer(&out);
  buf_free(&out);
}

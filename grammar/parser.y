/*
** parser.y — the grammar of shm (docs/language.md), for Lemon.
**
** Actions are one-line calls into the AST builder (ast.c).  Newlines and
** `;` separate statements; the lexer drops newlines inside (...) and [...]
** so parameter lists and array literals may span lines.  A statement that
** fails to parse becomes `error`, is diagnosed once, and parsing goes on
** at the next separator, so one run reports every syntax error of a file.
*/

%name shmParse
%token_prefix TK_
%token_type {Tok}
%extra_context {Parser *P}
%start_symbol program

%include {
#include <assert.h>
#include "ast.h"
}

%syntax_error { ast_syntax_error(P, TOKEN); }
%stack_overflow { ast_stack_overflow(P); }
/* Deep enough for LEX_MAXNEST levels of the most stack-hungry nesting
   (lambdas in parameters of equations in lambdas); tests/limits checks. */
%stack_size 2000

%token ILLEGAL.
%token NL SEMI IDENT INT FLOAT STRING COMPLEX REPR CALL.
%token LPAREN RPAREN LBRACK RBRACK LBRACE RBRACE PSPEC.
%token COMMA COLON EQ DOT AT.
%token DEF RETURN LAMBDA LET IN IMPORT PRINT SHOW MESH NONE TRUE FALSE LOAD SAVE VISUALIZE.
%token ELLIPSIS LT GT FUTURE.

%type stmt_list {AstList*}
%type stmt {AstStmt*}
%type simple {AstStmt*}
%type binders {AstList*}
%type binder {AstBinder*}
%type type {AstType*}
%type dims {AstList*}
%type axes {AstList*}
%type axis {Tok}
%type dim {Tok}
%type group {AstList*}
%type groups {AstList*}
%type opt_params {AstList*}
%type params {AstList*}
%type param {AstParam*}
%type value {PVal*}
%type values {AstList*}
%type callargs {AstList*}
%type callarg {PVal*}
%type ditems {AstList*}
%type ditem {PVal*}
%type lets {AstList*}
%type jaxpr {AstFunc*}
%type nls {int}
%type args {AstList*}
%type arg {AstArg*}
%type lit {AstLit*}
%type alit {AstALit*}
%type alits {AstList*}
%type items {AstList*}
%type item {AstArg*}
%type rets {AstList*}
%type mesh_axes {AstList*}
%type mesh_axis {AstMeshAxis*}
%type def {AstFunc*}
%type fparams {AstList*}
%type lambda {AstFunc*}
%type lbinders {AstList*}
%type outs {AstList*}
%type last {AstStmt*}
%type named {AstList*}
%type snames {AstList*}

program ::= stmt_list(L).                  { P->stmts = L; }

stmt_list(A) ::= .                         { A = ast_list(P); }
stmt_list(A) ::= stmt_list(L) sep.         { A = L; }
stmt_list(A) ::= stmt_list(L) stmt(S) sep. { A = ast_list_add(P, L, S); }

/* A new statement starts: report its syntax error even if the last
   statement's error was fewer than three tokens ago (Lemon's yyerrcnt). */
sep ::= NL.                                { yypParser->yyerrcnt = -1; }
sep ::= SEMI.                              { yypParser->yyerrcnt = -1; }

/* A block's last statement may run into the closing brace.  Bodies read
   `stmt_list last`, never a reduced block, so that a syntax error inside a
   body recovers there (stmt ::= error) and the def survives. */
last(A) ::= .                              { A = 0; }
last(A) ::= stmt(S).                       { A = S; }

stmt(A) ::= simple(S).                     { A = S; }
stmt(A) ::= error.                         { A = ast_error_stmt(P); }

/* ---- equations ----------------------------------------------------------- */

simple(A) ::= binders(B) EQ IDENT(C) opt_params(Q) args(R).
    { A = ast_eqn(P, B, C, Q, Q != 0, R); }
simple(A) ::= IDENT(C) LBRACK params(Q) RBRACK args(R).
    { A = ast_eqn(P, ast_list(P), C, Q, true, R); }
/* JAX 0.4.2x printed an equation without results with an empty binder
   list: `    = debug_callback[...] a` (until 0.4.23) */
simple(A) ::= EQ IDENT(C) opt_params(Q) args(R).
    { A = ast_eqn(P, ast_list(P), C, Q, Q != 0, R); }
simple(A) ::= IDENT(C) LBRACK RBRACK args(R).
    { A = ast_eqn(P, ast_list(P), C, ast_list(P), true, R); }
simple(A) ::= binders(B) EQ lit(L).        { A = ast_lit_stmt(P, B, ast_alit_leaf(P, L)); }
simple(A) ::= binders(B) EQ LBRACK(O) alits(I) RBRACK(C).
    { A = ast_lit_stmt(P, B, ast_alit_list(P, O, I, C)); }
simple(A) ::= binders(B) EQ LBRACK(O) alits(I) COMMA RBRACK(C).
    { A = ast_lit_stmt(P, B, ast_alit_list(P, O, I, C)); }
simple(A) ::= binders(B) EQ LBRACK(O) RBRACK(C).
    { A = ast_lit_stmt(P, B, ast_alit_list(P, O, ast_list(P), C)); }

binders(A) ::= binder(X).                  { A = ast_list_add(P, ast_list(P), X); }
binders(A) ::= binders(L) binder(X).       { A = ast_list_add(P, L, X); }
binders(A) ::= binders(L) COMMA binder(X). { A = ast_list_add(P, L, X); }

binder(A) ::= IDENT(N).                    { A = ast_binder(P, N, 0); }
binder(A) ::= IDENT(N) COLON type(T).      { A = ast_binder(P, N, T); }

type(A) ::= IDENT(D) LBRACK dims(S) RBRACK(C).       { A = ast_type(P, D, S, C); }
type(A) ::= IDENT(D) LBRACK RBRACK(C).               { A = ast_type(P, D, ast_list(P), C); }
/* JAX's token type, as psend's result prints: Tok (ast_type_bare) */
type(A) ::= IDENT(D).                                { A = ast_type_bare(P, D); }
/* JAX's AbstractFuture{f32[8]{V:i}}: the lexer's FUTURE holds the brace */
type(A) ::= FUTURE(O) type(T) RBRACE(C).             { A = ast_type_future(P, T, O, C); }
type(A) ::= type(T) LBRACE(O) axes(X) RBRACE(C).     { A = ast_type_vma(P, T, X, O, C); }
type(A) ::= type(T) LBRACE(O) RBRACE(C).             { A = ast_type_vma(P, T, ast_list(P), O, C); }
/* JAX's manual axis types: {V:i}, {V:(i,j), U:x, R:y}, {U_max:x} */
type(A) ::= type(T) LBRACE(O) groups(G) RBRACE(C).   { A = ast_type_groups(P, T, G, O, C); }
groups(A) ::= group(G).                    { A = ast_list_add(P, ast_list(P), G); }
groups(A) ::= groups(L) COMMA group(G).    { A = ast_list_add(P, L, G); }
group(A) ::= IDENT(K) COLON axis(X).       { A = ast_dim(P, ast_dim(P, ast_list(P), K), X); }
group(A) ::= IDENT(K) COLON LPAREN axes(X) RPAREN. { A = ast_group(P, K, X); }

/* A dimension, split over mesh axes in an explicit-sharding type:
   8, 8@x, 128@(model,data) */
dims(A) ::= dim(D).                        { A = ast_dim(P, ast_list(P), D); }
dims(A) ::= dims(L) COMMA dim(D).          { A = ast_dim(P, L, D); }
dim(A) ::= INT(D).                         { A = D; }
dim(A) ::= INT(D) AT axis(X).              { A = ast_sdim(P, D, ast_dim(P, ast_list(P), X), false); }
dim(A) ::= INT(D) AT LPAREN axes(X) RPAREN. { A = ast_sdim(P, D, X, true); }

axes(A) ::= axis(X).                       { A = ast_dim(P, ast_list(P), X); }
axes(A) ::= axes(L) COMMA axis(X).         { A = ast_dim(P, L, X); }
axis(A) ::= IDENT(X).                      { A = X; }
axis(A) ::= STRING(X).                     { A = X; }

opt_params(A) ::= .                        { A = 0; }
opt_params(A) ::= LBRACK params(L) RBRACK. { A = L; }
opt_params(A) ::= LBRACK params(L) COMMA RBRACK. { A = L; }
opt_params(A) ::= LBRACK RBRACK.           { A = ast_list(P); }

params(A) ::= param(X).                    { A = ast_list_add(P, ast_list(P), X); }
params(A) ::= params(L) param(X).          { A = ast_list_add(P, L, X); }
params(A) ::= params(L) COMMA param(X).    { A = ast_list_add(P, L, X); }

param(A) ::= IDENT(K) EQ value(V).         { A = ast_param(P, K, V); }
param(A) ::= MESH(K) EQ value(V).          { A = ast_param(P, K, V); }
/* an aval as a parameter's value, printed by str(): precv's
   out_shape=float32[1,2] (a PV_REPR of its text) */
param(A) ::= IDENT(K) EQ IDENT(D) LBRACK dims RBRACK(C). { A = ast_param(P, K, ast_pv_text(P, D, C)); }
param(A) ::= IDENT(K) EQ IDENT(D) LBRACK RBRACK(C). { A = ast_param(P, K, ast_pv_text(P, D, C)); }

value(A) ::= INT(T).                       { A = ast_pv_int(P, T); }
value(A) ::= FLOAT(T).                     { A = ast_pv_float(P, T); }
value(A) ::= STRING(T).                    { A = ast_pv_str(P, T); }
value(A) ::= IDENT(T).                     { A = ast_pv_name(P, T); }
value(A) ::= NONE(T).                      { A = ast_pv_const(P, T, PV_NONE, 0); }
value(A) ::= TRUE(T).                      { A = ast_pv_const(P, T, PV_BOOL, 1); }
value(A) ::= FALSE(T).                     { A = ast_pv_const(P, T, PV_BOOL, 0); }
value(A) ::= LPAREN(O) RPAREN(C).          { A = ast_pv_seq(P, PV_TUPLE, O, ast_list(P), C, true); }
value(A) ::= LPAREN(O) values(L) RPAREN(C).       { A = ast_pv_seq(P, PV_TUPLE, O, L, C, false); }
value(A) ::= LPAREN(O) values(L) COMMA RPAREN(C). { A = ast_pv_seq(P, PV_TUPLE, O, L, C, true); }
value(A) ::= LBRACK(O) RBRACK(C).          { A = ast_pv_seq(P, PV_LIST, O, ast_list(P), C, true); }
value(A) ::= LBRACK(O) values(L) RBRACK(C).       { A = ast_pv_seq(P, PV_LIST, O, L, C, true); }
value(A) ::= LBRACK(O) values(L) COMMA RBRACK(C). { A = ast_pv_seq(P, PV_LIST, O, L, C, true); }
value(A) ::= PSPEC(O) RPAREN(C).           { A = ast_pv_seq(P, PV_SPEC, O, ast_list(P), C, true); }
/* P('x', None), P(unreduced={'x'}), P('x', reduced={'y'}, unreduced_kind=max): the
   keywords are PV_KW items after the dimensions */
value(A) ::= PSPEC(O) callargs(L) RPAREN(C). { A = ast_pv_seq(P, PV_SPEC, O, L, C, true); }
value(A) ::= PSPEC(O) callargs(L) COMMA RPAREN(C). { A = ast_pv_seq(P, PV_SPEC, O, L, C, true); }
value(A) ::= lambda(F).                    { A = ast_pv_func(P, F); }
value(A) ::= COMPLEX(T).                   { A = ast_pv_complex(P, T); }

/* Python reprs, as JAX prints parameters: <function f at 0x...>,
   frozenset({'i'}), Mesh('i': 4, axis_types=(Auto,)), {0: ('i',)} */
value(A) ::= REPR(T).                      { A = ast_pv_str(P, T); A->k = PV_REPR; }
value(A) ::= CALL(O) RPAREN(C).            { A = ast_pv_call(P, O, ast_list(P), C); }
value(A) ::= CALL(O) callargs(L) RPAREN(C). { A = ast_pv_call(P, O, L, C); }
value(A) ::= CALL(O) callargs(L) COMMA RPAREN(C). { A = ast_pv_call(P, O, L, C); }
value(A) ::= LBRACE(O) RBRACE(C).          { A = ast_pv_seq(P, PV_DICT, O, ast_list(P), C, true); }
value(A) ::= LBRACE(O) ditems(L) RBRACE(C). { A = ast_pv_seq(P, PV_DICT, O, L, C, true); }
value(A) ::= LBRACE(O) ditems(L) COMMA RBRACE(C). { A = ast_pv_seq(P, PV_DICT, O, L, C, true); }
callargs(A) ::= callarg(X).                { A = ast_list_add(P, ast_list(P), X); }
callargs(A) ::= callargs(L) COMMA callarg(X). { A = ast_list_add(P, L, X); }
callarg(A) ::= value(X).                   { A = X; }
/* a type inside a repr, as JAX prints avals: ShapedArray(float32[2,3]) */
callarg(A) ::= IDENT(D) LBRACK dims RBRACK(C). { A = ast_pv_text(P, D, C); }
callarg(A) ::= IDENT(D) LBRACK RBRACK(C).  { A = ast_pv_text(P, D, C); }
callarg(A) ::= IDENT(K) EQ value(V).       { A = ast_pv_pair(P, PV_KW, ast_pv_name(P, K), V); }
callarg(A) ::= value(K) COLON value(V).    { A = ast_pv_pair(P, PV_PAIR, K, V); }
ditems(A) ::= ditem(X).                    { A = ast_list_add(P, ast_list(P), X); }
ditems(A) ::= ditems(L) COMMA ditem(X).    { A = ast_list_add(P, L, X); }
ditem(A) ::= value(X).                     { A = X; }
ditem(A) ::= value(K) COLON value(V).      { A = ast_pv_pair(P, PV_PAIR, K, V); }

/* JAX prints tuples of jaxprs with newlines and no commas: both are fine. */
values(A) ::= value(X).                    { A = ast_list_add(P, ast_list(P), X); }
values(A) ::= values(L) COMMA value(X).    { A = ast_list_add(P, L, X); }
values(A) ::= values(L) value(X).          { A = ast_list_add(P, L, X); }

args(A) ::= .                              { A = ast_list(P); }
args(A) ::= args(L) arg(X).                { A = ast_list_add(P, L, X); }
arg(A) ::= IDENT(T).                       { A = ast_arg_name(P, T); }
arg(A) ::= lit(L).                         { A = ast_arg_lit(P, L); }

lit(A) ::= INT(T).                         { A = ast_lit(P, T, LIT_INT, 0); }
lit(A) ::= FLOAT(T).                       { A = ast_lit(P, T, LIT_FLOAT, 0); }
lit(A) ::= TRUE(T).                        { A = ast_lit(P, T, LIT_BOOL, 0); }
lit(A) ::= FALSE(T).                       { A = ast_lit(P, T, LIT_BOOL, 0); }
lit(A) ::= INT(T) COLON type(Y).           { A = ast_lit(P, T, LIT_INT, Y); }
lit(A) ::= FLOAT(T) COLON type(Y).         { A = ast_lit(P, T, LIT_FLOAT, Y); }
lit(A) ::= TRUE(T) COLON type(Y).          { A = ast_lit(P, T, LIT_BOOL, Y); }
lit(A) ::= FALSE(T) COLON type(Y).         { A = ast_lit(P, T, LIT_BOOL, Y); }
lit(A) ::= COMPLEX(T).                     { A = ast_lit(P, T, LIT_COMPLEX, 0); }
lit(A) ::= COMPLEX(T) COLON type(Y).       { A = ast_lit(P, T, LIT_COMPLEX, Y); }

alit(A) ::= lit(L).                        { A = ast_alit_leaf(P, L); }
alit(A) ::= LBRACK(O) alits(I) RBRACK(C).  { A = ast_alit_list(P, O, I, C); }
alit(A) ::= LBRACK(O) alits(I) COMMA RBRACK(C). { A = ast_alit_list(P, O, I, C); }
alit(A) ::= LBRACK(O) RBRACK(C).           { A = ast_alit_list(P, O, ast_list(P), C); }
alits(A) ::= alit(X).                      { A = ast_list_add(P, ast_list(P), X); }
alits(A) ::= alits(L) COMMA alit(X).       { A = ast_list_add(P, L, X); }

/* ---- other statements ------------------------------------------------------ */

simple(A) ::= PRINT(K).                    { A = ast_print(P, K, ast_list(P)); }
simple(A) ::= PRINT(K) items(L).           { A = ast_print(P, K, L); }
simple(A) ::= PRINT(K) LBRACK params(Q) RBRACK items(L). { A = ast_print_params(P, ast_print(P, K, L), Q); }
items(A) ::= item(X).                      { A = ast_list_add(P, ast_list(P), X); }
items(A) ::= items(L) COMMA item(X).       { A = ast_list_add(P, L, X); }
item(A) ::= arg(X).                        { A = X; }
item(A) ::= STRING(T).                     { A = ast_arg_str(P, T); }

simple(A) ::= SHOW(K) IDENT(N).            { A = ast_show(P, K, N); }
/* visualize f (a shard_map's layouts); visualize[mesh=m, spec=P(i)] x */
simple(A) ::= VISUALIZE(K) IDENT(N).       { A = ast_visualize(P, K, 0, N); }
simple(A) ::= VISUALIZE(K) LBRACK params(Q) RBRACK IDENT(N). { A = ast_visualize(P, K, Q, N); }
/* x = load "file.npy"; x = load "batch.npz" "images"; save "out.npy" x */
simple(A) ::= binders(B) EQ LOAD(K) STRING(F). { A = ast_load(P, B, K, F, 0); }
simple(A) ::= binders(B) EQ LOAD(K) STRING(F) STRING(N). { A = ast_load(P, B, K, F, &N); }
simple(A) ::= SAVE(K) STRING(F) arg(X).    { A = ast_save(P, K, F, X); }
simple(A) ::= IMPORT(K) STRING(S).         { A = ast_import(P, K, S); }

simple(A) ::= MESH(K) IDENT(N) EQ LBRACE mesh_axes(L) RBRACE(C).       { A = ast_mesh(P, K, N, L, C); }
simple(A) ::= MESH(K) IDENT(N) EQ LBRACE mesh_axes(L) COMMA RBRACE(C). { A = ast_mesh(P, K, N, L, C); }
mesh_axes(A) ::= mesh_axis(X).             { A = ast_list_add(P, ast_list(P), X); }
mesh_axes(A) ::= mesh_axes(L) COMMA mesh_axis(X). { A = ast_list_add(P, L, X); }
mesh_axis(A) ::= axis(N) COLON INT(S).     { A = ast_mesh_axis(P, N, S); }

simple(A) ::= RETURN(K).                   { A = ast_return(P, K, ast_list(P)); }
simple(A) ::= RETURN(K) rets(L).           { A = ast_return(P, K, L); }
rets(A) ::= arg(X).                        { A = ast_list_add(P, ast_list(P), X); }
rets(A) ::= rets(L) COMMA arg(X).          { A = ast_list_add(P, L, X); }

simple(A) ::= DEF(K) def(F).               { A = ast_def(P, K, F); }
simple(A) ::= AT(K) IDENT(N) opt_params(Q) sep DEF def(F).
    { A = ast_def(P, K, ast_decorate(P, K, N, Q, F)); }

def(A) ::= IDENT(N) LPAREN fparams(L) RPAREN LBRACE stmt_list(B) last(S) RBRACE(C).
    { A = ast_func_readable(P, N, L, S ? ast_list_add(P, B, S) : B, C); }
def(A) ::= IDENT(N) LPAREN fparams(L) COMMA RPAREN LBRACE stmt_list(B) last(S) RBRACE(C).
    { A = ast_func_readable(P, N, L, S ? ast_list_add(P, B, S) : B, C); }
def(A) ::= IDENT(N) EQ jaxpr(F).           { A = ast_func_named(P, N, F); }

/* What jax.make_jaxpr prints: a jaxpr, after the jaxprs it calls more
   than once, each bound by `let name = { lambda ... } in`. */
jaxpr(A) ::= lambda(F).                    { A = F; }
jaxpr(A) ::= lets(L) lambda(F).            { A = ast_lets(P, L, F); }
lets(A) ::= LET IDENT(N) EQ lambda(F) IN nls. { A = ast_list_add(P, ast_list(P), ast_func_named(P, N, F)); }
lets(A) ::= lets(L) LET IDENT(N) EQ lambda(F) IN nls. { A = ast_list_add(P, L, ast_func_named(P, N, F)); }
nls(A) ::= .                               { A = 0; }
nls(A) ::= nls NL.                         { A = 0; }
def(A) ::= IDENT(N) EQ IDENT(T) opt_params(Q) IDENT(G).
    { A = ast_func_transpose(P, N, T, Q, G); }
/* def f = custom_jvp g g_jvp; def f = custom_vjp g g_fwd g_bwd */
def(A) ::= IDENT(N) EQ IDENT(T) opt_params(Q) IDENT(G) IDENT(R1).
    { A = ast_func_rules(P, ast_func_transpose(P, N, T, Q, G), &R1, 0); }
def(A) ::= IDENT(N) EQ IDENT(T) opt_params(Q) IDENT(G) IDENT(R1) IDENT(R2).
    { A = ast_func_rules(P, ast_func_transpose(P, N, T, Q, G), &R1, &R2); }

fparams(A) ::= .                           { A = ast_list(P); }
fparams(A) ::= binder(X).                  { A = ast_list_add(P, ast_list(P), X); }
fparams(A) ::= fparams(L) COMMA binder(X). { A = ast_list_add(P, L, X); }

/* JAX's printed form: { lambda consts ; params . let eqns in outs } */
lambda(A) ::= LBRACE(O) LAMBDA lbinders(K) SEMI lbinders(X) DOT LET stmt_list(B) last(S) IN outs(R) RBRACE(C).
    { A = ast_lambda(P, O, K, X, S ? ast_list_add(P, B, S) : B, R, C); }
/* JAX 0.1's header: constvars ; freevars ; invars. (both bound from scope) */
lambda(A) ::= LBRACE(O) LAMBDA lbinders(K) SEMI lbinders(F) SEMI lbinders(X) DOT LET stmt_list(B) last(S) IN outs(R) RBRACE(C).
    { A = ast_lambda(P, O, ast_list_cat(P, K, F), X, S ? ast_list_add(P, B, S) : B, R, C); }

lbinders(A) ::= .                          { A = ast_list(P); }
lbinders(A) ::= lbinders(L) binder(X).     { A = ast_list_add(P, L, X); }
lbinders(A) ::= lbinders(L) COMMA binder(X). { A = ast_list_add(P, L, X); }

outs(A) ::= arg(X).                        { A = ast_list_add(P, ast_list(P), X); }
outs(A) ::= LPAREN RPAREN.                 { A = ast_list(P); }
outs(A) ::= LPAREN rets(L) RPAREN.         { A = L; }
outs(A) ::= LPAREN rets(L) COMMA RPAREN.   { A = L; }
outs(A) ::= LBRACK RBRACK.                 { A = ast_list(P); }
outs(A) ::= LBRACK rets(L) RBRACK.         { A = L; }

/* ---- pmap and xmap ------------------------------------------------------------
** Dictionaries and `...` as parameter values (xmap's in_axes={0: batch} and
** [batch, ...], axis_resources={batch: x}, an inline mesh={i: 8}); a named
** shape after a type (f32[5]<batch:20>); static parameters of a readable
** def (def f[axis](x) { ... }, called f[axis=i] x).  A dictionary stands on
** one line: inside braces newlines separate statements. */

value(A) ::= ELLIPSIS(T).                  { A = ast_pv_const(P, T, PV_ELLIPSIS, 0); }

type(A) ::= type(T) LT(O) named(X) GT(C).  { A = ast_type_named(P, T, X, O, C); }
type(A) ::= type(T) LT(O) GT(C).           { A = ast_type_named(P, T, ast_list(P), O, C); }
named(A) ::= axis(X) COLON INT(S).         { A = ast_named_dim(P, ast_list(P), X, S); }
named(A) ::= named(L) COMMA axis(X) COLON INT(S). { A = ast_named_dim(P, L, X, S); }

def(A) ::= IDENT(N) LBRACK snames(Q) RBRACK LPAREN fparams(L) RPAREN LBRACE stmt_list(B) last(S) RBRACE(C).
    { A = ast_func_statics(P, ast_func_readable(P, N, L, S ? ast_list_add(P, B, S) : B, C), Q); }
def(A) ::= IDENT(N) LBRACK snames(Q) RBRACK LPAREN fparams(L) COMMA RPAREN LBRACE stmt_list(B) last(S) RBRACE(C).
    { A = ast_func_statics(P, ast_func_readable(P, N, L, S ? ast_list_add(P, B, S) : B, C), Q); }
snames(A) ::= IDENT(X).                    { A = ast_dim(P, ast_list(P), X); }
snames(A) ::= snames(L) COMMA IDENT(X).    { A = ast_dim(P, L, X); }

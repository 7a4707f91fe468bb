/*
** custom.h — differentiating JAX's custom_jvp_call and custom_vjp_call,
** and the rules a program attaches with `def f = custom_jvp g g_jvp`
** (docs/language.md, "Custom derivative rules").
**
** A jaxpr carries a custom rule only as the name of a Python function, so
** a pasted custom_jvp_call of a function JAX itself defines with a rule
** (jax.nn.relu, relu6, jnp.logaddexp and softplus, jax.nn.softmax,
** jnp.sinc, jax.scipy.special.logit, xlogy, ...) is recognised by its
** name (`name=relu`, or the jitted function its call_jaxpr calls in older
** JAX), checked against what the rule expects of the primal function,
** and given JAX's rule, written here as equations.  Any other custom call
** is differentiated through its primal function, with a warning (once per
** equation) naming the function.  A call of a function made by
** `custom_jvp` applies the attached rule.  The JVP the rules make goes
** through linearize and transpose as any other (jvp, grad, vjp,
** value_and_grad all see it); the primal stays a custom call, so a second
** differentiation applies the rule again.
*/
#ifndef SHM_CUSTOM_H
#define SHM_CUSTOM_H

#include "jvp_int.h"

/* Is st a call written as custom_jvp_call or custom_vjp_call (or made by
   `def f = custom_jvp g g_jvp`)? */
bool cust_is_custom(const IrStmt *st);

/* The JVP of custom call st, in J: its results and their tangents bound. */
void cust_jvp(Jv *J, const IrStmt *st);

#endif

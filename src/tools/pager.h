/*
** pager.h — long output at the REPL's prompt, through a pager.
**
** On a terminal the REPL pages what one entry prints: from pager_begin
** on, standard output goes to the terminal as usual until it fills the
** screen (all but one row); the rest is held.  pager_end (before the next
** prompt) hands everything the entry printed to $PAGER (`less` when
** unset; PAGER=cat turns paging off) when something was held, and puts
** standard output back.  Standard error is never held.
*/
#ifndef SHM_PAGER_H
#define SHM_PAGER_H

/* Start collecting standard output; rows: the terminal's height. */
void pager_begin(int rows);
/* Stop; page what was collected when it did not fit.  Harmless when
   pager_begin was not called. */
void pager_end(void);
/* The terminal's height (standard output's), or 0 when it is no terminal. */
int pager_rows(void);

#endif

/*
** suggest.h — "did you mean" for a misspelt name.
**
** A Suggest collects candidates for a word that named nothing and keeps
** the closest: Damerau-Levenshtein distance (an adjacent transposition
** counts one, so `pusm` is one from `psum`), at most 1 for words of up to
** 4 characters, 2 up to 8 and 3 beyond; ties go to the first offered.
*/
#ifndef SHM_SUGGEST_H
#define SHM_SUGGEST_H

#include <stddef.h>
#include "defs.h"

typedef struct Suggest {
  Str word;
  const char *best;
  int bestlen;
  int dist;
} Suggest;

void sug_begin(Suggest *s, Str word);
/* Offer a candidate of len bytes (len < 0: up to its NUL). */
void sug_offer(Suggest *s, const char *cand, int len);
/* Offer each word of a list separated by spaces, commas or '|'. */
void sug_offer_words(Suggest *s, const char *list);
/* " (did you mean 'psum'?)" in out, or "" when nothing was close. */
const char *sug_text(const Suggest *s, char *out, size_t n);
/* Edit distance between two strings (with adjacent transpositions). */
int sug_distance(const char *a, int na, const char *b, int nb);

#endif

/*
** suggest.c — "did you mean" for a misspelt name (see suggest.h).
*/
#include "suggest.h"

#include <stdio.h>
#include <string.h>

enum { SUG_MAXLEN = 64 };

int sug_distance(const char *a, int na, const char *b, int nb) {
  if (na > SUG_MAXLEN || nb > SUG_MAXLEN) return SUG_MAXLEN;
  int d[SUG_MAXLEN + 1][SUG_MAXLEN + 1];
  for (int i = 0; i <= na; i++) d[i][0] = i;
  for (int j = 0; j <= nb; j++) d[0][j] = j;
  for (int i = 1; i <= na; i++)
    for (int j = 1; j <= nb; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[na][nb];
}

void sug_begin(Suggest *s, Str word) {
  s->word = word;
  s->best = NULL;
  s->bestlen = 0;
  s->dist = word.n <= 4 ? 2 : word.n <= 8 ? 3 : 4;     /* one more than allowed */
}

void sug_offer(Suggest *s, const char *cand, int len) {
  if (!cand) return;
  if (len < 0) len = (int)strlen(cand);
  if (!len || (len == s->word.n && !memcmp(cand, s->word.p, (size_t)len))) return;
  int d = sug_distance(s->word.p, s->word.n, cand, len);
  if (d < s->dist && d < len) {
    s->dist = d;
    s->best = cand;
    s->bestlen = len;
  }
}

void sug_offer_words(Suggest *s, const char *list) {
  const char *p = list;
  while (p && *p) {
    while (*p == ' ' || *p == ',' || *p == '|') p++;
    const char *e = p;
    while (*e && *e != ' ' && *e != ',' && *e != '|') e++;
    if (e > p) sug_offer(s, p, (int)(e - p));
    p = e;
  }
}

const char *sug_text(const Suggest *s, char *out, size_t n) {
  if (!s->best) snprintf(out, n, "%s", "");
  else snprintf(out, n, " (did you mean '%.*s'?)", s->bestlen, s->best);
  return out;
}

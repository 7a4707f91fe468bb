/*
** esc.h — user bytes made safe for a terminal.
**
** Whatever a file, a name or a string brings (ESC sequences that clear
** the screen or set the window's title, BEL, NUL, bytes that are not
** UTF-8, the invisible characters that reorder a line) is shown escaped,
** so that what reaches the terminal is only printable text:
**
**   \0 \t \n \r       those control characters
**   \x1b \x7f \xff    any other byte below 0x20, DEL, a byte that is not
**                     part of well-formed UTF-8
**   \u202e \u0085     a well-formed character that is a C1 control, a
**                     bidirectional override or isolate, a line or
**                     paragraph separator, or a byte-order mark
**
** Everything else, printable ASCII and printable UTF-8, passes as it is.
** A backslash is not doubled: escaping is idempotent (escaped text passes
** through again unchanged), so a text escaped where it is laid out (the
** quoted source line under a diagnostic, whose caret must stay under its
** character) is not changed by the streams the program writes through.
**
** esc_stream makes such a stream: the command-line program replaces
** stdout and stderr by two of them, so that no path of it, present or
** future, writes a raw control byte to the terminal.
*/
#ifndef SHM_ESC_H
#define SHM_ESC_H

#include <stdio.h>
#include "buf.h"
#include "common.h"

enum {
  ESC_KEEP_NL = 1,       /* a newline passes (text of several lines) */
  ESC_KEEP_TAB = 2,      /* a tab passes */
};

/* One character of user text as shown: the character at p (n > 0 bytes
   left) takes the returned number of bytes (at least 1); *show (room for
   8 bytes and a NUL) receives what to print, NUL-terminated, and *width
   the columns it takes on a terminal (a tab: 1; 0 for a combining mark,
   2 for a wide East Asian character). */
int esc_char(const char *p, size_t n, unsigned flags, char *show, int *width);
/* Append the escaped text of s[0..n) to b. */
void esc_buf(Buf *b, const char *s, size_t n, unsigned flags);
/* The escaped text of s[0..n) in `out` (size `cap`, NUL-terminated),
   cut at a character with "..." when it does not fit; returns out. */
char *esc_into(char *out, size_t cap, const char *s, size_t n, unsigned flags);
/* Write the escaped text of s[0..n) to f (allocating nothing). */
void esc_fputs(FILE *f, const char *s, size_t n, unsigned flags);
/* Whether s[0..n) shows as it is (esc_buf would copy it unchanged). */
bool esc_plain(const char *s, size_t n, unsigned flags);

/* A stream writing to file descriptor fd, escaping with ESC_KEEP_NL and
   ESC_KEEP_TAB, buffered as `mode` says (_IOFBF, _IOLBF, _IONBF).  A
   character whose bytes arrive in two writes is escaped whole.  NULL
   when the system cannot make one. */
FILE *esc_stream(int fd, int mode);

/* Replace stdout and stderr by escaping streams on their file
   descriptors: stdout buffered as it was (by lines on a terminal, else
   fully), stderr not at all.  Streams that cannot be made stay as they
   are. */
void esc_std_streams(void);
/* Standard output as it was before (the line editor's own output: the
   prompt, what is typed, the cursor's moves). */
FILE *esc_raw_stdout(void);

#endif

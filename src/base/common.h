/*
** common.h — what every module of shmapi includes.
**
** Private to the interpreter: the definitions of defs.h, and the allocator
** (mem.h: mem.c is the one place all memory comes from).
*/
#ifndef SHM_COMMON_H
#define SHM_COMMON_H

#include "defs.h"
#include "mem.h"

#endif

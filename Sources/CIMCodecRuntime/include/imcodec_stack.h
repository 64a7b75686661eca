// How much stack the calling thread has left (for CSeam/DecodeStack.swift, which runs deep
// input's recursive decode steps where the stack has room for them).
#ifndef IMCODEC_STACK_H
#define IMCODEC_STACK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bytes of stack below the caller's frame on the calling thread, or -1 when the platform does
/// not tell (the caller then assumes too little).
long long imcodec_stack_bytes_left(void);

/// How many times more stack the same recursion takes in this build than in a plain one: 4 when
/// it is built with AddressSanitizer or ThreadSanitizer (redzones and instrumentation grow every
/// frame), else 1.
int imcodec_stack_scale(void);

#ifdef __cplusplus
}
#endif

#endif

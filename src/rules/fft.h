/*
** fft.h — lax.fft: discrete Fourier transforms over an array's trailing
** dimensions (fft.c), computed with FFTW.
**
**   fft[fft_type=FFT, fft_lengths=(n1, ..., nk)] x
**
** transforms the last k (1 to 3) dimensions of x, as XLA's Fft does:
**
**   FFT    complex -> complex, forward (e^{-2 pi i jk/n}), unnormalised
**   IFFT   complex -> complex, inverse, divided by n1*...*nk
**   RFFT   real -> complex: the last dimension becomes nk/2 + 1
**   IRFFT  complex (last dimension nk/2 + 1) -> real of the lengths
**
** fft_type is spelt as JAX printed it in any version: FFT, FftType.IFFT,
** jaxlib.xla_extension.FftType.RFFT, or XLA's number (0 to 3).  f32 and
** c64 transform in single precision, f64 and c128 in double.  Results
** are the same bytes on every run: plans are made with FFTW_ESTIMATE on
** buffers of one alignment.
*/
#ifndef SHM_FFT_H
#define SHM_FFT_H

#include "ir.h"
#include "rule.h"

bool fft_rule(RuleCtx *cx, Type *in, int nin, Attrs *at, Type *out);
void fft_kern(const Attrs *at, Array *const *in, int nin, Array **out, const Type *outt);

#endif

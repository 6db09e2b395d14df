// smt-check: do this machine's CPUs share execution units?
//
//   gcc -O2 -mavx512f -pthread scripts/smt-check.c -o /tmp/smt-check
//   /tmp/smt-check 1; /tmp/smt-check 2
//
// Each thread runs 12 independent chains of AVX-512 FMAs (bound by the
// FMA ports, like minfer's batched decode kernels) and prints FMA
// instructions per second of its own CPU time. On separate cores the
// figure with 2 threads is the figure with 1; on two SMT siblings of one
// core (which a VM may not reveal: lscpu can say 1 thread per core) it is
// about half, and no schedule makes a compute-bound step scale 2x. The wall
// time tells whether the two threads really ran at once (wall ≈ CPU);
// when another process is busy they may not, and the run says nothing.
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double tcpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double wall(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static long N=400000000;
static void* run(void*arg){
  double *out=arg;
  __m512 a0=_mm512_set1_ps(1.0f),a1=a0,a2=a0,a3=a0,a4=a0,a5=a0,a6=a0,a7=a0,a8=a0,a9=a0,a10=a0,a11=a0;
  __m512 m=_mm512_set1_ps(0.999999f),c=_mm512_set1_ps(1e-7f);
  double t0=tcpu(),w0=wall();
  for(long i=0;i<N;i++){
    a0=_mm512_fmadd_ps(a0,m,c);a1=_mm512_fmadd_ps(a1,m,c);a2=_mm512_fmadd_ps(a2,m,c);a3=_mm512_fmadd_ps(a3,m,c);
    a4=_mm512_fmadd_ps(a4,m,c);a5=_mm512_fmadd_ps(a5,m,c);a6=_mm512_fmadd_ps(a6,m,c);a7=_mm512_fmadd_ps(a7,m,c);
    a8=_mm512_fmadd_ps(a8,m,c);a9=_mm512_fmadd_ps(a9,m,c);a10=_mm512_fmadd_ps(a10,m,c);a11=_mm512_fmadd_ps(a11,m,c);
  }
  __m512 s=_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0,a1),_mm512_add_ps(a2,a3)),_mm512_add_ps(_mm512_add_ps(a4,a5),_mm512_add_ps(a6,a7)));
  s=_mm512_add_ps(s,_mm512_add_ps(_mm512_add_ps(a8,a9),_mm512_add_ps(a10,a11)));
  out[0]=tcpu()-t0; out[1]=wall()-w0; out[2]=_mm512_reduce_add_ps(s);
  return 0;
}
int main(int argc,char**argv){
  int T=atoi(argv[1]); pthread_t th[8]; double o[8][3];
  for(int i=0;i<T;i++)pthread_create(&th[i],0,run,o[i]);
  for(int i=0;i<T;i++)pthread_join(th[i],0);
  for(int i=0;i<T;i++)printf("thread %d: %.3f cpu-s, %.3f wall-s: %.2f G FMA-insn per cpu-s\n",i,o[i][0],o[i][1],N*12/o[i][0]/1e9);
}

// cuda_check.h — the CUDA tools' error checks (calibrate.cu, sm_margin.cu):
// a failed CUDA or cuBLAS call prints "<tool>: <call> failed: <why>" and
// exits 1. Each tool defines TOOL_NAME before including this.
#pragma once

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s: %s failed: %s\n", TOOL_NAME, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
#define CB(x)                                                                              \
    do {                                                                                   \
        cublasStatus_t s_ = (x);                                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s: %s failed: cuBLAS status %d\n", TOOL_NAME, #x, (int)s_);  \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

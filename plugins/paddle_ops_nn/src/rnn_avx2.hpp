// Declarations shared by rnn_cpu.cpp and rnn_avx2.cpp: the float32 cells of lstm and gru, one
// sequence's H units at a time, compiled for AVX2+FMA. Plain declarations only (as in
// activation_avx2.hpp). Each computes rnn.hpp's formulas for j in [0, H), eight at a time;
// call only on CPUs with AVX2 and FMA. Arguments as rnn_cpu.cpp's portable rows.
#ifndef PADDLE_OPS_NN_RNN_AVX2_HPP_
#define PADDLE_OPS_NN_RNN_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

void lstm_row(int64_t H, float* gates, const float* hproj, const float* b_hh, const float* c_prev,
              float* h, float* c);
void lstm_grad_row(int64_t H, const float* gates, const float* c_prev, const float* c, float* dh,
                   const float* dout, float* dc, float* dgates);
void gru_row(int64_t H, float* gates, const float* hproj, const float* b_hh, const float* h_prev,
             float* h);
void gru_grad_row(int64_t H, const float* gates, const float* h_prev, float* dh, const float* dout,
                  float* dgx, float* dgh);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_RNN_AVX2_HPP_
